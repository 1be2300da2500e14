"""Log-mel front end and speaker embedding: filterbank, framing, and parity with the official code."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest
import torch

from engine.core.codec.mel import (
    HOP_LENGTH,
    MIN_SAMPLES,
    N_MELS,
    SAMPLE_RATE,
    log_mel_spectrogram,
    mel_filterbank,
    speaker_embedding,
)
from engine.core.config import SpeakerEncoderConfig
from engine.core.model.speaker_encoder import SpeakerEncoder
from engine.errors import VoiceError
from tests.oracle import official_available

TINY = dict(enc_dim=48, enc_channels=[32, 32, 32, 32, 96], enc_attention_channels=16, enc_se_channels=16)
needs_official = pytest.mark.skipif(not official_available(), reason="official qwen-tts not installed")


def _noise(seconds: float, seed: int = 0) -> np.ndarray:
    return (0.3 * np.random.default_rng(seed).standard_normal(int(seconds * SAMPLE_RATE))).astype(np.float32)


def _tiny_encoder(seed: int = 0) -> SpeakerEncoder:
    torch.manual_seed(seed)
    return SpeakerEncoder(SpeakerEncoderConfig(**TINY)).eval()


def test_filterbank_equals_librosa():
    librosa = pytest.importorskip("librosa")
    expected = librosa.filters.mel(sr=24000, n_fft=1024, n_mels=128, fmin=0, fmax=12000)
    ours = mel_filterbank()
    assert ours.shape == expected.shape == (128, 513)
    np.testing.assert_allclose(ours, expected, rtol=1e-5, atol=1e-8)


@pytest.mark.parametrize("samples", [SAMPLE_RATE, SAMPLE_RATE + 100, 4 * HOP_LENGTH])
def test_one_frame_per_hop(samples):
    mels = log_mel_spectrogram(torch.from_numpy(_noise(2.0)[:samples]).unsqueeze(0))
    assert mels.shape == (1, samples // HOP_LENGTH, N_MELS)


def test_a_tone_lights_the_mel_band_of_its_frequency():
    t = np.arange(SAMPLE_RATE) / SAMPLE_RATE
    loudest = []
    for hz in (500.0, 3000.0):
        tone = torch.from_numpy(0.5 * np.sin(2 * np.pi * hz * t)).float().unsqueeze(0)
        loudest.append(int(log_mel_spectrogram(tone)[0].mean(0).argmax()))
        band = mel_filterbank()[loudest[-1]]
        centre_hz = band.argmax() * SAMPLE_RATE / 1024
        assert abs(centre_hz - hz) < 0.1 * hz
    assert loudest[0] < loudest[1]


def test_float64_input_stays_float64_and_agrees_with_float32():
    audio = torch.from_numpy(_noise(1.0)).unsqueeze(0)
    single = log_mel_spectrogram(audio)
    double = log_mel_spectrogram(audio.double())
    assert double.dtype == torch.float64
    torch.testing.assert_close(double.float(), single, rtol=1e-4, atol=1e-4)


def test_speaker_embedding_shape_dtype_and_input_checks():
    encoder = _tiny_encoder().double()
    embedding = speaker_embedding(encoder, _noise(1.5))
    assert embedding.shape == (TINY["enc_dim"],) and embedding.dtype == torch.float64
    assert not torch.allclose(embedding, speaker_embedding(encoder, _noise(1.5, seed=1)))
    with pytest.raises(VoiceError, match="too short"):
        speaker_embedding(encoder, _noise(1.0)[: MIN_SAMPLES - 1])
    with pytest.raises(VoiceError, match="mono"):
        speaker_embedding(encoder, np.stack([_noise(1.0), _noise(1.0)], axis=1))


@pytest.mark.oracle
@needs_official
@pytest.mark.parametrize("seconds", [1.0, 2.37])
def test_mel_matches_the_official_function(seconds):
    from qwen_tts.core.models.modeling_qwen3_tts import mel_spectrogram

    audio = torch.from_numpy(_noise(seconds, seed=3)).unsqueeze(0)
    expected = mel_spectrogram(audio, n_fft=1024, num_mels=128, sampling_rate=24000, hop_size=256,
                               win_size=1024, fmin=0, fmax=12000).transpose(1, 2)
    torch.testing.assert_close(log_mel_spectrogram(audio), expected, rtol=1e-5, atol=1e-5)


@pytest.mark.oracle
@needs_official
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_speaker_embedding_matches_the_official_extraction(dtype):
    from qwen_tts.core.models.configuration_qwen3_tts import Qwen3TTSSpeakerEncoderConfig
    from qwen_tts.core.models.modeling_qwen3_tts import (
        Qwen3TTSForConditionalGeneration,
        Qwen3TTSSpeakerEncoder,
    )

    torch.manual_seed(5)
    official_encoder = Qwen3TTSSpeakerEncoder(Qwen3TTSSpeakerEncoderConfig(**TINY)).to(dtype).eval()
    ours = SpeakerEncoder(SpeakerEncoderConfig(**TINY)).to(dtype).eval()
    ours.load_state_dict(official_encoder.state_dict(), strict=True)
    # extract_speaker_embedding only reads these three attributes of the model
    official_model = SimpleNamespace(speaker_encoder=official_encoder, device=torch.device("cpu"), dtype=dtype)
    audio = _noise(2.1, seed=4)
    expected = Qwen3TTSForConditionalGeneration.extract_speaker_embedding(official_model, audio=audio, sr=24000)
    torch.testing.assert_close(speaker_embedding(ours, audio), expected, rtol=1e-5, atol=1e-5)
