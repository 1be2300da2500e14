"""``speed``: change tempo without changing pitch, by WSOLA (waveform-similarity overlap-add).

Output frames of ``FRAME`` samples are laid down every ``FRAME // 2`` samples under a Hann window
(which sums to one at that overlap). Frame k is read from the input near ``k * hop * speed``; the
exact read point is chosen within ``±TOLERANCE`` samples to best continue the previous frame's
natural continuation (maximum cross-correlation), so periods line up and no pitch shift or phasing
is heard. ``TimeStretcher`` works on a stream: ``process`` takes the next input samples and returns
the output that is final so far; ``flush`` returns the rest.
"""

from __future__ import annotations

import numpy as np

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
