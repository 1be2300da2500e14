"""Loading the studio's models as a user meets it: downloads with progress and Stop, failures said in plain
words (the status bar never stays at "Loading…"), a model the settings no longer name stops reading, and a
voice only ever goes to a model of its kind."""

from __future__ import annotations

import importlib
import importlib.util
import shutil
import threading

import httpx
import huggingface_hub
import pytest
from huggingface_hub import constants
from huggingface_hub.errors import LocalEntryNotFoundError
from hypothesis import given
from hypothesis import settings as hypothesis_settings
from hypothesis import strategies as st

from engine import Voice
from qtapp.main_window import MainWindow
from qtapp.model_download import describe_download_error
from qtapp.settings import ModelSpec, Settings
from qtapp.worker import describe_engine, start_worker, stop_worker
from tests.qtapp.fake_engine import FakeEngine
from tests.qtapp.test_first_run import place_in_cache

HUB_ID = "Qwen/Qwen3-TTS-12Hz-0.6B-CustomVoice"
MB = 1024 * 1024
# the HTTP client the hub client uses: httpx, or its fork httpx2 in newer huggingface_hub releases
HUB_HTTP_CLIENTS = [importlib.import_module(name) for name in ("httpx2",) if importlib.util.find_spec(name)]


@pytest.fixture
def offline_hub(tmp_path, monkeypatch):
    """An empty Hugging Face cache and the hub client in offline mode, as on a machine without a network."""
    cache = tmp_path / "hub"
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(cache))
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    return cache


@pytest.fixture
def window_on(qtbot, fake_sd):
    """``window_on(checkpoint)``: a window that loads ``checkpoint`` for preset voices itself (no injected
    engine), on the processor."""
    made = []

    def make(checkpoint: str) -> MainWindow:
        settings = Settings.load()
        settings.checkpoints["preset"] = checkpoint
        settings.device, settings.cpu_path = "cpu", "exact"
        window = MainWindow(settings, sd_module=fake_sd)
        qtbot.addWidget(window)
        window.show()
        made.append(window)
        return window

    yield make
    for window in made:
        assert window.close()


def corrupt_copy(source, target):
    shutil.copytree(source, target)
    (target / "model.safetensors").write_bytes(b"\x10\x00\x00\x00\x00\x00\x00\x00{not json" + b"x" * 64)
    return target


@pytest.mark.parametrize("case", ["missing folder", "corrupt weights", "offline hub id"])
def test_a_failed_load_is_shown_and_loading_is_not_left_on_screen(qtbot, window_on, offline_hub, tmp_path,
                                                                 tiny_model_dir, case):
    checkpoint, said = {
        "missing folder": (str(tmp_path / "nowhere"), "does not exist"),
        "corrupt weights": (str(corrupt_copy(tiny_model_dir("custom_voice"), tmp_path / "broken")),
                            "not a readable safetensors file"),
        "offline hub id": (HUB_ID, "cannot reach Hugging Face"),
    }[case]
    window = window_on(checkpoint)
    qtbot.waitUntil(lambda: "the load failed" in window.model_label.text(), timeout=10_000)
    assert "Loading" not in window.model_label.text()
    assert window.model_label.text() == "No model for preset voices loaded: the load failed"
    message = window.banner.label.text()
    assert said in message and said in window.model_label.toolTip()
    for raw in ("Traceback", "LocalEntryNotFoundError", "HF_HUB_OFFLINE"):
        assert raw not in message
    window.editor.setPlainText("Nothing can read this.")
    window.read_aloud.play()
    qtbot.waitUntil(lambda: "No CustomVoice model for preset voices is loaded" in window.banner.label.text(),
                    timeout=5000)


def test_a_failed_load_beside_a_loaded_model_says_which_one_reads(qtbot, window_on, spec_engines, monkeypatch):
    from types import SimpleNamespace

    from qtapp.model_status import ModelStatus

    threads = []
    shown = ModelStatus.failed

    def recorded(status, *args):
        threads.append(threading.get_ident())
        shown(status, *args)

    monkeypatch.setattr(ModelStatus, "failed", recorded)

    spec_engines["/preset"] = FakeEngine("custom_voice")
    spec_engines["/clone"] = FileNotFoundError("no such folder: /clone")
    window = window_on("/preset")
    qtbot.waitUntil(lambda: window.model_label.text().startswith("Model:"), timeout=5000)
    window.settings.checkpoints["clone"] = "/clone"
    window.voices.ensure_model(SimpleNamespace(kind="clone"))
    assert window.model_label.text() == "Loading the model for clone voices (/clone)…"
    qtbot.waitUntil(lambda: "the load failed" in window.model_label.text(), timeout=5000)
    loaded = describe_engine(spec_engines["/preset"])  # "CustomVoice 0.6B on cpu (exact float32, N threads)"
    assert window.model_label.text() == f"Model: {loaded} · none for clone voices (the load failed)"
    assert "/clone" in window.model_label.toolTip()
    assert threads == [threading.get_ident()]  # on the GUI thread, not the worker's


class SlowDownloader:
    """Reports 1000 MB in steps until stopped; the cancel event ends it as the hub client's tqdm hook does."""

    def __init__(self):
        self.started = threading.Event()

    def __call__(self, repo_id, report, cancelled):
        from qtapp.model_download import DownloadCancelled

        self.started.set()
        for step in range(1, 10_000):
            if cancelled.wait(0.005):
                raise DownloadCancelled("stopped")
            report(step * MB // 10, 1000 * MB)
        raise AssertionError("never stopped")


def test_a_download_shows_its_progress_and_stop_ends_it(qtbot, window_on, offline_hub, monkeypatch):
    downloader = SlowDownloader()
    monkeypatch.setattr("qtapp.worker.hub_download", downloader)
    window = window_on(HUB_ID)
    status = window.model_status
    qtbot.waitUntil(lambda: " of 1,000 MB" in window.model_label.text(), timeout=10_000)
    assert window.model_label.text().startswith(f"Downloading {HUB_ID}: ")
    assert status.progress.isVisible() and status.stop_button.isVisible()
    qtbot.waitUntil(lambda: status.progress.value() > 0, timeout=5000)
    status.stop_button.click()
    qtbot.waitUntil(lambda: "the load failed" in window.model_label.text(), timeout=5000)
    assert not status.progress.isVisible() and not status.stop_button.isVisible()
    assert "was stopped" in window.banner.label.text()


def test_a_downloaded_model_is_loaded(qtbot, offline_hub, tiny_model_dir, engine_options):
    engine_options(compile=False)
    reports = []

    def downloader(repo_id, report, cancelled):
        report(500, 1000)
        report(1000, 1000)
        return place_in_cache(offline_hub, repo_id, tiny_model_dir("custom_voice"))

    thread, worker = start_worker(ModelSpec("preset", HUB_ID, "cpu", "float32", "exact"), downloader=downloader)
    worker.download_progress.connect(lambda *args: reports.append(args))
    try:
        with qtbot.waitSignal(worker.model_loaded, timeout=30_000) as loaded:
            pass
        assert loaded.args[0].startswith("CustomVoice 0.6B on cpu")
        assert reports[0] == (HUB_ID, 0, 0) and reports[-1] == (HUB_ID, 1000, 1000)  # Stop shows from the start
        assert worker.engine_for(Voice.preset("vivian")) is not None
    finally:
        assert stop_worker(thread, worker)


def test_the_model_corner_shows_a_download_from_its_start_to_its_end(qtbot):
    from qtapp.model_status import ModelStatus

    status = ModelStatus()
    qtbot.addWidget(status)
    status.show()
    status.download_progress(HUB_ID, 0, 0)
    assert status.label.text() == f"Downloading {HUB_ID}…" and status.stop_button.isVisible()
    assert status.progress.maximum() == 0  # busy: the size is not known yet
    status.download_progress(HUB_ID, 300 * MB, 0)
    assert status.label.text() == f"Downloading {HUB_ID}: 300 MB"
    status.download_progress(HUB_ID, 1200 * MB, 2400 * MB)
    assert status.label.text() == f"Downloading {HUB_ID}: 1,200 of 2,400 MB" and status.progress.value() == 50
    status.status(f"Loading {HUB_ID}…")
    assert not status.stop_button.isVisible() and not status.progress.isVisible()
    status.loaded("CustomVoice 0.6B on cpu (float32)")
    assert status.label.text() == "Model: CustomVoice 0.6B on cpu (float32)"


def test_a_cached_model_loads_without_asking_the_hub(qtbot, offline_hub, tiny_model_dir, engine_options,
                                                    monkeypatch):
    """Offline with the model in the cache, nothing may wait on the network: every hub call is cache-only."""
    engine_options(compile=False)
    snapshot = place_in_cache(offline_hub, HUB_ID, tiny_model_dir("custom_voice"))
    calls = []
    real = huggingface_hub.snapshot_download

    def watched(repo_id, **kwargs):
        calls.append(kwargs.get("local_files_only", False))
        return real(repo_id, **kwargs)

    monkeypatch.setattr(huggingface_hub, "snapshot_download", watched)
    thread, worker = start_worker(ModelSpec("preset", HUB_ID, "cpu", "float32", "exact"),
                                  downloader=lambda *args: pytest.fail("a cached model was downloaded"))
    try:
        with qtbot.waitSignal(worker.model_loaded, timeout=30_000):
            pass
        assert calls and all(calls)
        assert worker.engine_for(Voice.preset("vivian")) is not None
    finally:
        assert stop_worker(thread, worker)
    assert snapshot.exists()


@pytest.fixture
def spec_engines(monkeypatch):
    """``ModelSpec.load_engine`` looks its checkpoint up in this dict (a FakeEngine; an exception is raised)."""
    engines: dict = {}

    def load(spec):
        found = engines[spec.checkpoint]
        if isinstance(found, Exception):
            raise found
        return found

    monkeypatch.setattr(ModelSpec, "load_engine", load)
    return engines


def spec(kind: str, checkpoint: str) -> ModelSpec:
    return ModelSpec(kind, checkpoint, "cpu", "float32")


def started_worker(qtbot, first: ModelSpec):
    thread, worker = start_worker(first)
    errors = []
    worker.error.connect(errors.append)
    qtbot.waitUntil(lambda: bool(worker._engines or errors), timeout=5000)
    return thread, worker, errors


def test_a_model_the_settings_no_longer_name_does_not_read_on(qtbot, spec_engines, tmp_path):
    old = FakeEngine("custom_voice")
    spec_engines["/old"] = old
    spec_engines["/new"] = FileNotFoundError("the new model's folder is gone")
    thread, worker, errors = started_worker(qtbot, spec("preset", "/old"))
    try:
        assert worker.engine_for(Voice.preset("vivian")) is old
        with qtbot.waitSignal(worker.model_failed, timeout=5000) as failed:
            worker.request_load_model(spec("preset", "/new"))
        assert failed.args[0] == "preset"
        assert worker.engine_for(Voice.preset("vivian")) is None
        with qtbot.waitSignal(worker.job_finished, timeout=5000):
            worker.request_speak(1, "Still there?", Voice.preset("vivian"))
        assert not old.stream_threads
        assert "No CustomVoice model for preset voices is loaded" in errors[-1] and "gone" in errors[-1]
    finally:
        assert stop_worker(thread, worker)


def test_a_preset_voice_is_never_sent_to_a_base_model(qtbot, spec_engines):
    base = FakeEngine("base")
    spec_engines["/base"] = base
    thread, worker, errors = started_worker(qtbot, spec("clone", "/base"))
    try:
        with qtbot.waitSignal(worker.job_finished, timeout=5000):
            worker.request_speak(1, "A preset voice reads this.", Voice.preset("vivian"))
        assert not base.stream_threads
        assert errors == ["No model is loaded yet for preset voices (they need a CustomVoice model): wait for it "
                          "to load, or pick one in Settings ▸ Models & settings."]
    finally:
        assert stop_worker(thread, worker)


def test_changing_the_settings_stops_reading_and_says_which_model_loads(qtbot, open_window):
    window = open_window(loaded=True)
    window.editor.setPlainText("One. Two. Three. Four. Five. Six.")
    window.read_aloud.play()
    assert window.reader.state != "idle"
    window.voices.reload_models()
    assert window.reader.state == "idle"
    assert window.statusBar().currentMessage() == "Reading stopped: the settings name another model."
    qtbot.waitUntil(lambda: window.model_label.text().startswith("Model:"), timeout=5000)


@pytest.mark.parametrize("error, said", [
    (LocalEntryNotFoundError("Cannot find an appropriate cached snapshot folder"),
     "cannot reach Hugging Face"),
    (httpx.ConnectError("[Errno -2] Name or service not known"), "cannot reach Hugging Face"),
    (TimeoutError("timed out"), "cannot reach Hugging Face"),
    (OSError(28, "No space left on device"), "the disk is full"),
] + [(module.ConnectError("[Errno -2] Name or service not known"), "cannot reach Hugging Face")
     for module in HUB_HTTP_CLIENTS])
def test_download_errors_are_worded_for_people(error, said):
    message = describe_download_error(HUB_ID, error)
    assert said in message and HUB_ID in message and "\n" not in message


@hypothesis_settings(max_examples=60, deadline=None)
@given(text=st.text(max_size=3000), kind=st.sampled_from([Exception, RuntimeError, ValueError, KeyError]))
def test_any_other_download_error_becomes_one_short_line(text, kind):
    message = describe_download_error(HUB_ID, kind(text))
    assert message.startswith(f"Could not download {HUB_ID}") and "\n" not in message and "\r" not in message
    assert len(message) <= 400


def test_the_download_banner_says_its_sentence_once_and_goes_when_a_local_folder_loads(
        qtbot, window_on, offline_hub, tiny_model_dir, monkeypatch):
    """Offline, the default hub model cannot come: the banner says so once, even after Play quotes the failure;
    once the user picks a model folder they have (Help ▸ Download models…) and it loads, the banner goes."""
    from qtapp.actions import _welcome_dialog
    from qtapp.dialogs.first_run import FirstRunDialog

    window = window_on(HUB_ID)
    qtbot.waitUntil(lambda: "the load failed" in window.model_label.text(), timeout=10_000)
    window.editor.setPlainText("Nothing can read this yet.")
    window.read_aloud.play()
    qtbot.waitUntil(lambda: "No CustomVoice model for preset voices" in window.banner.label.text(), timeout=5000)
    said = window.banner.label.text()
    assert said.count("cannot reach Hugging Face") == 1, said
    assert window.banner.isVisible()

    def pick_folder(dialog):
        assert dialog.use_local_folder(str(tiny_model_dir("custom_voice")))
        return 1

    monkeypatch.setattr(FirstRunDialog, "exec", pick_folder)
    _welcome_dialog(window)
    qtbot.waitUntil(lambda: window.model_label.text().startswith("Model:"), timeout=30_000)
    assert not window.banner.isVisible() and window.banner.messages == []
    assert window.model_label.toolTip() == ""  # the failure is not offered as the loaded model's tooltip
    window.banner.show_message("Another problem.")  # a later message stands alone: the old one is not back
    assert window.banner.label.text() == "Another problem."
