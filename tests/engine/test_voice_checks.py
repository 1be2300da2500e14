"""Every path that speaks checks the voice and its prompt first, in one place (``Engine.check``): a voice no
model can use (reference codes longer than any prompt, codes outside the codebook, a NaN embedding) or whose
prompt cannot fit is refused before the decoder is fed its reference codes, on ``check``, ``synthesize``,
``stream``, ``stream_live`` and the batched streams alike."""

from __future__ import annotations

import asyncio

import numpy as np
import pytest

from engine.core.frames.capacity import MAX_SEQ
from engine.core.live_speech import stream_live_batched
from engine.core.sampling import Sampling
from engine.core.text.live_text import LiveText
from engine.errors import OratorError, TextError, VoiceError
from engine.voices import Voice


@pytest.fixture(scope="module")
def base(tiny_engine):
    return tiny_engine("base")


def _clone(eng, codes: np.ndarray, embedding: np.ndarray | None = None) -> Voice:
    width = eng.config.talker_config.hidden_size
    embedding = np.random.default_rng(0).standard_normal(width).astype(np.float32) if embedding is None else embedding
    return Voice("clone", language="english", ref_text="Reference words.", speaker_embedding=embedding,
                 ref_codes=codes)


def _live(text: str) -> LiveText:
    live = LiveText()
    live.append(text)
    live.close()
    return live


def _paths(eng):
    """Each way a voice is spoken, as a function of the voice that runs it until its first chunk."""
    sampling = Sampling(seed=1)

    def batched(voice):
        streams = eng.batched(1, warmup=False)
        try:
            next(streams.stream("Hello there.", voice, sampling=sampling, max_frames=4))
        finally:
            streams.close()

    def live_batched(voice):
        streams = eng.batched(1, warmup=False)

        async def first():
            async for chunk in stream_live_batched(streams, _live("Hello there."), voice, sampling, max_frames=4):
                return chunk

        try:
            asyncio.run(first())
        finally:
            streams.close()

    return {
        "check": lambda voice: eng.check("Hello there.", voice),
        "synthesize": lambda voice: eng.synthesize("Hello there.", voice, sampling, max_frames=4),
        "stream": lambda voice: next(eng.stream("Hello there.", voice, sampling=sampling, max_frames=4)),
        "stream_live": lambda voice: next(eng.stream_live(_live("Hello there."), voice, sampling=sampling,
                                                          max_frames=4)),
        "batched": batched,
        "stream_live_batched": live_batched,
    }


BAD = {
    "100000 frames of codes": (lambda eng: _clone(eng, np.zeros((100_000, 16), dtype=np.int64)),
                               VoiceError, "100000 frames; at most 2032 fit a prompt"),
    "codes out of range": (lambda eng: _clone(eng, np.full((20, 16), 5000, dtype=np.int64)),
                           VoiceError, "codes run from 5000 to 5000"),
    "negative codes": (lambda eng: _clone(eng, np.full((20, 16), -3, dtype=np.int64)), VoiceError, "from -3"),
    "NaN embedding": (lambda eng: _clone(eng, np.zeros((20, 16), dtype=np.int64),
                                         np.full(eng.config.talker_config.hidden_size, np.nan, dtype=np.float32)),
                      VoiceError, "speaker_embedding holds NaN"),
    "a prompt that cannot fit": (lambda eng: _clone(eng, np.zeros((MAX_SEQ - 20, 16), dtype=np.int64)),
                                 TextError, "prompt is too long"),
}


@pytest.mark.parametrize("path", ["check", "synthesize", "stream", "stream_live", "batched", "stream_live_batched"])
@pytest.mark.parametrize("bad", list(BAD))
def test_every_path_refuses_an_unusable_voice_before_decoding_its_codes(base, monkeypatch, path, bad):
    make, error, message = BAD[bad]
    decoded = []
    real = base.decoder.decode_chunk
    monkeypatch.setattr(base.decoder, "decode_chunk", lambda codes, *a, **k: (decoded.append(codes.shape),
                                                                              real(codes, *a, **k))[1])
    with pytest.raises(error, match=message):
        _paths(base)[path](make(base))
    assert decoded == []  # refused before the decoder saw a reference code


def test_a_usable_in_context_clone_still_speaks_on_every_path(base):
    voice = _clone(base, np.random.default_rng(1).integers(0, 2048, size=(20, 16)))
    for name, run in _paths(base).items():
        try:
            run(voice)
        except OratorError as e:  # pragma: no cover - the message says which path broke
            pytest.fail(f"{name}: {e}")
