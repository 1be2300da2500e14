"""Audio encoding for responses: wav, pcm, flac, mp3 and opus (Ogg), whole or as a live stream.

pcm is raw 16-bit little-endian mono at 24 kHz, as in the OpenAI API. A streamed wav carries a
header whose sizes say "unknown" (0xFFFFFFFF), the usual convention for wav over a pipe. mp3
(constant bit rate, so no length header is needed) and opus are encoded by libsndfile (through
soundfile) into an append-only sink: bytes leave as soon as the encoder writes them, and the header
patches it makes when closing are dropped. An mp3 starts with the frame LAME reserves for its
Xing/Info tag, zeroed until the end; a stream marks it an Info frame without a frame count at once,
so decoders skip it instead of playing it as 24 ms of audio, and estimate the length from the constant
bit rate. ``StreamEncoder.whole`` encodes audio known in full with exact headers (a wav's sizes, an
mp3's Info frame count). flac is the exception: libsndfile's own reader refuses a
flac whose header lacks the length, so a streamed flac is encoded whole and sent when the speech is
complete. A format the installed libraries cannot encode (aac here) is refused by ``check_format``
with a clear error; there is no silent fallback to another format.
"""

from __future__ import annotations

import io
import struct
from functools import cache

import numpy as np
import soundfile as sf

from server.errors import APIError

ALL_FORMATS = ("mp3", "opus", "aac", "flac", "wav", "pcm")
MEDIA_TYPES = {"mp3": "audio/mpeg", "opus": "audio/ogg; codecs=opus", "aac": "audio/aac", "flac": "audio/flac",
               "wav": "audio/wav", "pcm": "audio/pcm"}
_SOUNDFILE_FORMATS = {"flac": ("FLAC", "PCM_16"), "mp3": ("MP3", "MPEG_LAYER_III"), "opus": ("OGG", "OPUS"),
                      "wav": ("WAV", "PCM_16")}
_OPTIONS = {"mp3": {"bitrate_mode": "CONSTANT", "compression_level": 0.5}}
LIVE_FORMATS = ("pcm", "wav", "mp3", "opus")  # streamed as generated; the others once complete
_UNKNOWN_SIZE = 0xFFFFFFFF


@cache
def supported_formats() -> tuple[str, ...]:
    """The response formats this installation can encode (probed once by encoding a short tone)."""
    return tuple(name for name in ALL_FORMATS if name == "pcm" or _can_encode(name))


def check_format(name: str) -> str:
    if name not in ALL_FORMATS:
        raise APIError(400, f"unknown response_format {name!r}; choose one of {', '.join(ALL_FORMATS)}",
                       param="response_format", code="invalid_value")
    if name not in supported_formats():
        raise APIError(400, f"response_format {name!r} cannot be encoded by this server's audio libraries; "
                            f"supported here: {', '.join(supported_formats())}",
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
    container, subtype = _SOUNDFILE_FORMATS[name]
    buffer = io.BytesIO()
    sf.write(buffer, np.clip(samples, -1.0, 1.0), sample_rate, format=container, subtype=subtype,
             **_OPTIONS.get(name, {}))
    return buffer.getvalue()


class StreamEncoder:
    """Encodes audio chunk by chunk: ``encode(samples)`` and ``finish()`` return the bytes to send now."""

    def __init__(self, name: str, sample_rate: int):
        self.name = check_format(name)
        self.sample_rate = sample_rate
        self._sink: _AppendOnlySink | None = None
        self._file: sf.SoundFile | None = None
        self._started = False
        self._held: list[np.ndarray] = []  # formats sent whole: everything so far
        if name in ("mp3", "opus"):
            container, subtype = _SOUNDFILE_FORMATS[name]
            self._sink = _AppendOnlySink()
            self._file = sf.SoundFile(self._sink, "w", sample_rate, 1, format=container, subtype=subtype,
                                      **_OPTIONS.get(name, {}))

    def encode(self, samples: np.ndarray) -> bytes:
        if self.name not in LIVE_FORMATS:
            self._held.append(np.asarray(samples, dtype=np.float32))
            return b""
        if self._file is not None:
            self._file.write(np.clip(np.asarray(samples, dtype=np.float32), -1.0, 1.0))
            return self._take()
        header = b"" if self._started or self.name == "pcm" else streaming_wav_header(self.sample_rate)
        self._started = True
        return header + to_pcm16(samples)

    def finish(self) -> bytes:
        if self.name not in LIVE_FORMATS:
            return encode_whole(self.name, np.concatenate(self._held or [np.zeros(0, np.float32)]), self.sample_rate)
        if self._file is not None:
            self._file.close()
            return self._take()
        return b"" if self._started or self.name == "pcm" else streaming_wav_header(self.sample_rate)

    def whole(self, samples: np.ndarray) -> bytes:
        """The complete file of ``samples`` with exact headers, for audio known in full before its first byte
        is sent; instead of ``encode`` and ``finish``."""
        if self._file is not None:  # opened for streaming: nothing was written to it
            self._file.close()
            self._file = None
        return encode_whole(self.name, np.asarray(samples, dtype=np.float32), self.sample_rate)

    def _take(self) -> bytes:
        data = self._sink.take()
        if self.name == "mp3" and not self._started and data:
            self._started = True
            data = mark_info_frame(data)
        return data


def mark_info_frame(data: bytes) -> bytes:
    """``data`` with its first frame, if it is LAME's zeroed tag frame, marked an Info (Xing) tag frame with no
    fields: decoders then skip it rather than play it, and the stream's length is left for them to estimate."""
    if len(data) < 4 or data[0] != 0xFF or data[1] & 0xE6 != 0xE2:  # a frame sync and Layer III
        return data
    mpeg1, mono, crc = (data[1] >> 3) & 3 == 3, data[3] >> 6 == 3, not data[1] & 1
    at = 4 + (2 if crc else 0) + ((17 if mono else 32) if mpeg1 else (9 if mono else 17))
    if data[4:at + 8] != bytes(at + 4):  # the side information and the tag's place must still be zeroed
        return data
    return data[:at] + b"Info" + bytes(4) + data[at + 8:]


def streaming_wav_header(sample_rate: int) -> bytes:
    """A 44-byte 16-bit mono PCM wav header with "unknown" RIFF and data sizes."""
    return (b"RIFF" + struct.pack("<I", _UNKNOWN_SIZE) + b"WAVEfmt "
            + struct.pack("<IHHIIHH", 16, 1, 1, sample_rate, sample_rate * 2, 2, 16)
            + b"data" + struct.pack("<I", _UNKNOWN_SIZE))


class _AppendOnlySink(io.RawIOBase):
    """A seekable file for libsndfile whose bytes are handed out as they are written.

    Writes that land before what was already handed out (header patches at close) are dropped.
    """

    def __init__(self):
        super().__init__()
        self._pending = bytearray()
        self._taken = 0  # absolute offset of the first byte of ``_pending``
        self._position = 0
        self._size = 0

    def readable(self) -> bool:
        return True

    def writable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def tell(self) -> int:
        return self._position

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        base = {io.SEEK_SET: 0, io.SEEK_CUR: self._position, io.SEEK_END: self._size}[whence]
        self._position = base + offset
        return self._position

    def write(self, data) -> int:
        data = bytes(data)
        start = self._position
        skip = max(0, self._taken - start)  # the part of this write that was already sent
        if skip < len(data):
            at = start + skip - self._taken
            self._pending[at:at + len(data) - skip] = data[skip:]
        self._position = start + len(data)
        self._size = max(self._size, self._position)
        return len(data)

    def read(self, size: int = -1) -> bytes:
        at = max(0, self._position - self._taken)
        out = bytes(self._pending[at:] if size < 0 else self._pending[at:at + size])
        self._position += len(out)
        return out

    def take(self) -> bytes:
        out = bytes(self._pending)
        self._taken += len(out)
        self._pending.clear()
        return out


def _can_encode(name: str) -> bool:
    if name not in _SOUNDFILE_FORMATS:
        return False
    container, subtype = _SOUNDFILE_FORMATS[name]
    if container not in sf.available_formats() or subtype not in sf.available_subtypes(container):
        return False
    tone = (0.1 * np.sin(np.arange(2400) * 0.1)).astype(np.float32)
    try:
        buffer = io.BytesIO()
        sf.write(buffer, tone, 24000, format=container, subtype=subtype, **_OPTIONS.get(name, {}))
        return len(buffer.getvalue()) > 0
    except (sf.LibsndfileError, RuntimeError, TypeError, ValueError):
        return False
