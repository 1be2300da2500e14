"""The whole voice-clone pipeline against the official implementation, from reference audio to
waveform: speaker embedding, reference codes, greedy codes and the decoded audio (tiny Base
checkpoint, float64), in x-vector-only and in-context modes."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from engine import Engine, Sampling, Voice
from engine.core.audio_files import with_icl_silence
from tests.oracle import load_official, official_available

pytestmark = [
    pytest.mark.oracle,
    pytest.mark.skipif(not official_available(), reason="official qwen-tts not installed"),
]

FRAMES = 12
TEXT = "Cloned voices should sound like their reference."
REF_TEXT = "This is the reference recording."


def _reference() -> np.ndarray:
    """2.5 s of a voiced-like signal: a few harmonics with a slow vibrato and some noise."""
    rng = np.random.default_rng(4)
    t = np.arange(int(2.5 * 24000)) / 24000
    f0 = 140 + 8 * np.sin(2 * np.pi * 3 * t)
    phase = 2 * np.pi * np.cumsum(f0) / 24000
    wave = sum(np.sin(k * phase) / k for k in range(1, 6)) + 0.05 * rng.standard_normal(t.size)
    return (0.3 * wave / np.abs(wave).max()).astype(np.float32)


@pytest.fixture(scope="module")
def both(tiny_model_dir):
    model_dir = tiny_model_dir("base")
    return Engine.from_pretrained(model_dir, dtype=torch.float64, precision="exact"), load_official(model_dir)


@pytest.mark.parametrize("in_context", [False, True], ids=["x-vector", "in-context"])
def test_clone_pipeline_matches_official(both, in_context):
    ours, official = both
    audio = _reference()
    ref_text = REF_TEXT if in_context else None
    voice = ours.prepare_voice(Voice.clone((audio, 24000), ref_text=ref_text, language="english"))
    # the official pipeline gets the very audio ours encodes (ours pads in-context references)
    official_audio = with_icl_silence(audio) if in_context else audio
    item = official.create_voice_clone_prompt(ref_audio=(official_audio, 24000), ref_text=ref_text,
                                              x_vector_only_mode=not in_context)[0]
    np.testing.assert_allclose(voice.speaker_embedding, item.ref_spk_embedding.float().numpy(), rtol=1e-5,
                               atol=1e-6)
    if in_context:
        np.testing.assert_array_equal(voice.ref_codes, item.ref_code.numpy())

    kwargs = dict(do_sample=False, subtalker_dosample=False, max_new_tokens=FRAMES + 1)
    wavs, sr = official.generate_voice_clone(TEXT, language="english", voice_clone_prompt=[item], **kwargs)
    mine = ours.synthesize(TEXT, voice, Sampling(greedy=True), max_frames=FRAMES)
    assert sr == 24000 and mine.codes.shape == (FRAMES, 16)
    np.testing.assert_allclose(mine.samples, wavs[0], atol=1e-4)
