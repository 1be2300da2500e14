"""The audio file formats Orator writes (WAV, FLAC, MP3, Opus, M4A/M4B, ADTS AAC): each one's suffix, FFmpeg muxer
and encoder, media type, default bitrate, and where it keeps chapters and a cover; ``audio_format`` finds one by
name or by a file name's suffix."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from engine.errors import UnsupportedError

# Where a container keeps chapters and a cover: not at all, in its header (known before the first sample), in its
# trailer (known at the end), as a separate attached-picture stream, or as a Vorbis comment.
NONE, HEADER, TRAILER, STREAM, COMMENT = "none", "header", "trailer", "stream", "comment"


@dataclass(frozen=True)
class AudioFormat:
    name: str
    suffix: str
    muxer: str  # FFmpeg's name of the container
    codec: str  # FFmpeg's name of the encoder
    media_type: str
    bitrate: int | None  # bits per second of a lossy codec; None for PCM and FLAC
    chapters: str  # NONE, HEADER or TRAILER
    cover: str  # NONE, STREAM or COMMENT
    options: dict = field(default_factory=dict)  # the muxer's options

    @property
    def lossless(self) -> bool:
        return self.bitrate is None


FORMATS: dict[str, AudioFormat] = {f.name: f for f in (
    AudioFormat("wav", ".wav", "wav", "pcm_s16le", "audio/wav", None, NONE, NONE),
    AudioFormat("flac", ".flac", "flac", "flac", "audio/flac", None, HEADER, STREAM),
    # 64 kb/s: transparent for 24 kHz mono speech in MP3 and AAC; Opus needs half as much
    AudioFormat("mp3", ".mp3", "mp3", "libmp3lame", "audio/mpeg", 64000, HEADER, STREAM),
    AudioFormat("opus", ".opus", "ogg", "libopus", "audio/ogg; codecs=opus", 32000, HEADER, COMMENT),
    AudioFormat("m4a", ".m4a", "mp4", "aac", "audio/mp4", 64000, TRAILER, STREAM, {"brand": "M4A "}),
    AudioFormat("m4b", ".m4b", "mp4", "aac", "audio/mp4", 64000, TRAILER, STREAM, {"brand": "M4B "}),
    AudioFormat("aac", ".aac", "adts", "aac", "audio/aac", 64000, NONE, NONE),
)}
# Formats that can be sent as they are made; a FLAC without its length in the header is refused by some readers.
STREAMABLE = ("wav", "mp3", "opus", "aac")


def audio_format(name_or_path: str | os.PathLike) -> AudioFormat:
    """The format named (``"mp3"``) or the one a file name's suffix stands for; ``UnsupportedError`` otherwise."""
    text = str(name_or_path)
    key = text.lower().lstrip(".") if not Path(text).suffix else Path(text).suffix.lower().lstrip(".")
    found = FORMATS.get(key)
    if found is None:
        raise UnsupportedError(f"cannot encode {Path(text).name or text!r}: the audio formats are "
                               f"{', '.join(FORMATS)}")
    return found

