"""Audio encoding for responses: mp3, opus (Ogg), aac (ADTS), flac, wav and pcm, whole or as a live stream.

Every format but pcm is encoded by the engine's encoders (``engine.production.encode``, FFmpeg's through PyAV), the
same ones the studio and ``orator export`` write files with. pcm is raw 16-bit little-endian mono at 24 kHz, as in
the OpenAI API, converted here. A stream is written to a sink that cannot seek, so no muxer writes a header it
would patch at the end: a streamed wav's header says "unknown" for its sizes (0xFFFFFFFF, the usual convention for
wav over a pipe), a streamed mp3 has no Xing/Info frame at all (decoders estimate its length from the constant
bit rate) and aac is sent as ADTS frames, each with its own header. ``StreamEncoder.whole`` encodes audio known in
full with exact headers (a wav's sizes, an mp3's Info frame and its encoder delay). flac is the exception: some
readers (libsndfile) refuse a flac whose header lacks the length, so a streamed flac is encoded whole and sent
when the speech is complete. A format this installation cannot encode (PyAV missing) is refused by
``check_format`` with a clear error; there is no silent fallback to another format.
"""

from __future__ import annotations

from functools import cache

import numpy as np

from engine.production import audio_formats, encode
from server.errors import APIError

ALL_FORMATS = ("mp3", "opus", "aac", "flac", "wav", "pcm")
MEDIA_TYPES = {**{name: audio_formats.FORMATS[name].media_type for name in ALL_FORMATS if name != "pcm"},
               "pcm": "audio/pcm"}
LIVE_FORMATS = ("pcm", "wav", "mp3", "opus", "aac")  # streamed as generated; the others once complete


@cache
def supported_formats() -> tuple[str, ...]:
    """The response formats this installation can encode (probed once by encoding a short tone)."""
    return tuple(name for name in ALL_FORMATS if name == "pcm" or _can_encode(name))


def check_format(name: str) -> str:
    if name not in ALL_FORMATS:
        raise APIError(400, f"unknown response_format {name!r}; choose one of {', '.join(ALL_FORMATS)}",
                       param="response_format", code="invalid_value")
    if name not in supported_formats():
        raise APIError(400, f"response_format {name!r} cannot be encoded by this server's audio libraries "
                            f"(PyAV is not installed); supported here: {', '.join(supported_formats())}",
                       param="response_format", code="unsupported_format")
    return name


def to_pcm16(samples: np.ndarray) -> bytes:
    """float32 [N] in [-1, 1] -> 16-bit little-endian bytes."""
    clipped = np.clip(np.asarray(samples, dtype=np.float32), -1.0, 1.0)
    return (clipped * 32767.0).round().astype("<i2").tobytes()


def encode_whole(name: str, samples: np.ndarray, sample_rate: int) -> bytes:
    """A complete file of ``samples`` (float32 [N]) in format ``name``, with exact headers."""
    check_format(name)
    if name == "pcm":
        return to_pcm16(samples)
    return encode.encode_bytes(name, samples, sample_rate=sample_rate)


class StreamEncoder:
    """Encodes audio chunk by chunk: ``encode(samples)`` and ``finish()`` return the bytes to send now."""

    def __init__(self, name: str, sample_rate: int):
        self.name = check_format(name)
        self.sample_rate = sample_rate
        self._held: list[np.ndarray] = []  # formats sent whole: everything so far
        self._stream = encode.StreamEncoder(name, sample_rate=sample_rate) if name in audio_formats.STREAMABLE else None

    def encode(self, samples: np.ndarray) -> bytes:
        if self.name == "pcm":
            return to_pcm16(samples)
        if self._stream is None:
            self._held.append(np.asarray(samples, dtype=np.float32))
            return b""
        return self._stream.encode(samples)

    def finish(self) -> bytes:
        if self.name == "pcm":
            return b""
        if self._stream is None:
            return encode_whole(self.name, np.concatenate(self._held or [np.zeros(0, np.float32)]), self.sample_rate)
        return self._stream.finish()

    def whole(self, samples: np.ndarray) -> bytes:
        """The complete file of ``samples`` with exact headers, for audio known in full before its first byte
        is sent; instead of ``encode`` and ``finish``."""
        if self._stream is not None:  # opened for streaming: nothing was written to it
            self._stream.discard()
            self._stream = None
        return encode_whole(self.name, np.asarray(samples, dtype=np.float32), self.sample_rate)


def _can_encode(name: str) -> bool:
    tone = (0.1 * np.sin(np.arange(2400) * 0.1)).astype(np.float32)
    try:
        return len(encode.encode_bytes(name, tone)) > 0
    except Exception:  # noqa: BLE001 - PyAV missing, or a wheel without this encoder: the format is unsupported
        return False
