"""Microphone capture for clone references: one mono ``sounddevice.InputStream`` into a fixed buffer.

``MicRecorder.start()`` opens the input stream; its callback only copies the incoming block into a
buffer preallocated for ``max_seconds`` (no allocation, no locks, no Qt) and advances a counter,
dropping whatever arrives once the buffer is full. The GUI thread polls ``seconds``, ``level()``
and ``full`` and calls ``stop()``, which closes the stream and returns the recording.
The ``sounddevice`` module is injected (``sd_module``) so tests can pass a fake.
"""

from __future__ import annotations

import numpy as np

RECORD_RATE = 48000  # what every capture device offers; the clone pipeline resamples to 24 kHz
MAX_RECORD_S = 60.0
LEVEL_WINDOW_S = 0.05


class MicRecorder:
    def __init__(self, sd_module=None, sample_rate: int = RECORD_RATE, max_seconds: float = MAX_RECORD_S,
                 device=None):
        if sd_module is None:
            from qtapp.sound_device import import_sounddevice

            sd_module = import_sounddevice()
        self._sd = sd_module
        self.sample_rate = sample_rate
        self._device = device
        self._buffer = np.zeros(int(round(max_seconds * sample_rate)), dtype=np.float32)  # [max samples]
        self._written = 0  # samples captured; written only by the callback while recording
        self._stream = None

    @property
    def recording(self) -> bool:
        return self._stream is not None

    @property
    def seconds(self) -> float:
        return self._written / self.sample_rate

    @property
    def full(self) -> bool:
        return self._written >= len(self._buffer)

    def level(self) -> float:
        """Peak magnitude of the latest ``LEVEL_WINDOW_S`` captured (0 before anything arrives)."""
        end = self._written
        recent = self._buffer[max(0, end - int(LEVEL_WINDOW_S * self.sample_rate)):end]
        return float(np.max(np.abs(recent))) if len(recent) else 0.0

    def start(self) -> None:
        """Start a new recording (raises whatever the audio library raises when no input opens)."""
        if self._stream is not None:
            return
        self._written = 0
        stream = self._sd.InputStream(samplerate=self.sample_rate, channels=1, dtype="float32",
                                      device=self._device, callback=self._callback)
        stream.start()
        self._stream = stream

    def stop(self) -> np.ndarray:
        """Close the stream; the recording so far: float32 [N] (a copy)."""
        if self._stream is not None:
            stream, self._stream = self._stream, None
            stream.stop()
            stream.close()
        return self._buffer[:self._written].copy()

    def _callback(self, indata, frames, time_info, status) -> None:
        """PortAudio thread: copy ``indata`` [frames, 1] into the buffer, nothing else."""
        start = self._written
        taken = min(frames, len(self._buffer) - start)
        self._buffer[start:start + taken] = indata[:taken, 0]
        self._written = start + taken
