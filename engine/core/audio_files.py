"""Reference audio in, rendered audio out.

``load_reference`` turns a file (wav, flac, ogg, mp3: whatever libsndfile reads) or an
``(array, sample_rate)`` pair into the mono 24 kHz float32 waveform that voice cloning needs:
channels are averaged, the rate is converted with soxr (high quality), and a reference whose peak
exceeds full scale is scaled down. References that are silent, shorter than 1 s or longer than
60 s are refused with a ``VoiceError`` that says why.

Reading is bounded before it starts and while it runs (``read_audio``, which the studio's recording import uses
too): the sample rate (``MIN_SAMPLE_RATE``..``MAX_SAMPLE_RATE``), the channels (at most ``MAX_CHANNELS``) and the
duration a file's header states are checked before a sample is decoded, and decoding goes block by block, each
block downmixed and resampled at once, so what is held is the 24 kHz mono result (at most ``max_seconds`` of it)
and one block; a file whose header understates its length is stopped at the limit. A compressed file that would
decode to gigabytes (a FLAC of constant subframes) costs a few megabytes before its refusal, and a refused read
leaves no array behind: the error is raised where no decoded block is in scope.
``write_audio`` writes wav or flac (16-bit PCM), chosen by the file suffix.
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterable
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
MAX_CHANNELS = 8
MIN_SAMPLE_RATE = 8000  # telephone speech; a lower rate is a broken or hostile header, never a recording
MAX_SAMPLE_RATE = 384000  # the highest rate audio interfaces record at
MAX_SOURCE_SECONDS = 600.0  # a recording read whole to trim a reference from (the studio's import)
READ_FORMATS = "wav, flac, ogg and mp3"
_BLOCK_FRAMES = 1 << 15  # frames decoded at a time: 1 MiB of float32 at the most channels
_UNKNOWN_FRAMES = 1 << 62  # libsndfile's frame count of a stream whose header leaves its length open


def load_reference(src) -> tuple[np.ndarray, str]:
    """Reference audio -> (float32 mono waveform at 24 kHz [N], description of the source).

    ``src`` is a path (str or ``os.PathLike``) or an ``(array, sample_rate)`` pair; the array is
    [N] or [N, channels] (or [channels, N] for at most 8 channels), float or integer PCM.
    """
    if isinstance(src, (str, os.PathLike)):
        audio, description = read_audio(src, MAX_REFERENCE_SECONDS)
    elif isinstance(src, tuple) and len(src) == 2:
        audio, description = _array_audio(src[0], src[1], MAX_REFERENCE_SECONDS)
    else:
        raise VoiceError("reference audio must be a file path or an (array, sample_rate) pair, "
                         f"not {type(src).__name__}")
    _check_reference(audio, description)
    peak = float(np.max(np.abs(audio)))
    if peak > 1.0:
        audio *= CLIPPED_PEAK_TARGET / peak
    return audio, f"{description}, {audio.size / SAMPLE_RATE:.2f} s"


def read_audio(path: str | os.PathLike, max_seconds: float = MAX_SOURCE_SECONDS) -> tuple[np.ndarray, str]:
    """An audio file as (float32 mono waveform at 24 kHz [N], description), refused with a ``VoiceError`` when it
    is not a readable audio file, its rate or channels are out of bounds, or it lasts more than ``max_seconds``
    (see the module: checked from the header first, then while decoding)."""
    path = Path(path)
    if not path.exists():
        raise VoiceError(f"reference audio file not found: {path}")
    if not path.is_file():
        raise VoiceError(f"reference audio path is not a file: {path}")
    audio = problem = None
    try:
        with sf.SoundFile(str(path)) as f:
            rate, channels, frames = int(f.samplerate), int(f.channels), int(f.frames)
            description = f"{path.name} ({rate} Hz, {channels} ch)"
            problem = _format_problem(rate, channels, frames if frames < _UNKNOWN_FRAMES else 0, max_seconds)
            if problem is None:
                audio, problem = _decoded(f.blocks(_BLOCK_FRAMES, dtype="float32", always_2d=True), rate,
                                          max_seconds)
    except (sf.LibsndfileError, RuntimeError, TypeError, ValueError):
        problem, description = f"is not a readable audio file ({READ_FORMATS} are supported)", path.name
    if problem is not None:  # raised here, where no decoded block is held by the traceback
        raise VoiceError(f"{description} {problem}")
    return audio, description


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


def _array_audio(array, rate, max_seconds: float) -> tuple[np.ndarray, str]:
    """An ``(array, sample_rate)`` reference as ``read_audio`` gives a file's, under the same bounds."""
    samples, rate = _frames_layout(array), _as_sample_rate(rate)
    description = f"array ({rate} Hz, {samples.shape[1]} ch)"
    problem = _format_problem(rate, samples.shape[1], samples.shape[0], max_seconds)
    if problem is None:
        blocks = (samples[i:i + _BLOCK_FRAMES] for i in range(0, samples.shape[0], _BLOCK_FRAMES))
        audio, problem = _decoded(blocks, rate, max_seconds)
    if problem is not None:
        raise VoiceError(f"reference audio {description} {problem}")
    return audio, description


def _format_problem(rate: int, channels: int, frames: int, max_seconds: float) -> str | None:
    """What is wrong with audio of this rate, channel count and length (from a header or a shape), or None."""
    if not MIN_SAMPLE_RATE <= rate <= MAX_SAMPLE_RATE:
        return (f"has a sample rate of {rate} Hz; a recording between {MIN_SAMPLE_RATE} and {MAX_SAMPLE_RATE} Hz "
                "is needed")
    if not 1 <= channels <= MAX_CHANNELS:
        return f"has {channels} channels; at most {MAX_CHANNELS} are read"
    if frames / rate > max_seconds:
        return _too_long(frames / rate, max_seconds)
    return None


def _too_long(seconds: float | None, max_seconds: float) -> str:
    lasts = f"lasts {seconds:.1f} s" if seconds is not None else f"lasts more than {max_seconds:g} s"
    return f"{lasts}; the limit is {max_seconds:g} s (3-15 s of clear speech works best): trim it"


def _decoded(blocks: Iterable[np.ndarray], rate: int, max_seconds: float) -> tuple[np.ndarray | None, str | None]:
    """([N] float32 mono at 24 kHz, None) from ``blocks`` ([n, C] at ``rate``), each downmixed and resampled as it
    comes; (None, why) once they pass ``max_seconds`` or the decoder fails. It returns rather than raises, so no
    traceback keeps its blocks."""
    limit, total, out = math.floor(max_seconds * rate), 0, []
    stream = None if rate == SAMPLE_RATE else soxr.ResampleStream(rate, SAMPLE_RATE, 1, dtype="float32",
                                                                  quality="HQ")
    try:
        for block in blocks:
            total += len(block)
            if total > limit:
                return None, _too_long(None, max_seconds)
            mono = _downmix(_as_float_frames(block))
            out.append(mono.copy() if stream is None else stream.resample_chunk(mono))
        if stream is not None:
            out.append(stream.resample_chunk(np.zeros(0, dtype=np.float32), last=True))
    except (sf.LibsndfileError, RuntimeError, ValueError) as e:
        return None, f"is not a readable audio file ({READ_FORMATS} are supported): {e}"
    return (np.concatenate(out) if out else np.zeros(0, dtype=np.float32)), None


def _frames_layout(array) -> np.ndarray:
    """Any audio array as [N, C] (a view where it can be), its layout checked."""
    samples = np.asarray(array)
    if samples.ndim == 1:
        samples = samples[:, None]
    elif samples.ndim == 2:
        if samples.shape[1] > MAX_CHANNELS and samples.shape[0] <= MAX_CHANNELS:
            samples = samples.T  # [C, N] -> [N, C]
        elif samples.shape[1] > MAX_CHANNELS:
            raise VoiceError(f"reference audio array of shape {samples.shape} has no channel axis of at most "
                             f"{MAX_CHANNELS}")
    else:
        raise VoiceError(f"reference audio array must be [N] or [N, channels], got shape {samples.shape}")
    if not (np.issubdtype(samples.dtype, np.floating) or np.issubdtype(samples.dtype, np.signedinteger)
            or samples.dtype == np.uint8):
        raise VoiceError(f"reference audio array has unsupported dtype {samples.dtype}")
    return samples


def _as_float_frames(samples: np.ndarray) -> np.ndarray:
    """A block of numeric audio [n, C] -> float32 [n, C]."""
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


def _check_reference(mono: np.ndarray, description: str) -> None:
    """Refuse a 24 kHz reference that is not finite, too short or silent (its length is bounded as it is read)."""
    if not np.all(np.isfinite(mono)):
        raise VoiceError(f"reference audio {description} contains NaN or infinite samples")
    seconds = mono.size / SAMPLE_RATE
    if seconds < MIN_REFERENCE_SECONDS:
        raise VoiceError(f"reference audio {description} lasts {seconds:.2f} s; at least "
                         f"{MIN_REFERENCE_SECONDS:g} s is needed (3-15 s of clear speech works best)")
    if float(np.max(np.abs(mono))) < SILENCE_PEAK:
        raise VoiceError(f"reference audio {description} is silent (its peak is below -60 dBFS)")
