"""Log-mel front end of the speaker encoder, and the speaker embedding of a 24 kHz reference.

24 kHz audio, 1024-point FFT, hop 256, Hann window 1024, 128 Slaney-style mel filters over
0-12 kHz (the filterbank is computed here, with the same formulas as ``librosa.filters.mel``).
The waveform is reflect-padded by (n_fft - hop) / 2 = 384 samples each side and framed without
centring, so N samples give N // 256 frames; magnitudes are sqrt(re^2 + im^2 + 1e-9) and the
output is log(max(mel, 1e-5)).
"""

from __future__ import annotations

import math
from functools import lru_cache

import numpy as np
import torch
from torch import nn
from torch.nn import functional as F

from engine.errors import VoiceError

SAMPLE_RATE = 24000
N_FFT = 1024
HOP_LENGTH = 256
WIN_LENGTH = 1024
N_MELS = 128
F_MIN = 0.0
F_MAX = 12000.0
MIN_SAMPLES = 4096  # 16 frames: the shortest input the speaker encoder's dilated convolutions accept

_MAGNITUDE_EPS = 1e-9
_LOG_FLOOR = 1e-5

# Slaney mel scale: linear below 1 kHz (3 mels per 200 Hz), logarithmic above.
_LINEAR_HZ_PER_MEL = 200.0 / 3
_BREAK_HZ = 1000.0
_BREAK_MEL = _BREAK_HZ / _LINEAR_HZ_PER_MEL
_LOG_STEP = math.log(6.4) / 27.0


def _hz_to_mel(hz: np.ndarray) -> np.ndarray:
    hz = np.asarray(hz, dtype=np.float64)
    linear = hz / _LINEAR_HZ_PER_MEL
    logarithmic = _BREAK_MEL + np.log(np.maximum(hz, _BREAK_HZ) / _BREAK_HZ) / _LOG_STEP
    return np.where(hz >= _BREAK_HZ, logarithmic, linear)


def _mel_to_hz(mel: np.ndarray) -> np.ndarray:
    linear = _LINEAR_HZ_PER_MEL * mel
    logarithmic = _BREAK_HZ * np.exp(_LOG_STEP * (mel - _BREAK_MEL))
    return np.where(mel >= _BREAK_MEL, logarithmic, linear)


@lru_cache(maxsize=4)
def mel_filterbank(sample_rate: int = SAMPLE_RATE, n_fft: int = N_FFT, n_mels: int = N_MELS,
                   f_min: float = F_MIN, f_max: float = F_MAX) -> np.ndarray:
    """Slaney-normalised triangular mel filters, float32 [n_mels, n_fft // 2 + 1]."""
    fft_hz = np.linspace(0.0, sample_rate / 2, n_fft // 2 + 1)  # [F]
    edges_hz = _mel_to_hz(np.linspace(_hz_to_mel(f_min), _hz_to_mel(f_max), n_mels + 2))  # [M + 2]
    widths = np.diff(edges_hz)  # [M + 1]
    distance = edges_hz[:, None] - fft_hz[None, :]  # [M + 2, F]
    rising = -distance[:-2] / widths[:-1, None]  # [M, F]
    falling = distance[2:] / widths[1:, None]
    weights = np.maximum(0.0, np.minimum(rising, falling))
    weights *= (2.0 / (edges_hz[2:] - edges_hz[:-2]))[:, None]  # equal area per filter
    return weights.astype(np.float32)


def log_mel_spectrogram(audio: torch.Tensor) -> torch.Tensor:
    """[B, N] waveform at 24 kHz -> [B, N // 256, 128] log-mel frames, in the dtype of ``audio``."""
    if audio.shape[-1] <= (N_FFT - HOP_LENGTH) // 2:
        raise VoiceError(f"audio of {audio.shape[-1]} samples is too short for a mel spectrogram")
    filters = torch.from_numpy(mel_filterbank()).to(device=audio.device, dtype=audio.dtype)  # [M, F]
    window = torch.hann_window(WIN_LENGTH, device=audio.device, dtype=audio.dtype)
    pad = (N_FFT - HOP_LENGTH) // 2
    padded = F.pad(audio.unsqueeze(1), (pad, pad), mode="reflect").squeeze(1)  # [B, N + 2 * pad]
    spectrum = torch.stft(padded, N_FFT, hop_length=HOP_LENGTH, win_length=WIN_LENGTH, window=window,
                          center=False, normalized=False, onesided=True, return_complex=True)  # [B, F, T]
    magnitude = torch.sqrt(torch.view_as_real(spectrum).pow(2).sum(-1) + _MAGNITUDE_EPS)  # [B, F, T]
    mel = torch.matmul(filters, magnitude)  # [B, M, T]
    return torch.log(mel.clamp(min=_LOG_FLOOR)).transpose(1, 2)


@torch.inference_mode()
def speaker_embedding(encoder: nn.Module, audio_24k: np.ndarray) -> torch.Tensor:
    """Speaker vector [enc_dim] of a mono 24 kHz reference, on the encoder's device and dtype.

    The mel spectrogram is computed in float32 on the encoder's device, then cast to its dtype.
    """
    audio = np.asarray(audio_24k, dtype=np.float32)
    if audio.ndim != 1:
        raise VoiceError(f"speaker_embedding expects mono audio [N], got shape {audio.shape}")
    if audio.size < MIN_SAMPLES:
        raise VoiceError(f"reference audio of {audio.size} samples is too short for a speaker embedding "
                         f"(need at least {MIN_SAMPLES} samples at {SAMPLE_RATE} Hz)")
    parameter = next(encoder.parameters())
    waveform = torch.from_numpy(audio).to(parameter.device).unsqueeze(0)  # [1, N]
    mels = log_mel_spectrogram(waveform).to(parameter.dtype)  # [1, T, 128]
    return encoder(mels)[0]
