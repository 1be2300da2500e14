"""GPU advice from torch facts: too old, CPU-only build, no usable GPU, Blackwell on an old CUDA build, ready."""

from __future__ import annotations

import pytest

from qtapp import gpu_check
from qtapp.gpu_check import INSTALL_CUDA, INSTALL_CUDA_128, INSTALL_UPGRADE, TorchFacts, advise, version_tuple


@pytest.mark.parametrize("text, expected", [("2.13.0+cpu", (2, 13, 0)), ("2.5.1", (2, 5, 1)),
                                            ("2.6.0a0+git1234", (2, 6, 0)), ("2.4", (2, 4, 0))])
def test_version_tuple(text, expected):
    assert version_tuple(text) == expected


@pytest.mark.parametrize("version, cuda", [("2.4.1+cu121", "12.1"), ("2.5.0", None), ("1.13.1", "11.7")])
def test_torch_older_than_2_5_1_cannot_run_and_says_how_to_upgrade(version, cuda):
    advice = advise(TorchFacts(version, cuda, cuda is not None, "RTX 4090", (8, 9)))
    assert not advice.runnable
    assert advice.command == INSTALL_UPGRADE
    assert version in advice.summary and "2.5.1" in advice.summary


def test_exactly_2_5_1_is_enough():
    advice = advise(TorchFacts("2.5.1+cu124", "12.4", True, "RTX 4090", (8, 9), ("sm_89", "sm_90")))
    assert advice.runnable and advice.device == "cuda"


def test_cpu_only_build_runs_on_cpu_and_names_both_cuda_builds():
    advice = advise(TorchFacts("2.13.0+cpu", None, False))
    assert advice.runnable and advice.device == "cpu"
    assert advice.command == INSTALL_CUDA
    assert INSTALL_CUDA_128 in advice.details and "RTX 50" in advice.details
    assert INSTALL_CUDA in advice.text() and advice.summary in advice.text()


def test_cuda_build_without_a_gpu_points_at_the_driver():
    advice = advise(TorchFacts("2.7.0+cu126", "12.6", False))
    assert advice.runnable and advice.device == "cpu"
    assert "nvidia-smi" in advice.details and "12.6" in advice.details
    assert advice.command is None


@pytest.mark.parametrize("capability, arch", [((12, 0), ("sm_80", "sm_90")), ((10, 0), ())])
def test_blackwell_card_on_a_pre_12_8_build_needs_cu128(capability, arch):
    advice = advise(TorchFacts("2.6.0+cu124", "12.4", True, "NVIDIA GeForce RTX 5090", capability, arch))
    assert advice.device == "cpu" and advice.runnable
    assert advice.command == INSTALL_CUDA_128
    assert "RTX 5090" in advice.summary


@pytest.mark.parametrize("facts", [
    TorchFacts("2.7.0+cu128", "12.8", True, "NVIDIA GeForce RTX 5090", (12, 0), ("sm_90", "sm_100", "sm_120")),
    TorchFacts("2.7.0+cu126", "12.6", True, "Custom build", (12, 0), ("sm_120",)),  # built with sm_120 anyway
    TorchFacts("2.5.1+cu121", "12.1", True, "NVIDIA H100", (9, 0), ("sm_90",)),
])
def test_gpu_ready(facts):
    advice = advise(facts)
    assert advice.device == "cuda" and advice.runnable and advice.command is None
    assert facts.gpu_name in advice.summary and facts.cuda_build in advice.summary


def test_torch_facts_reads_monkeypatched_torch(monkeypatch):
    import torch

    monkeypatch.setattr(torch, "__version__", "2.4.0+cu118")
    monkeypatch.setattr(torch.version, "cuda", "11.8")
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "get_device_name", lambda index=0: "Tesla T4")
    monkeypatch.setattr(torch.cuda, "get_device_capability", lambda index=0: (7, 5))
    monkeypatch.setattr(torch.cuda, "get_arch_list", lambda: ["sm_75"])
    facts = gpu_check.torch_facts()
    assert facts == TorchFacts("2.4.0+cu118", "11.8", True, "Tesla T4", (7, 5), ("sm_75",))
    assert not gpu_check.gpu_advice().runnable


def test_torch_facts_of_this_cpu_machine():
    import torch

    facts = gpu_check.torch_facts()
    assert facts.version == torch.__version__
    assert facts.cuda_available == torch.cuda.is_available()


def test_settings_dialog_shows_the_advice(qtbot, monkeypatch):
    from qtapp.dialogs.settings_dialog import SettingsDialog
    from qtapp.settings import Settings

    monkeypatch.setattr(gpu_check, "torch_facts", lambda: TorchFacts("2.13.0+cpu", None, False))
    dialog = SettingsDialog(Settings.load())
    qtbot.addWidget(dialog)
    assert "no CUDA support" in dialog.gpu_label.text() and INSTALL_CUDA in dialog.gpu_label.text()
