"""The first-run dialog with a fake downloader that fills a temporary Hugging Face cache from a tiny
synthetic checkpoint: progress, settings written, cancel, failure, and a local folder instead."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest
from huggingface_hub import constants

from qtapp.dialogs.first_run import FirstRunDialog, needs_first_run
from qtapp.gpu_check import GpuAdvice
from qtapp.model_download import RECOMMENDED_MODELS, local_model_dir, validate_model_folder
from qtapp.settings import DEFAULT_CHECKPOINTS, Settings

PRESET_REPO = DEFAULT_CHECKPOINTS["preset"]
ADVICE = GpuAdvice("cpu", True, "PyTorch 9.9 has no CUDA support: Orator runs on the CPU.", "Install it.", "pip x")


@pytest.fixture
def hub_cache(tmp_path, monkeypatch):
    cache = tmp_path / "hub"
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(cache))
    return cache


def place_in_cache(cache: Path, repo_id: str, source: Path) -> Path:
    """Lay ``source`` out as the cached snapshot of ``repo_id`` (what snapshot_download leaves behind)."""
    storage = cache / ("models--" + repo_id.replace("/", "--"))
    snapshot = storage / "snapshots" / "0123456789abcdef"
    snapshot.parent.mkdir(parents=True)
    os.symlink(source, snapshot)
    (storage / "refs").mkdir()
    (storage / "refs" / "main").write_text("0123456789abcdef")
    return snapshot


class FakeDownloader:
    """Reports a few progress steps, then places the tiny checkpoint in the cache as ``repo_id``."""

    def __init__(self, cache: Path, source: Path, steps: int = 4, step_s: float = 0.01, fail: str = ""):
        self.cache, self.source, self.steps, self.step_s, self.fail = cache, source, steps, step_s, fail
        self.requested: list[str] = []
        self.reports: list[tuple[int, int]] = []
        self.started = threading.Event()

    def __call__(self, repo_id, report, cancelled):
        from qtapp.model_download import DownloadCancelled

        self.requested.append(repo_id)
        self.started.set()
        total = 1000 * 1024 * 1024
        for step in range(1, self.steps + 1):
            if cancelled.wait(self.step_s):
                raise DownloadCancelled("cancelled")
            report(step * total // self.steps, total)
            self.reports.append((step * total // self.steps, total))
        if self.fail:
            raise OSError(self.fail)
        return place_in_cache(self.cache, repo_id, self.source)


@pytest.fixture
def settings():
    return Settings.load()


def test_needs_first_run_until_the_reading_model_is_here(hub_cache, settings, tiny_model_dir, tmp_path):
    assert needs_first_run(settings)
    place_in_cache(hub_cache, PRESET_REPO, tiny_model_dir("custom_voice"))
    assert local_model_dir(PRESET_REPO) is not None
    assert not needs_first_run(settings)
    settings.checkpoints["preset"] = str(tmp_path / "nowhere")
    assert needs_first_run(settings)
    settings.checkpoints["preset"] = str(tiny_model_dir("custom_voice"))
    assert not needs_first_run(settings)


def test_dialog_explains_the_models_and_shows_gpu_advice(qtbot, hub_cache, settings):
    dialog = FirstRunDialog(settings, downloader=FakeDownloader(hub_cache, Path()), advice=ADVICE)
    qtbot.addWidget(dialog)
    boxes = dialog.model_boxes
    assert [c.repo_id for c in RECOMMENDED_MODELS] == list(boxes)
    assert "0.6B-CustomVoice" in RECOMMENDED_MODELS[0].repo_id and RECOMMENDED_MODELS[0].kind == "preset"
    assert {c.kind for c in RECOMMENDED_MODELS} == {"preset", "design", "clone"}
    assert [b.isChecked() for b in boxes.values()] == [True, False, False]
    assert ADVICE.summary in dialog.gpu_label.text() and "pip x" in dialog.gpu_label.text()
    assert dialog.start_button.text() == "Skip for now"


def test_download_shows_progress_and_writes_the_settings(qtbot, hub_cache, settings, tiny_model_dir):
    fake = FakeDownloader(hub_cache, tiny_model_dir("custom_voice"))
    dialog = FirstRunDialog(settings, downloader=fake, advice=ADVICE)
    qtbot.addWidget(dialog)
    design_repo = RECOMMENDED_MODELS[1].repo_id
    dialog.model_boxes[design_repo].setChecked(True)
    values = []
    dialog.progress.valueChanged.connect(values.append)
    dialog.start_downloads()
    assert dialog.downloading and dialog.download_button.text() == "Stop"
    qtbot.waitUntil(lambda: not dialog.downloading, timeout=10000)

    assert fake.requested == [PRESET_REPO, design_repo]
    assert values[:4] == [25, 50, 75, 100]
    assert "ready" in dialog.status.text()
    assert dialog.start_button.text() == "Start Orator"
    assert not dialog.model_boxes[PRESET_REPO].isEnabled()
    assert "downloaded" in dialog.model_boxes[PRESET_REPO].text()
    stored = Settings.load()
    assert stored.checkpoints["preset"] == PRESET_REPO and stored.checkpoints["design"] == design_repo
    assert not needs_first_run(stored)


def test_stop_cancels_the_running_download_and_the_rest(qtbot, hub_cache, settings, tiny_model_dir):
    # a download that would take hours unless stopped: each step waits a minute for the cancel
    fake = FakeDownloader(hub_cache, tiny_model_dir("custom_voice"), steps=1000, step_s=60)
    dialog = FirstRunDialog(settings, downloader=fake, advice=ADVICE)
    qtbot.addWidget(dialog)
    dialog.model_boxes[RECOMMENDED_MODELS[2].repo_id].setChecked(True)
    dialog.start_downloads()
    assert fake.started.wait(30)
    dialog.download_button.click()
    qtbot.waitUntil(lambda: not dialog.downloading, timeout=30_000)
    assert fake.reports == []  # stopped at its first step, not finished
    assert fake.requested == [PRESET_REPO]
    assert dialog.status.text() == "Download stopped."
    assert needs_first_run(settings) and dialog.download_button.text() == "Download selected"


def test_failed_download_is_explained_and_can_be_retried(qtbot, hub_cache, settings, tiny_model_dir):
    fake = FakeDownloader(hub_cache, tiny_model_dir("custom_voice"), fail="network is unreachable")
    dialog = FirstRunDialog(settings, downloader=fake, advice=ADVICE)
    qtbot.addWidget(dialog)
    dialog.start_downloads()
    qtbot.waitUntil(lambda: not dialog.downloading, timeout=5000)
    assert "network is unreachable" in dialog.status.text() and PRESET_REPO in dialog.status.text()
    assert dialog.download_button.isEnabled() and dialog.folder_button.isEnabled()
    fake.fail = ""
    dialog.start_downloads()
    qtbot.waitUntil(lambda: not dialog.downloading, timeout=5000)
    assert not needs_first_run(Settings.load())


@pytest.mark.parametrize("model_type, kind", [("custom_voice", "preset"), ("base", "clone")])
def test_local_folder_is_validated_and_used_for_its_kind(qtbot, hub_cache, settings, tiny_model_dir,
                                                         model_type, kind):
    folder = tiny_model_dir(model_type)
    assert validate_model_folder(folder) == (Path(folder), kind)
    dialog = FirstRunDialog(settings, downloader=FakeDownloader(hub_cache, folder), advice=ADVICE)
    qtbot.addWidget(dialog)
    assert dialog.use_local_folder(str(folder))
    assert Settings.load().checkpoints[kind] == str(folder)
    assert str(folder) in dialog.status.text()
    assert (dialog.start_button.text() == "Start Orator") == (kind == "preset")


def test_incomplete_folder_is_refused_with_the_reason(qtbot, hub_cache, settings, tmp_path):
    (tmp_path / "half").mkdir()
    (tmp_path / "half" / "config.json").write_text("{}")
    dialog = FirstRunDialog(settings, downloader=FakeDownloader(hub_cache, Path()), advice=ADVICE)
    qtbot.addWidget(dialog)
    assert not dialog.use_local_folder(str(tmp_path / "half"))
    assert "model.safetensors" in dialog.status.text()
    assert not dialog.use_local_folder(str(tmp_path / "absent"))
    assert "not a folder" in dialog.status.text()
    assert Settings.load().checkpoints == DEFAULT_CHECKPOINTS


def test_the_offered_models_are_the_default_models():
    from qtapp.settings import DEFAULT_CHECKPOINTS

    assert {c.kind: c.repo_id for c in RECOMMENDED_MODELS} == DEFAULT_CHECKPOINTS
    readme = (Path(__file__).parents[2] / "docs" / "studio.md").read_text(encoding="utf-8")
    first_run = readme.split("## First run", 1)[1].split("\n## ", 1)[0]
    assert [line.split("`")[1] for line in first_run.splitlines() if line.startswith("| `")] == \
        [c.repo_id for c in RECOMMENDED_MODELS]


def overlapping_or_squashed(dialog) -> list[str]:
    """The visible labels and check boxes that overlap another, or are shorter than their wrapped text needs."""
    from PySide6.QtCore import QRect
    from PySide6.QtWidgets import QCheckBox, QLabel

    widgets = [w for w in dialog.findChildren(QLabel) + dialog.findChildren(QCheckBox) if w.isVisible()]
    where = {w: QRect(w.mapTo(dialog, w.rect().topLeft()), w.size()) for w in widgets}
    found = []
    for i, a in enumerate(widgets):
        if isinstance(a, QLabel) and a.wordWrap() and a.height() < a.heightForWidth(a.width()):
            found.append(f"squashed: {a.text()[:40]}")
        found += [f"overlap: {a.text()[:40]} / {b.text()[:40]}" for b in widgets[i + 1:]
                  if where[a].intersects(where[b])]
    return found


def test_an_offline_download_is_explained_and_the_layout_holds(qtbot, hub_cache, settings, monkeypatch):
    from qtapp.model_download import hub_download

    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)  # a machine without a network, with the real client
    dialog = FirstRunDialog(settings, downloader=hub_download, advice=ADVICE)
    qtbot.addWidget(dialog)
    dialog.show()
    assert overlapping_or_squashed(dialog) == []
    dialog.start_downloads()
    qtbot.waitUntil(lambda: not dialog.downloading, timeout=10_000)
    qtbot.wait(50)  # the layout settles
    assert "cannot reach Hugging Face" in dialog.status.text() and PRESET_REPO in dialog.status.text()
    assert "Error" not in dialog.status.text() and "HF_HUB_OFFLINE" not in dialog.status.text()
    assert overlapping_or_squashed(dialog) == []


def test_help_menu_reopens_the_welcome_dialog_and_loads_its_choice(qtbot, open_window, tiny_model_dir,
                                                                   monkeypatch):
    window = open_window(loaded=True)
    shown = []

    def exec_(dialog):  # the user picks a model folder they have, then closes the dialog
        shown.append(dialog.windowTitle())
        assert dialog.start_button.text() == "Close"
        assert dialog.use_local_folder(str(tiny_model_dir("custom_voice")))
        return 1

    monkeypatch.setattr(FirstRunDialog, "exec", exec_)
    requests = []
    monkeypatch.setattr(window.worker, "request_load_model", requests.append)
    help_menu = next(a.menu() for a in window.menuBar().actions() if a.text() == "&Help")
    item = next(a for a in help_menu.actions() if a.text() == "&Download models…")
    item.trigger()
    assert shown == ["Welcome to Orator"]
    assert window.settings.checkpoints["preset"] == str(tiny_model_dir("custom_voice"))
    assert requests, "the model picked in the dialog is loaded"
    from qtapp.actions import help_html

    assert "Help ▸ Download models…" in help_html(window)  # F1 tells where the dialog is
