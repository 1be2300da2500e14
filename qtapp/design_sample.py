"""The sample a designed voice is kept from ("Keep this voice"): spoken within the clone reference limit.

A VoiceDesign model may ramble past the end of its text, and a reference longer than
``engine.core.audio_files.MAX_REFERENCE_SECONDS`` cannot be cloned, while the user cannot trim a sample they
never saw. ``speak_sample`` therefore stops the generation at ``KEEP_MAX_SECONDS`` and keeps whole
segments only, so the transcript stays true to the audio; when even the first segment overruns, its
first ``KEEP_MAX_SECONDS`` are kept without a transcript (an x-vector clone needs none). Qt-free.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from engine.core.audio_files import MAX_REFERENCE_SECONDS
from engine.core.text.segments import split_sentences

# 3-15 s of speech clones best; the sample text takes about 10 s, so this cap leaves it room and stays far
# inside the reference limit
KEEP_MAX_SECONDS = 30.0
assert KEEP_MAX_SECONDS < MAX_REFERENCE_SECONDS


def speak_sample(engine, text: str, voice, report: Callable[[float], None] = lambda seconds: None,
                 max_seconds: float = KEEP_MAX_SECONDS, **generation) -> tuple[np.ndarray, str | None]:
    """(float32 samples at the engine's rate, their transcript or None) of ``text`` spoken by ``voice``, at most
    ``max_seconds`` long; ``report(seconds so far)`` after each chunk; ``generation`` goes to ``engine.stream``."""
    limit = int(max_seconds * engine.sample_rate)
    pieces: dict[int, list[np.ndarray]] = {}
    spans: dict[int, tuple[int, int]] = {}
    total, overrun = 0, None
    # one sentence a segment, so a sample cut short keeps whole sentences and a transcript that matches them
    stream = engine.stream(split_sentences(text), voice, **generation)
    try:
        for chunk in stream:
            if total + len(chunk.samples) > limit:
                overrun = chunk
                break
            pieces.setdefault(chunk.segment, []).append(chunk.samples)
            spans[chunk.segment] = chunk.span
            total += len(chunk.samples)
            report(total / engine.sample_rate)
    finally:
        stream.close()
    if overrun is None:
        return _joined(pieces), text
    whole = [segment for segment in pieces if segment != overrun.segment]
    if not whole:  # the first segment alone overran: its start, with no transcript that would not match it
        head = np.concatenate(pieces.get(overrun.segment, []) + [overrun.samples])[:limit]
        return head.astype(np.float32, copy=False), None
    kept = {segment: pieces[segment] for segment in whole}
    transcript = " ".join(text[slice(*spans[segment])].strip() for segment in whole)
    return _joined(kept), transcript


def _joined(pieces: dict[int, list[np.ndarray]]) -> np.ndarray:
    return np.concatenate([samples for segment in sorted(pieces) for samples in pieces[segment]]).astype(
        np.float32, copy=False)
