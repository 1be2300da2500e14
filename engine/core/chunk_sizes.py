"""The sizes of a stream's chunks: the first small, so that audio starts soon; then the stream's size; then, on
the processor, larger chunks while the audio made is far enough ahead of its listener.

Each chunk is decoded in one call, and a call has a fixed cost besides its frames' (the decoder's weights read once
a call): on a CPU a 4-frame chunk costs clearly more a frame than a 16-frame one (docs/benchmarks.md#cpu-chunks).
A larger chunk also keeps its listener waiting longer for its first sample, so a chunk only grows where the audio
already made outlasts, with room to spare, the time the larger chunk takes to make: a listener who started at the
first chunk then never waits for it. A stream that falls behind returns to its own size.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from engine.core.chunks import FRAME_RATE

GROWN_CHUNK_FRAMES = 16  # the largest CPU chunk: past it a frame costs no less (docs/benchmarks.md#cpu-chunks)
HEADROOM = 2.0  # a chunk grows only where the audio ahead lasts this many times its making


class ChunkSizes:
    """``next_size()`` gives each next chunk's size; ``made(frames)`` counts the frames of each chunk made.
    ``largest`` above ``size`` lets chunks double up to it while the stream is ahead (the clock starts at the
    first chunk made, when its listener starts hearing)."""

    def __init__(self, first: int, size: int, largest: int | None = None,
                 clock: Callable[[], float] = time.perf_counter):
        largest = size if largest is None else largest
        if min(first, size) < 1:
            raise ValueError("chunk sizes must be at least one frame")
        if largest < size:
            raise ValueError(f"the largest chunk ({largest} frames) is smaller than the stream's ({size})")
        self.first, self.size, self.largest, self._clock = first, size, largest, clock
        self._current = size
        self._asked = 0
        self._frames = 0  # frames made
        self._started: float | None = None  # when the first chunk was made
        self._begun = clock()

    def next_size(self) -> int:
        self._asked += 1
        if self._asked == 1:
            return self.first
        if self.largest == self.size or not self._frames:
            return self.size
        now = self._clock()
        ahead_s = self._frames / FRAME_RATE - (now - self._started)  # audio made that its listener has not heard
        per_frame_s = (now - self._begun) / self._frames  # a frame's making, prefill and decode included
        grown = min(self.largest, 2 * self._current)
        if grown * per_frame_s * HEADROOM <= ahead_s:
            self._current = grown
        elif self._current * per_frame_s * HEADROOM > ahead_s:
            self._current = self.size
        return self._current

    def made(self, frames: int) -> None:
        if self._started is None:
            self._started = self._clock()
        self._frames += frames
