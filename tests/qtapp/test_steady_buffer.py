"""A steady buffer at CPU speeds: speech made 1.2 times faster than it plays, read from a long document by the
tiny model through the worker into the player, whose device consumes it in real time, never runs dry after
its first chunk (the player waits for a chunk's worth first, ``qtapp.player.preroll_for``); without that wait
it runs dry right after the first chunk."""

from __future__ import annotations

import threading
import time

import numpy as np
import pytest
from PySide6.QtCore import QObject, Slot

from engine import Engine, Voice
from engine.core.chunks import FRAME_RATE, SAMPLE_RATE
from qtapp.player import Player, preroll_for
from qtapp.worker import start_worker, stop_worker

RATE = 1.2  # seconds of speech made per second
CHUNK_FRAMES = 4
FRAMES = 3  # per segment: the tiny random model never ends by itself
# twelve paragraphs: twelve segments, one engine call each way the worker plans them
DOCUMENT = "\n\n".join(f"Paragraph {n} of a long document." for n in range(12))


class Throttled:
    """The tiny engine, paced to ``RATE``: each chunk is handed over when a CPU that fast would have made it."""

    def __init__(self, engine: Engine):
        self._engine = engine

    def __getattr__(self, name):
        return getattr(self._engine, name)

    def stream(self, *args, **kwargs):
        start, made = time.perf_counter(), 0.0
        for chunk in self._engine.stream(*args, **kwargs):
            made += chunk.duration
            delay = start + made / RATE - time.perf_counter()
            if delay > 0:
                time.sleep(delay)
            yield chunk


class Feed(QObject):
    """Writes each chunk into the player on the GUI thread, as the reading controller does."""

    def __init__(self, player: Player):
        super().__init__()
        self.player = player

    @Slot(int, object)
    def on_chunk(self, job: int, chunk) -> None:
        self.player.write(chunk.samples, chunk.segment)

    @Slot(int)
    def on_finished(self, job: int) -> None:
        """After the job's last chunk (queued signals from one thread arrive in order), as the reader does."""
        self.player.end_of_stream()


class RealTimeDevice:
    """The sound device's side: the player's callback pulled 20 ms at a time, at the wall clock's pace."""

    def __init__(self, fake_sd):
        self.fake_sd, self.stopped = fake_sd, threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        block = SAMPLE_RATE // 50
        out = np.zeros((block, 1), np.float32)
        next_at = time.perf_counter()
        while not self.stopped.is_set():
            if self.fake_sd.streams:
                self.fake_sd.streams[-1].callback(out, block, None, None)
            next_at += block / SAMPLE_RATE
            time.sleep(max(0.0, next_at - time.perf_counter()))


@pytest.mark.parametrize("preroll", [True, False])
def test_reading_at_1_2x_real_time_never_runs_dry_after_the_first_chunk(preroll, qtbot, fake_sd, tiny_model_dir):
    engine = Throttled(Engine.from_pretrained(tiny_model_dir("custom_voice"), device="cpu"))
    player = Player(sd_module=fake_sd, capacity_s=30.0)
    if preroll:
        player.preroll_s = preroll_for(RATE, CHUNK_FRAMES / FRAME_RATE)
    thread, worker = start_worker(lambda: engine, buffered_seconds=player.buffered_seconds, max_frames=FRAMES,
                                  chunk_frames=CHUNK_FRAMES, any_kind=True)
    device = RealTimeDevice(fake_sd)
    try:
        with qtbot.waitSignal(worker.model_loaded, timeout=60_000):
            pass
        engine.warmup()
        feed = Feed(player)
        worker.chunk_ready.connect(feed.on_chunk)  # a QObject's slots: delivered on this (the GUI) thread
        worker.job_finished.connect(feed.on_finished)
        device.thread.start()
        with qtbot.waitSignal(player.finished, timeout=60_000):
            worker.request_speak(1, DOCUMENT, Voice.preset(engine.speakers[0]))
    finally:
        device.stopped.set()
        assert stop_worker(thread, worker, timeout_ms=60_000)
    if preroll:
        assert player.underruns == 0, f"ran dry {player.underruns} times ({player.starved_seconds:.2f} s)"
    else:  # the control: the second chunk takes 0.27 s to make, the first lasts 0.08 s
        assert player.underruns >= 1
