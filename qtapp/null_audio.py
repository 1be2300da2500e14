"""A stand-in for the ``sounddevice`` module that plays into nothing, at the pace of a real device.

``NullSoundDevice().OutputStream(samplerate=..., callback=...)`` returns a stream whose thread calls
the player's callback every ``blocksize`` frames in real time and discards what it is given. The
self-test uses it where no audio device exists, so the whole playback path (ring buffer, callback,
position and end-of-stream signals) still runs.
"""

from __future__ import annotations

import threading
import time

import numpy as np

DEFAULT_BLOCK = 480  # 20 ms at 24 kHz


class NullOutputStream:
    """Pulls audio from ``callback`` on its own thread, like a PortAudio output stream."""

    def __init__(self, samplerate: float, channels: int = 1, dtype: str = "float32", callback=None,
                 blocksize: int | None = None, **_ignored):
        self.samplerate = float(samplerate)
        self.channels = channels
        self.dtype = dtype
        self.blocksize = blocksize or DEFAULT_BLOCK
        self._callback = callback
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.frames_played = 0

    def start(self) -> None:
        self._stop.clear()
        self._thread = threading.Thread(target=self._run, name="null-audio", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=2)
            self._thread = None

    def close(self) -> None:
        self.stop()

    def _run(self) -> None:
        out = np.zeros((self.blocksize, self.channels), dtype=self.dtype)  # [frames, channels]
        period = self.blocksize / self.samplerate
        next_tick = time.perf_counter()
        while not self._stop.is_set():
            self._callback(out, self.blocksize, None, None)
            self.frames_played += self.blocksize
            next_tick += period
            self._stop.wait(max(0.0, next_tick - time.perf_counter()))


class NullSoundDevice:
    """Module-like object with the one ``sounddevice`` name the player uses: ``OutputStream``."""

    def __init__(self):
        self.streams: list[NullOutputStream] = []

    def OutputStream(self, **kwargs) -> NullOutputStream:  # noqa: N802 - mirrors sounddevice's class name
        stream = NullOutputStream(**kwargs)
        self.streams.append(stream)
        return stream
