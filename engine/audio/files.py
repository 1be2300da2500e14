"""Reference audio in, rendered audio out.

``load_reference`` turns a file (wav, flac, ogg, mp3: whatever libsndfile reads) or an
``(array, sample_rate)`` pair into the mono 24 kHz float32 waveform that voice cloning needs:
channels are averaged, the rate is converted with soxr (high quality), and a reference whose peak
exceeds full scale is scaled down. References that are silent, shorter than 1 s or longer than
60 s are refused with a ``VoiceError`` that says why.
``write_audio`` writes wav or flac (16-bit PCM), chosen by the file suffix.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import soundfile as sf
import soxr

from engine.errors import UnsupportedError, VoiceError

SAMPLE_RATE = 24000
MIN_REFERENCE_SECONDS = 1.0
MAX_REFERENCE_SECONDS = 60.0
SILENCE_PEAK = 1e-3  # -60 dBFS: a reference whose loudest sample is quieter than this is treated as silent
CLIPPED_PEAK_TARGET = 0.99  # a reference peaking above full scale is scaled so its peak is this
ICL_SILENCE_SECONDS = 0.5  # appended to in-context references so their last phoneme does not bleed into speech
WRITE_FORMATS = {".wav": "WAV", ".flac": "FLAC"}
_MAX_CHANNELS = 8


def load_reference(src) -> tuple[np.ndarray, str]:
    """Reference audio -> (float32 mono waveform at 24 kHz [N], description of the source).

    ``src`` is a path (str or ``os.PathLike``) or an ``(array, sample_rate)`` pair; the array is
    [N] or [N, channels] (or [channels, N] for at most 8 channels), float or integer PCM.
    """
    if isinstance(src, (str, os.PathLike)):
        samples, sample_rate, description = _read_file(Path(src))
    elif isinstance(src, tuple) and len(src) == 2:
        samples, sample_rate = _as_float_frames(src[0]), _as_sample_rate(src[1])
        description = f"array ({sample_rate} Hz, {samples.shape[1]} ch)"
    else:
        raise VoiceError("reference audio must be a file path or an (array, sample_rate) pair, "
                         f"not {type(src).__name__}")
    mono = _downmix(samples)
    _check_reference(mono, sample_rate, description)
    audio = _resample(mono, sample_rate)
    peak = float(np.max(np.abs(audio)))
    if peak > 1.0:
        audio *= CLIPPED_PEAK_TARGET / peak
    return np.ascontiguousarray(audio, dtype=np.float32), f"{description}, {mono.size / sample_rate:.2f} s"


def with_icl_silence(audio: np.ndarray, seconds: float = ICL_SILENCE_SECONDS,
                          sample_rate: int = SAMPLE_RATE) -> np.ndarray:
    """``audio`` [N] followed by ``seconds`` of zeros (used for in-context cloning references)."""
    silence = np.zeros(round(seconds * sample_rate), dtype=np.float32)
    return np.concatenate([np.asarray(audio, dtype=np.float32), silence])


def write_audio(path: str | os.PathLike, samples: np.ndarray, sample_rate: int) -> None:
    """Write float samples [N] or [N, channels] in [-1, 1] as 16-bit wav or flac (by suffix)."""
    path = Path(path)
    file_format = WRITE_FORMATS.get(path.suffix.lower())
    if file_format is None:
        raise UnsupportedError(f"cannot write {path.name!r}: supported audio formats are "
                               f"{', '.join(WRITE_FORMATS)}")
    data = np.clip(np.asarray(samples, dtype=np.float32), -1.0, 1.0)
    if data.ndim not in (1, 2):
        raise ValueError(f"audio to write must be [N] or [N, channels], got shape {data.shape}")
    sf.write(str(path), data, int(sample_rate), format=file_format, subtype="PCM_16")


def _read_file(path: Path) -> tuple[np.ndarray, int, str]:
    if not path.exists():
        raise VoiceError(f"reference audio file not found: {path}")
    if not path.is_file():
        raise VoiceError(f"reference audio path is not a file: {path}")
    try:
        samples, sample_rate = sf.read(str(path), dtype="float32", always_2d=True)  # [N, C]
    except (sf.LibsndfileError, RuntimeError, TypeError, ValueError) as e:
        raise VoiceError(f"cannot read {path.name} as audio (wav, flac, ogg and mp3 are supported): {e}") from None
    return samples, int(sample_rate), f"{path.name} ({sample_rate} Hz, {samples.shape[1]} ch)"


def _as_float_frames(array) -> np.ndarray:
    """Any numeric audio array -> float32 [N, C]."""
    samples = np.asarray(array)
    if samples.ndim == 1:
        samples = samples[:, None]
    elif samples.ndim == 2:
        if samples.shape[1] > _MAX_CHANNELS and samples.shape[0] <= _MAX_CHANNELS:
            samples = samples.T  # [C, N] -> [N, C]
        elif samples.shape[1] > _MAX_CHANNELS:
            raise VoiceError(f"reference audio array of shape {samples.shape} has no channel axis of at most "
                             f"{_MAX_CHANNELS}")
    else:
        raise VoiceError(f"reference audio array must be [N] or [N, channels], got shape {samples.shape}")
    if np.issubdtype(samples.dtype, np.floating):
        return samples.astype(np.float32)
    if np.issubdtype(samples.dtype, np.signedinteger):
        return (samples / float(2 ** (8 * samples.dtype.itemsize - 1))).astype(np.float32)
    if samples.dtype == np.uint8:
        return ((samples.astype(np.float32) - 128.0) / 128.0).astype(np.float32)
    raise VoiceError(f"reference audio array has unsupported dtype {samples.dtype}")


def _as_sample_rate(value) -> int:
    try:
        sample_rate = int(value)
    except (TypeError, ValueError):
        raise VoiceError(f"sample rate must be a positive integer, got {value!r}") from None
    if sample_rate != value or sample_rate <= 0:
        raise VoiceError(f"sample rate must be a positive integer, got {value!r}")
    return sample_rate


def _downmix(samples: np.ndarray) -> np.ndarray:  # [N, C] -> [N]
    return samples.mean(axis=1, dtype=np.float32) if samples.shape[1] > 1 else samples[:, 0]


def _check_reference(mono: np.ndarray, sample_rate: int, description: str) -> None:
    if not np.all(np.isfinite(mono)):
        raise VoiceError(f"reference audio {description} contains NaN or infinite samples")
    seconds = mono.size / sample_rate
    if seconds < MIN_REFERENCE_SECONDS:
        raise VoiceError(f"reference audio {description} lasts {seconds:.2f} s; at least "
                         f"{MIN_REFERENCE_SECONDS:g} s is needed (3-15 s of clear speech works best)")
    if seconds > MAX_REFERENCE_SECONDS:
        raise VoiceError(f"reference audio {description} lasts {seconds:.1f} s; the limit is "
                         f"{MAX_REFERENCE_SECONDS:g} s (3-15 s of clear speech works best): trim it")
    if float(np.max(np.abs(mono))) < SILENCE_PEAK:
        raise VoiceError(f"reference audio {description} is silent (its peak is below -60 dBFS)")


def _resample(mono: np.ndarray, sample_rate: int) -> np.ndarray:
    if sample_rate == SAMPLE_RATE:
        return mono.copy()
    return soxr.resample(mono, sample_rate, SAMPLE_RATE, quality="HQ").astype(np.float32, copy=False)
