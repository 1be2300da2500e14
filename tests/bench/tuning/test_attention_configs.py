"""The sweep's knobs are the attention modules' launch settings, and every value of its grid still computes the
block (in Triton's interpreter on the CPU): what it times is what the frame runs."""

from __future__ import annotations

import pytest
import torch

pytest.importorskip("triton", reason="Triton is not installed (the test extra brings it)")

from bench.tuning import attention_configs  # noqa: E402
from engine.core.gpu_kernels import attention  # noqa: E402
from tests.engine.kernels.attention_steps import check_block  # noqa: E402


def test_the_knobs_are_the_modules_settings():
    for module, names in attention_configs.KNOBS.values():
        assert all(isinstance(getattr(module, name), int) for name in names)
    grids = {"talker": attention_configs.TALKER_CONFIGS, "predictor": attention_configs.PREDICTOR_CONFIGS}
    for block, (_, names) in attention_configs.KNOBS.items():
        assert {len(config) for config in grids[block]} == {len(names)}


def test_other_splits_and_blocks_compute_the_layers_attention(monkeypatch):
    splits = sorted({config[0] for config in attention_configs.TALKER_CONFIGS})
    blocks = sorted({config[1] for config in attention_configs.TALKER_CONFIGS})
    for n_splits, block in zip(splits, blocks * len(splits), strict=False):  # every value of each at least once
        monkeypatch.setattr(attention, "SPLITS", n_splits)
        monkeypatch.setattr(attention, "BLOCK_S", block)
        check_block(attention.filled_slots_attention_block, 2, torch.float32, [0, 31, 32, 200, 300], slots=320, seed=6)
