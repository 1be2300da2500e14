"""What one call will speak, decided before anything is generated: ``Plan``.

A plan holds the voice ready for prompts (a clone encoded), the text's segments
(``engine.core.text.segments.split_segments``, each with what it is spoken as once pronunciation rules were applied:
``Segment.speech``), the sampling settings and the call's seed. Segment ``i`` is sampled with seed ``seed + i`` and gets
at most ``frame_budget(segment)`` frames, on every path (one stream or many), so the same call speaks the same audio
whichever path runs it, and the chunks' ``segment`` and ``span`` index these same segments (spans of the written text).
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from engine.core.sampling import Sampling
from engine.core.text.segments import Segment
from engine.core.voice import Voice

MAX_FRAMES_CAP = 4096


def default_max_frames(text: str) -> int:
    """A generous per-segment frame budget: 0.4 s of audio per character plus 8 s, capped."""
    return min(MAX_FRAMES_CAP, 100 + 5 * len(text))


def draw_seed(seed: int | None) -> int:
    """The call's seed: the one asked for, or a fresh random one."""
    return seed if seed is not None else random.getrandbits(62)


@dataclass(frozen=True, slots=True, eq=False)
class Plan:
    voice: Voice  # prepared: a clone carries its encoding
    segments: list[Segment]
    sampling: Sampling
    seed: int
    max_frames: int | None = None  # per segment; None: ``default_max_frames`` of its text
    non_streaming: bool | None = None  # the prompt layout (None: the voice's default)

    def frame_budget(self, segment: Segment) -> int:
        return self.max_frames or default_max_frames(segment.speech)

    def segment_seed(self, index: int) -> int:
        return self.seed + index

    @property
    def keeps_decoder_state(self) -> bool:
        """Whether the audio runs on from codes before the first segment or across segments (so the decoder's
        streaming state must be kept between them): an in-context clone's reference, or several segments."""
        return self.voice.in_context or len(self.segments) > 1
