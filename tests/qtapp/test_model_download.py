"""Downloading with progress: the tqdm hook reports byte bars and stops on cancel; hub_download hands
it to snapshot_download and checks the folder it gets back. The preset speakers come from the model in use."""

from __future__ import annotations

import json
import threading

import huggingface_hub
import pytest

from engine.core.checkpoint import REQUIRED_FILES
from engine.errors import CheckpointError
from engine.synthetic.checkpoint import config_dict
from qtapp.model_download import (
    FALLBACK_SPEAKERS,
    DownloadCancelled,
    hub_download,
    preset_speakers,
    reporting_tqdm,
)


def test_byte_bars_report_progress_and_file_bars_do_not():
    reports = []
    bar_class = reporting_tqdm(lambda done, total: reports.append((done, total)), threading.Event())
    files = bar_class(total=7, desc="Fetching 7 files", name="huggingface_hub.snapshot_download")
    files.update(3)
    data = bar_class(total=0, unit="B", unit_scale=True)
    data.total = 2000  # huggingface_hub grows the total as each file starts
    data.update(500)
    data.update(1500)
    assert reports == [(500, 2000), (2000, 2000)]


def test_only_the_bytes_written_bar_reports(monkeypatch):
    """snapshot_download's two byte bars over one total: bytes written, and Xet's bytes received."""
    reports = []
    bar_class = reporting_tqdm(lambda done, total: reports.append((done, total)), threading.Event())
    received = bar_class(total=1000, unit="B", desc="Downloading bytes")
    written = bar_class(total=1000, unit="B", desc="Reconstructing (incomplete total...)")
    received.update(100)
    written.update(400)
    received.update(50)
    assert reports == [(400, 1000)]


def test_a_set_cancel_event_stops_at_the_next_update():
    cancelled = threading.Event()
    bar = reporting_tqdm(lambda done, total: None, cancelled)(total=10, unit="B")
    bar.update(1)
    cancelled.set()
    with pytest.raises(DownloadCancelled):
        bar.update(1)


def fake_snapshot_download(folder, sizes):
    """Stands in for huggingface_hub.snapshot_download: drives its tqdm_class like the hub client."""

    def download(repo_id, tqdm_class=None, **kwargs):
        bar = tqdm_class(total=sum(sizes), unit="B", name="huggingface_hub.snapshot_download")
        for size in sizes:
            bar.update(size)
        return str(folder)

    return download


def test_hub_download_reports_bytes_and_returns_the_model_folder(monkeypatch, tiny_model_dir):
    folder = tiny_model_dir("custom_voice")
    monkeypatch.setattr(huggingface_hub, "snapshot_download", fake_snapshot_download(folder, [300, 700]))
    reports = []
    path = hub_download("Qwen/Some-Model", lambda done, total: reports.append((done, total)), threading.Event())
    assert path == folder
    assert reports == [(300, 1000), (1000, 1000)]


def test_hub_download_of_an_incomplete_folder_fails(monkeypatch, tmp_path):
    monkeypatch.setattr(huggingface_hub, "snapshot_download", fake_snapshot_download(tmp_path, [10]))
    with pytest.raises(CheckpointError, match="config.json"):
        hub_download("Qwen/Some-Model", lambda done, total: None, threading.Event())


class SpeakingEngine:
    def __init__(self, model_type, speakers):
        self.model_type, self.speakers = model_type, speakers


def model_folder(root, speakers, config_text=None):
    """A folder that passes the completeness check, with a CustomVoice config.json naming ``speakers``."""
    for name in REQUIRED_FILES:
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_bytes(b"")
    config = config_dict("tiny", "custom_voice")
    config["talker_config"]["spk_id"] = {name: 3000 + i for i, name in enumerate(speakers)}
    (root / "config.json").write_bytes((config_text or json.dumps(config)).encode("utf-8", "surrogateescape"))
    return root


def test_preset_speakers_come_from_the_loaded_engine_first(tmp_path):
    folder = model_folder(tmp_path, ["from_folder"])
    assert preset_speakers(SpeakingEngine("custom_voice", ["loaded"]), str(folder)) == ["loaded"]
    assert preset_speakers(SpeakingEngine("base", []), str(folder)) == ["from_folder"]  # a Base model has none
    assert preset_speakers(None, str(folder)) == ["from_folder"]


@pytest.mark.parametrize("checkpoint", ["Nobody/not-downloaded", "/no/such/folder", "", "a/b/c", "../x"])
def test_preset_speakers_fall_back_only_when_no_model_is_known(checkpoint):
    assert preset_speakers(None, checkpoint) == list(FALLBACK_SPEAKERS)


@pytest.mark.parametrize("config_text", ["{", "[]", '{"tts_model_type": "custom_voice"}', '"\\ud800"', "\xff\xfe"])
def test_an_unreadable_config_falls_back(tmp_path, config_text):
    assert preset_speakers(None, str(model_folder(tmp_path, [], config_text))) == list(FALLBACK_SPEAKERS)
