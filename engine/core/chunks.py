"""What the engine hands back: whole utterances (``Audio``) and streamed pieces (``Chunk``)."""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

SAMPLE_RATE = 24000
SAMPLES_PER_FRAME = 1920  # 12.5 frames per second
FRAME_RATE = SAMPLE_RATE / SAMPLES_PER_FRAME


@dataclass(frozen=True, slots=True, eq=False)
class Audio:
    samples: np.ndarray  # float32 [N]
    sample_rate: int
    codes: np.ndarray  # int64 [T, 16]

    @property
    def duration(self) -> float:
        return len(self.samples) / self.sample_rate


@dataclass(frozen=True, slots=True, eq=False)
class Chunk:
    samples: np.ndarray  # float32 [n_frames * 1920]
    sample_rate: int
    first_frame: int  # index of this chunk's first frame within its segment
    n_frames: int
    segment: int  # index of the segment in engine.core.text.segments.split_segments order (or of the segments given)
    span: tuple[int, int]  # character offsets of that segment in the input text
    elapsed: float  # seconds since the call started, when this chunk was ready
    final: bool  # last chunk of the whole call
    # why the segment was cut before the model ended it (engine.core.frames.guard), on its last chunk; None: not cut
    warning: str | None = None

    @property
    def duration(self) -> float:
        return len(self.samples) / self.sample_rate


def closing_chunk(last: Chunk) -> Chunk:
    """An empty final chunk after ``last``: closes a stream whose end was known only after ``last`` went out."""
    return replace(last, samples=last.samples[:0], first_frame=last.first_frame + last.n_frames, n_frames=0,
                   final=True, warning=None)
