"""Tempo change without pitch change, by WSOLA (waveform-similarity overlap-add), on samples and on chunk streams.

Output frames of ``FRAME`` samples are laid down every ``FRAME // 2`` samples under a Hann window
(which sums to one at that overlap). Frame k is read from the input near ``k * hop * speed``; the
exact read point is chosen within ``±TOLERANCE`` samples to best continue the previous frame's
natural continuation (maximum cross-correlation), so periods line up and no pitch shift or phasing
is heard. ``TimeStretcher`` works on a stream: ``process`` takes the next input samples and returns
the output that is final so far; ``flush`` returns the rest.

``ChunkTempo`` puts a stream of ``engine.core.chunks.Chunk`` through a stretcher: the studio restarts it at
every segment, so each output chunk holds only audio of the segment it is tagged with (highlighting follows
what is heard); the server stretches a whole response as one signal. At speed 1.0 chunks pass untouched.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from engine.core.chunks import Chunk

FRAME = 960  # 40 ms at 24 kHz
HOP = FRAME // 2
TOLERANCE = 240  # ±10 ms search for the best-matching read point
MIN_SPEED, MAX_SPEED = 0.25, 4.0
_WINDOW = (0.5 - 0.5 * np.cos(2 * np.pi * np.arange(FRAME) / FRAME)).astype(np.float32)  # periodic Hann


class TimeStretcher:
    def __init__(self, speed: float):
        if not MIN_SPEED <= speed <= MAX_SPEED:
            raise ValueError(f"speed must be within [{MIN_SPEED}, {MAX_SPEED}], got {speed}")
        self.speed = speed
        self._input = np.zeros(TOLERANCE, dtype=np.float32)  # leading zeros let the first search look back
        self._input_offset = -TOLERANCE  # stream position of ``_input[0]``
        self._output = np.zeros(FRAME, dtype=np.float32)  # overlap-add accumulator from ``_frame * HOP``
        self._frame = 0  # index of the next output frame
        self._previous_read: int | None = None  # stream position the previous frame was read from
        self._received = 0

    def process(self, samples: np.ndarray) -> np.ndarray:
        samples = np.asarray(samples, dtype=np.float32)
        self._input = np.concatenate([self._input, samples])
        self._received += len(samples)
        return self._run(final=False)

    def flush(self) -> np.ndarray:
        """The remaining output; the total output length is round(input length / speed)."""
        self._input = np.concatenate([self._input, np.zeros(FRAME + 2 * TOLERANCE + HOP, dtype=np.float32)])
        out = self._run(final=True)
        wanted = round(self._received / self.speed)
        already = self._frame * HOP - len(out)  # samples handed out before this call
        tail = np.concatenate([out, self._output])
        return tail[:max(0, wanted - already)]

    def _run(self, final: bool) -> np.ndarray:
        done = []
        end = self._input_offset + len(self._input)
        while True:
            nominal = round(self._frame * HOP * self.speed)
            if final and nominal >= self._received:
                break
            if nominal + TOLERANCE + FRAME > end or (
                    self._previous_read is not None and self._previous_read + HOP + FRAME > end):
                break
            if not final and (self._frame + 1) * HOP > self._received / self.speed:
                break  # past the length the input so far will have: a short input ending now would be too long
            start = self._best_start(nominal)
            frame = self._slice(start, FRAME)
            self._output[:FRAME] += _WINDOW * frame
            done.append(self._output[:HOP].copy())
            self._output = np.concatenate([self._output[HOP:], np.zeros(HOP, dtype=np.float32)])
            self._previous_read = start
            self._frame += 1
        self._drop_consumed()
        return np.concatenate(done) if done else np.zeros(0, dtype=np.float32)

    def _best_start(self, nominal: int) -> int:
        """The read point within ``nominal ± TOLERANCE`` most similar to the previous frame's continuation."""
        if self._previous_read is None:
            return max(nominal, 0)
        target = self._slice(self._previous_read + HOP, FRAME)
        low = max(nominal - TOLERANCE, self._input_offset)
        region = self._slice(low, FRAME + nominal + TOLERANCE - low)
        scores = np.correlate(region, target, mode="valid")  # [2 * TOLERANCE + 1] (fewer at the start)
        return low + int(np.argmax(scores))

    def _slice(self, start: int, length: int) -> np.ndarray:
        at = start - self._input_offset
        return self._input[at:at + length]

    def _drop_consumed(self) -> None:
        """Forget input that no later frame can read."""
        nominal = round(self._frame * HOP * self.speed)
        keep_from = min(nominal - TOLERANCE, (self._previous_read or 0) + HOP) - 1
        cut = max(0, keep_from - self._input_offset)
        self._input = self._input[cut:]
        self._input_offset += cut


def stretch(samples: np.ndarray, speed: float) -> np.ndarray:
    """The whole of ``samples`` at ``speed`` (same pitch): float32 [round(N / speed)]."""
    stretcher = TimeStretcher(speed)
    return np.concatenate([stretcher.process(samples), stretcher.flush()])


class ChunkTempo:
    """Chunks in, the same chunks at ``speed`` out (same pitch).

    With ``per_segment`` each segment is stretched on its own and flushed when the next segment's first
    chunk arrives, a final chunk arrives or ``finish`` is called; without it the stream is one signal and
    an output chunk is tagged with the latest input chunk (the stretcher lags its input by about 30 ms).
    """

    def __init__(self, speed: float, per_segment: bool = True):
        if speed != 1.0:
            TimeStretcher(speed)  # refuses a speed out of range now, not at the first chunk
        self.speed = speed
        self.per_segment = per_segment
        self._stretcher: TimeStretcher | None = None
        self._last: Chunk | None = None  # the latest input chunk of the run being stretched

    def feed(self, chunk: Chunk) -> list[Chunk]:
        """The output that is ready after ``chunk``; the last one of the stream carries ``chunk.final``."""
        if self.speed == 1.0:
            return [chunk]
        ready = []
        if self.per_segment and self._last is not None and chunk.segment != self._last.segment:
            ready += self.finish()
        if self._stretcher is None:
            self._stretcher = TimeStretcher(self.speed)
        stretched = self._stretcher.process(chunk.samples)
        self._last = chunk
        if len(stretched):
            ready.append(replace(chunk, samples=stretched, final=False))
        if chunk.final:
            ready += self.finish()
        return ready

    def finish(self) -> list[Chunk]:
        """The rest of the run being stretched (call it when a stream ends without a final chunk)."""
        if self._stretcher is None or self._last is None:
            return []
        tail = self._stretcher.flush()
        last, self._last, self._stretcher = self._last, None, None
        return [replace(last, samples=tail)]
