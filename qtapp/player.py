"""Gapless playback of streamed speech: one sounddevice output stream fed from a ring buffer.

The stream is opened once (on the first ``write``) and runs for the whole session. Its callback
only copies from the preallocated ring buffer into ``outdata``, writes zeros when the buffer is
short and counts that as an underrun; it allocates no sample memory, never waits on anything but
the ring's tiny counter lock, and emits no Qt signals. A QTimer on the GUI thread polls the
callback's counters and turns them into signals: which segment became audible, buffer level,
underruns and the end of a stream.

A stream starts playing once ``preroll_s`` of it is queued (or at its end, if shorter): where speech is made only
a little faster than it plays (a CPU), the next chunk takes longer to make than the first one lasts, and playing
at once would run dry right after it. ``preroll_for`` gives the wait that avoids that.
"""

from __future__ import annotations

import collections

import numpy as np
from PySide6.QtCore import QObject, QTimer, Signal

from qtapp.ring_buffer import AudioRingBuffer
from qtapp.sound_device import import_sounddevice

POLL_INTERVAL_MS = 30
MAX_PREROLL_S = 1.0  # slower than real time a stream starves anyway; waiting longer would only delay it


def preroll_for(rtf: float, chunk_s: float) -> float:
    """What to queue before a stream plays when speech is made ``rtf`` times faster than real time in chunks of
    ``chunk_s`` seconds: the time one chunk takes to make (``chunk_s / rtf``), so each next chunk arrives before
    the queue runs dry (speech made barely faster than it plays waits a fraction of a second; speech made many
    times faster waits less than its first chunk lasts, so not at all); at most ``MAX_PREROLL_S``, and none while
    the speed is unknown (``rtf`` 0)."""
    if rtf <= 0:
        return 0.0
    return min(chunk_s / rtf, MAX_PREROLL_S)


class _CallbackState:
    """Counters shared with the audio callback (plain attributes: single writer each)."""

    def __init__(self):
        self.paused = False
        self.active = False  # a stream of speech is in progress: shortage means underrun
        self.starving = False  # the last callback ran short
        self.underruns = 0  # number of times playback ran dry
        self.starved_samples = 0  # zeros written while active and short


class Player(QObject):
    """Plays float32 mono chunks as they arrive; see the module docstring for the threading."""

    position_changed = Signal(int)  # segment that just became audible
    underrun = Signal(int)  # total underruns so far
    buffer_level = Signal(float)  # seconds queued and not yet played
    finished = Signal()  # end_of_stream() was called and everything has been played
    error = Signal(str)  # the audio device could not be opened

    def __init__(self, sd_module=None, sample_rate: int = 24000, capacity_s: float = 60.0,
                 device=None, latency: float | str = 0.1, parent: QObject | None = None):
        super().__init__(parent)
        if sd_module is None:
            sd_module = import_sounddevice()
        self._sd = sd_module
        self.sample_rate = sample_rate
        self._device = device
        self._latency = latency
        self._ring = AudioRingBuffer(int(round(capacity_s * sample_rate)))
        self._overflow: collections.deque[np.ndarray] = collections.deque()  # chunks not yet in the ring
        self._overflow_samples = 0
        self._segment_marks: collections.deque[tuple[int, int]] = collections.deque()  # (sample, segment)
        self._state = _CallbackState()
        self.preroll_s = 0.0  # queued seconds a stream waits for before it plays (``preroll_for``)
        self._stream = None
        self._ending = False
        self._last_segment = -1
        self._last_underruns = 0
        self._last_level = -1.0
        self._timer = QTimer(self)
        self._timer.setInterval(POLL_INTERVAL_MS)
        self._timer.timeout.connect(self._poll)
        self._timer.start()

    # ---- state ---------------------------------------------------------------------------------
    @property
    def playing(self) -> bool:
        return self._state.active and not self._state.paused

    @property
    def paused(self) -> bool:
        return self._state.paused

    @property
    def underruns(self) -> int:
        return self._state.underruns

    @property
    def starved_seconds(self) -> float:
        """Total silence inserted because the buffer ran dry while speaking."""
        return self._state.starved_samples / self.sample_rate

    def buffered_seconds(self) -> float:
        """Seconds written but not yet played. Safe to call from any thread (the worker uses it
        for backpressure)."""
        return (self._ring.available + self._overflow_samples) / self.sample_rate

    # ---- control (GUI thread) ------------------------------------------------------------------
    def write(self, samples: np.ndarray, segment: int) -> None:
        """Queue ``samples`` [N] float32 of ``segment``; playback starts once ``preroll_s`` is queued."""
        if not self._ensure_stream():
            return
        samples = np.ascontiguousarray(samples, dtype=np.float32).reshape(-1)
        if len(samples) == 0:
            return
        position = self._ring.written + self._overflow_samples
        if not self._segment_marks or self._segment_marks[-1][1] != segment:
            self._segment_marks.append((position, segment))
        self._overflow.append(samples)
        self._overflow_samples += len(samples)
        self._move_overflow()
        self._ending = False
        if not self._state.active and self.buffered_seconds() >= self.preroll_s:
            self._state.active = True

    def end_of_stream(self) -> None:
        """No more chunks for this stream: play what is queued (if it was still waiting for its preroll, from now),
        then emit ``finished``."""
        self._ending = True
        if self.buffered_seconds() > 0:
            self._state.active = True

    def pause(self) -> None:
        self._state.paused = True

    def resume(self) -> None:
        self._state.paused = False

    def stop(self) -> None:
        """Silence at once and drop everything queued."""
        self._state.active = False
        self._state.starving = False
        self._ending = False
        self._overflow.clear()
        self._overflow_samples = 0
        self._ring.flush()
        self._segment_marks.clear()
        self._last_segment = -1

    def close(self) -> None:
        """Close the device stream (end of the session)."""
        self._timer.stop()
        if self._stream is not None:
            self._stream.stop()
            self._stream.close()
            self._stream = None

    # ---- audio callback (PortAudio thread) -----------------------------------------------------
    def _callback(self, outdata, frames, time_info, status) -> None:
        state = self._state
        channel = outdata[:, 0]
        if state.paused or not state.active:
            outdata.fill(0)
            return
        got = self._ring.read_into(channel)
        if got < frames:
            channel[got:] = 0
            if not self._ending:
                if not state.starving:
                    state.underruns += 1
                state.starving = True
                state.starved_samples += frames - got
        else:
            state.starving = False

    # ---- polling (GUI thread) ------------------------------------------------------------------
    def _poll(self) -> None:
        self._move_overflow()
        played = self._ring.consumed
        segment = self._last_segment
        while self._segment_marks and self._segment_marks[0][0] <= played:
            segment = self._segment_marks.popleft()[1]
        if segment != self._last_segment:
            self._last_segment = segment
            self.position_changed.emit(segment)
        if self._state.underruns != self._last_underruns:
            self._last_underruns = self._state.underruns
            self.underrun.emit(self._last_underruns)
        level = round(self.buffered_seconds(), 2)
        if level != self._last_level:
            self._last_level = level
            self.buffer_level.emit(level)
        if self._ending and self._state.active and self.buffered_seconds() == 0:
            self._ending = False
            self._state.active = False
            self._last_segment = -1
            self.finished.emit()

    def _move_overflow(self) -> None:
        while self._overflow:
            head = self._overflow[0]
            taken = self._ring.write(head)
            self._overflow_samples -= taken
            if taken < len(head):
                self._overflow[0] = head[taken:]
                return
            self._overflow.popleft()

    def _ensure_stream(self) -> bool:
        if self._stream is not None:
            return True
        try:
            self._stream = self._sd.OutputStream(
                samplerate=self.sample_rate, channels=1, dtype="float32", device=self._device,
                latency=self._latency, callback=self._callback)
            self._stream.start()
        except Exception as exc:  # noqa: BLE001 - any PortAudio failure means "no sound device"
            self._stream = None
            self.error.emit(f"Cannot open the audio output device: {exc}")
            return False
        return True
