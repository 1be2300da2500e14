"""``orator --self-test``: prove that an installed studio works, without a display or a real model.

It builds a tiny synthetic checkpoint in a temporary folder (``engine.synthetic``), loads it on the
studio's speech worker thread, and speaks one sentence through the studio's real ``Player`` into the
default audio output (a PulseAudio null sink on CI) or, where no output device exists, into a null
output that consumes audio in real time (``qtapp.null_audio``); before that it opens a tiny file of
every document format (``engine.documents.selfcheck``). It exits 0 once every sample has been played,
else prints why and exits 1. Used by CI on the PyInstaller bundle.
"""

from __future__ import annotations

import os
import sys
import tempfile
import time

from PySide6.QtCore import QEventLoop, QObject, QTimer, Slot

SELF_TEST_TEXT = "Hello from Orator."
MAX_FRAMES = 6  # random weights never stop on their own: 6 frames are 0.48 s of audio
# a hang detector, not a speed test: the CPU steps speak uncompiled while another process compiles them
# (engine.core.cpu.numba_cache.cold_start), except where nothing can be cached, where they compile in this process
TIMEOUT_S = 1800.0


class SelfTestError(Exception):
    """The self-test could not speak its sentence; the message says which step failed."""


def pick_audio_output():
    """(sounddevice-like module, description): the default output device if one exists, else null."""
    from qtapp.null_audio import NullSoundDevice
    from qtapp.sound_device import import_sounddevice

    try:
        sounddevice = import_sounddevice()
        device = sounddevice.query_devices(kind="output")
    except Exception as exc:  # noqa: BLE001 - no PortAudio, no device: both mean "play into nothing"
        return NullSoundDevice(), f"a null output (no audio device: {exc})"
    return sounddevice, f"the audio device “{device['name']}”"


def speak_once(model_dir, sd_module, timeout_s: float = TIMEOUT_S, precision: str | None = None) -> float:
    """Load ``model_dir`` (at ``precision``, default the plan's) on the worker thread and play one sentence; the
    seconds of audio played."""
    from qtapp.player import Player
    from qtapp.worker import start_worker, stop_worker

    player = Player(sd_module=sd_module)
    loop = QEventLoop()
    listener = _Listener(player, loop)
    thread, worker = start_worker(listener.load(model_dir, precision), buffered_seconds=player.buffered_seconds,
                                  max_frames=MAX_FRAMES)
    listener.listen(worker)
    QTimer.singleShot(int(timeout_s * 1000), lambda: listener.fail(f"no result within {timeout_s:.0f} s"))
    try:
        loop.exec()
    finally:
        stop_worker(thread, worker, timeout_ms=30000)
        player.close()
    if listener.errors:
        raise SelfTestError(listener.errors[0])
    return listener.written / player.sample_rate


class _Listener(QObject):
    """The worker's and the player's signals, received on the GUI thread: slots of an object that lives there
    run there (a plain function connected to the worker's signals would run on the worker's thread)."""

    def __init__(self, player, loop):
        super().__init__()
        self.player, self.loop = player, loop
        self.errors: list[str] = []
        self.written = 0
        self.engines = []

    def load(self, model_dir, precision: str | None = None):
        def load():
            from engine import Engine

            self.engines.append(Engine.from_pretrained(str(model_dir), device="cpu", precision=precision))
            return self.engines[-1]
        return load

    def listen(self, worker) -> None:
        self.worker = worker
        worker.error.connect(self.on_worker_error)
        worker.model_loaded.connect(self.on_model_loaded)
        worker.chunk_ready.connect(self.on_chunk)
        worker.job_finished.connect(self.on_job_finished)
        self.player.error.connect(self.on_player_error)
        self.player.finished.connect(self.loop.quit)

    def fail(self, message: str) -> None:
        self.errors.append(message)
        self.loop.quit()

    @Slot(str)
    def on_worker_error(self, text: str) -> None:
        self.fail(f"speech worker: {text}")

    @Slot(str)
    def on_player_error(self, text: str) -> None:
        self.fail(f"player: {text}")

    @Slot(str)
    def on_model_loaded(self, info: str) -> None:
        from engine import Voice

        self.worker.request_speak(1, SELF_TEST_TEXT, Voice.preset(self.engines[0].speakers[0]))

    @Slot(int, object)
    def on_chunk(self, job: int, chunk) -> None:
        self.written += len(chunk.samples)
        self.player.write(chunk.samples, chunk.segment)

    @Slot(int)
    def on_job_finished(self, job: int) -> None:
        if self.written == 0:
            self.fail("the engine produced no audio")
        else:
            self.player.end_of_stream()


def self_test(precision: str | None = None) -> str:
    """Run every step (the model at ``precision``, default the plan's); a one-line report of what was played and
    the plan it was spoken on, or ``SelfTestError``."""
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    from engine.documents import DocumentError
    from engine.documents.selfcheck import check_readers
    from engine.synthetic.checkpoint import build_checkpoint
    from qtapp.app import create_application

    started = time.perf_counter()
    create_application()
    sd_module, output = pick_audio_output()
    with tempfile.TemporaryDirectory(prefix="orator-self-test-") as folder:
        try:
            formats = check_readers(folder)
        except DocumentError as exc:
            raise SelfTestError(f"documents: {exc}") from exc
        try:
            model_dir = build_checkpoint(folder, "tiny", "custom_voice", seed=0)
        except Exception as exc:  # noqa: BLE001 - report which step broke
            raise SelfTestError(f"could not build the synthetic checkpoint: {type(exc).__name__}: {exc}") from exc
        seconds = speak_once(model_dir, sd_module, precision=precision)
    return (f"Orator self-test passed: read {', '.join(formats)}; spoke “{SELF_TEST_TEXT}” ({seconds:.2f} s of "
            f"audio) through {output} in {time.perf_counter() - started:.1f} s.")


def run_self_test(precision: str | None = None) -> int:
    """The ``--self-test`` flag: 0 on success, 1 with the reason on stderr."""
    try:
        report = self_test(precision)
    except SelfTestError as exc:
        print(f"Orator self-test FAILED: {exc}", file=sys.stderr)
        return 1
    print(report)
    return 0
