"""One voice for a whole call: the later segments of a designed voice continue the speech of its first one.

A VoiceDesign prompt holds only a description, so each segment would draw a voice afresh from it and the voice of
one call could change from segment to segment. The model has one mechanism that ties speech to earlier speech:
the in-context prompt, where a transcript and its codes come before the target text (the official layout of an
in-context clone, ``engine.core.prompts``). So once a segment has ended by itself (EOS, no guard cut), it becomes the
call's reference: every later segment is prompted with the description, then that segment's text and codes, then
its own text, and goes on in the voice it hears. Its codes already ran through the decoder, whose streaming state
continues across segments, so nothing is decoded twice or cut.

Presets and clones need none of this: a preset's speaker embedding and a clone's x-vector or reference fix the
voice in every prompt. The reference is dropped where it would not leave the segment room to speak
(``engine.core.frames.capacity``), and a reference longer than ``MAX_CONTEXT_FRAMES`` is never taken (it would crowd
the prompt and slow every later prefill). Every path (one stream, batched) applies the same ``VoiceContext``, so
a call speaks the same audio whichever path runs it.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from engine.core.frames.capacity import MAX_SEQ, MIN_ROOM_FRAMES
from engine.core.voice import Voice

MAX_CONTEXT_FRAMES = 320  # 25.6 s: a segment of DEFAULT_MAX_CHARS spoken slowly
# Frames a segment must have room for after a reference, per character of its text: twice a slow speaker's rate
# (about 0.08 s, one frame, per character), so the reference never shortens what the segment can say.
ROOM_FRAMES_PER_CHAR = 2


def carries_context(voice: Voice) -> bool:
    """Whether a call's later segments in ``voice`` continue its first one's speech (see the module docstring)."""
    return voice.kind == "design"


class VoiceContext:
    """The reference one call's segments carry: ``offer`` each segment once spoken, ``voice_for`` the next."""

    def __init__(self, voice: Voice, positions: Callable[[Voice, str], int | None] | None):
        """``positions(voice, text)``: the prompt positions of (voice, text) or None if refused
        (``engine.core.prompts.prompt_positions`` bound to a model); None carries no context."""
        self.voice, self._positions = voice, positions
        self.reference: tuple[str, np.ndarray] | None = None  # (text, codes int64 [T, 16])

    @property
    def active(self) -> bool:
        return self._positions is not None and carries_context(self.voice)

    def offer(self, text: str, codes: list[np.ndarray], warning: str | None) -> None:
        """A segment has been spoken: ``codes`` its frames in pieces, ``warning`` why it was cut (None: it ended
        by itself). The first clean one of a length the prompt takes becomes the reference."""
        if self.reference is not None or not self.active or warning is not None:
            return
        frames = np.concatenate(codes) if codes else np.zeros((0, 16), np.int64)
        if 0 < len(frames) <= MAX_CONTEXT_FRAMES:
            self.reference = (text, frames)

    def voice_for(self, text: str, budget: int) -> Voice:
        """The voice to prompt the segment of ``text`` (frame budget ``budget``) with: the call's voice carrying
        the reference when there is one and the segment keeps room to speak after it, else the voice itself."""
        if self.reference is None:
            return self.voice
        ref_text, ref_codes = self.reference
        carried = self.voice.with_(ref_text=ref_text, ref_codes=ref_codes)
        positions = self._positions(carried, text)
        room = min(budget, ROOM_FRAMES_PER_CHAR * len(text) + MIN_ROOM_FRAMES)
        return carried if positions is not None and positions + room <= MAX_SEQ else self.voice
