"""Encoding speech into files and streams: WAV, FLAC, MP3, Opus (Ogg) and AAC (M4A/M4B, or ADTS), with tags,
chapters and a cover, fed float32 24 kHz chunks as they are generated.

- ``FileEncoder(path, ...)``: ``write(samples)`` chunk by chunk, ``finish(chapters=...)`` at the end. The file is
  written under a temporary name beside the target (``.orator-*.tmp``, created with the umask's permissions, not
  mkstemp's 0600), synced and renamed onto the target only when complete; ``abort()`` (and any exception or
  Ctrl-C inside a ``with`` block) removes it, so a failed or cancelled export leaves nothing behind.
- ``StreamEncoder(name)``: ``encode(samples) -> bytes`` and ``finish() -> bytes`` for a response that is sent
  as it is made (written to a sink that cannot seek, so the muxer writes no header it would have to patch);
  ``encode_bytes(name, samples)`` is one complete file in memory, with exact headers.

Chapters are ``ChapterMark(title, start_s)``; each runs to the next one's start or to the end. They may be given
when the encoder is made or only to ``finish``, once the speech's length is known: MP4 keeps chapters in its
trailer, so late ones cost nothing; MP3 (ID3 ``CHAP``), Ogg and FLAC (Vorbis ``CHAPTERnnn`` comments) keep them
in the header, so the finished file is remuxed once (packets copied, nothing re-encoded) with its chapters.
WAV and ADTS have no place for chapters or a cover; those are left out. Tags (``Tags``): title, author
(artist and album artist), narrator (the voice's name, as composer, the field audiobook players read a narrator
from, and as ``narrator`` where the container allows free keys), album, track, genre, comment.

Library: PyAV (``av``, BSD-3-Clause), whose wheels carry FFmpeg's encoders and muxers (FFmpeg 8, built LGPL
v3: ``av._core.library_meta`` says so; libmp3lame LGPL, libopus BSD; the wheels also carry x264/x265 for video,
which Orator never calls). Wheels exist for Linux (x86_64, aarch64), macOS (x86_64, arm64) and Windows (amd64);
av 18 needs Python 3.11+, 17.x serves 3.10. It is the one library here that writes AAC and MP4 at all, with
chapters (``Container.set_chapters``, av 16+) and attached pictures (``add_mux_stream``, av 17+), and it writes
the other formats too, so every format goes through one pipeline. libsndfile (soundfile) encodes MP3 and Opus
but no AAC, MP4, chapters or pictures; mutagen (GPL-2.0+) edits tags but encodes nothing and cannot write MP4
chapters, so it serves only as the tests' independent reader. No system binary is called.
"""

from __future__ import annotations

import base64
import errno
import os
import secrets
import struct
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path

import numpy as np

from engine.atomic_files import TEMP_PREFIX, TEMP_SUFFIX, sync_folder
from engine.core.chunks import SAMPLE_RATE
from engine.errors import UnsupportedError

# Where a container keeps chapters and a cover: not at all, in its header (known before the first sample), in its
# trailer (known at the end), as a separate attached-picture stream, or as a Vorbis comment.
NONE, HEADER, TRAILER, STREAM, COMMENT = "none", "header", "trailer", "stream", "comment"
MAX_TAG_CHARS = 1000  # a longer title or name is cut, with an ellipsis
MAX_CHAPTER_TITLE_BYTES = 255  # MP4's Nero chapter list (chpl) keeps a title's UTF-8 length in one byte
_UNKNOWN_END_MS = (1 << 32) - 2
MAX_COVER_BYTES = 16 << 20  # a cover image above this is refused: it would be copied into every per-chapter file


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


@dataclass(frozen=True)
class Tags:
    title: str = ""
    author: str = ""
    narrator: str = ""  # the voice's name
    album: str = ""  # empty: the title (a book's chapter files share the book's title as their album)
    track: tuple[int, int] | None = None  # (number, count) of a file among a book's chapter files
    genre: str = ""
    comment: str = ""

    def metadata(self) -> dict[str, str]:
        """FFmpeg's generic keys, which each muxer maps to its own fields (©nam, TIT2, TITLE...)."""
        out = {"title": self.title, "artist": self.author, "album_artist": self.author,
               "album": self.album or self.title, "composer": self.narrator, "narrator": self.narrator,
               "genre": self.genre, "comment": self.comment}
        if self.track is not None:
            out["track"] = f"{int(self.track[0])}/{int(self.track[1])}"
        return {key: clean_tag(value) for key, value in out.items() if clean_tag(value)}


@dataclass(frozen=True)
class ChapterMark:
    title: str
    start_s: float


@dataclass(frozen=True)
class Cover:
    data: bytes
    mime: str  # image/jpeg or image/png
    width: int = 0
    height: int = 0

    @classmethod
    def from_bytes(cls, data: bytes) -> Cover:
        """A JPEG or PNG image; ``UnsupportedError`` for anything else (the formats every container takes)."""
        if len(data) > MAX_COVER_BYTES:
            raise UnsupportedError(f"the cover image is {len(data) / 2**20:.0f} MiB; at most "
                                   f"{MAX_COVER_BYTES >> 20} MiB is taken")
        size = _png_size(data) if data.startswith(b"\x89PNG\r\n\x1a\n") else None
        if size is not None:
            return cls(bytes(data), "image/png", *size)
        if data.startswith(b"\xff\xd8\xff"):
            return cls(bytes(data), "image/jpeg", *(_jpeg_size(data) or (0, 0)))
        raise UnsupportedError("the cover image must be a JPEG or PNG file")

    @classmethod
    def from_file(cls, path: str | os.PathLike) -> Cover:
        path = Path(path)
        try:
            if path.stat().st_size > MAX_COVER_BYTES:
                raise UnsupportedError(f"the cover image {path.name} is larger than {MAX_COVER_BYTES >> 20} MiB")
            return cls.from_bytes(path.read_bytes())
        except OSError as e:
            raise UnsupportedError(f"cannot read the cover image {path.name}: {e.strerror or e}") from None


def clean_tag(value: str, max_bytes: int | None = None) -> str:
    """A tag value as containers can hold it: control characters and runs of spaces become one space (a NUL
    would end the C string early), lone surrogates (no UTF-8 form) become U+FFFD, and at most ``MAX_TAG_CHARS``
    characters (``max_bytes`` of UTF-8 if given), cut at a character with an ellipsis."""
    text = "".join(" " if ord(c) < 32 or 0x7F <= ord(c) < 0xA0 else "\ufffd" if 0xD800 <= ord(c) <= 0xDFFF else c
                   for c in str(value))
    text = " ".join(text.split())
    if len(text) > MAX_TAG_CHARS:
        text = text[:MAX_TAG_CHARS - 1].rstrip() + "…"
    if max_bytes is not None and len(text.encode("utf-8")) > max_bytes:
        cut = text.encode("utf-8")[:max_bytes - 3].decode("utf-8", "ignore")  # "…" is 3 bytes
        text = cut.rstrip() + "…"
    return text


def normalized_chapters(chapters: Iterable[ChapterMark], total_samples: int,
                        sample_rate: int = SAMPLE_RATE) -> list[tuple[str, int, int]]:
    """(title, first sample, end sample) per chapter, in time order. A chapter that starts at or after the end,
    or at the same sample as the next (so it would last no time), is dropped: a player could not show it."""
    marks = sorted(((min(max(0, round(float(c.start_s) * sample_rate)), total_samples),
                     clean_tag(c.title, MAX_CHAPTER_TITLE_BYTES))
                    for c in chapters if np.isfinite(float(c.start_s))), key=lambda m: m[0])
    kept: list[tuple[int, str]] = []
    for start, title in marks:
        if start >= total_samples:
            continue
        if kept and kept[-1][0] == start:
            kept.pop()  # the later of two marks at one place is the one whose content follows
        kept.append((start, title or f"Chapter {len(kept) + 1}"))
    ends = [start for start, _ in kept[1:]] + [total_samples] if kept else []
    return [(title, start, end) for (start, title), end in zip(kept, ends, strict=True)]


class _Pipeline:
    """One PyAV output container on a file (a path) or a Python file object: float32 samples in, packets out."""

    def __init__(self, fmt: AudioFormat, file, tags: Tags | None, chapters: list[tuple[str, int, int]] | None,
                 cover: Cover | None, bitrate: int | None, sample_rate: int, streaming: bool, template=None):
        """``template``: an input stream whose packets will be copied in (``_remux``) instead of encoded."""
        av = _av()

        self.fmt, self.sample_rate = fmt, sample_rate
        # bitexact: no encoder version in the output, so the same audio gives the same bytes (a resumed export
        # equals an uninterrupted one); id3v2_version 0 for a bare response stream, as browsers expect of mp3
        options = {"fflags": "+bitexact", **fmt.options}
        if streaming:
            options["flush_packets"] = "1"  # each packet leaves at once instead of when a 32 KiB buffer fills
            if fmt.muxer == "ogg":
                options["page_duration"] = "100000"  # µs: a page (the unit sent) every 0.1 s, not every second
        if fmt.muxer == "mp3" and tags is None and not chapters and cover is None:  # nothing for an ID3 tag
            options["id3v2_version"] = "0"
        self.container = av.open(file, "w", format=fmt.muxer, options=options)
        try:
            if template is not None:
                self.stream = self.container.add_stream_from_template(template)
            else:
                codec_options = {"bit_rate": int(bitrate or fmt.bitrate)} if fmt.bitrate else {}
                self.stream = self.container.add_stream(fmt.codec, rate=sample_rate, layout="mono", **codec_options)
                self.stream.codec_context.flags |= av.codec.context.Flags.bitexact
            metadata = tags.metadata() if tags is not None else {}
            if chapters and fmt.muxer in ("flac", "ogg"):
                # Vorbis comments: FFmpeg's FLAC muxer writes no chapters, and its Ogg one rounds their seconds
                # (1.5 s is written 00:00:02.500)
                metadata.update(_chapter_comments(chapters, sample_rate))
            elif chapters and fmt.chapters != NONE:
                self.container.set_chapters(_av_chapters(chapters, sample_rate))
            picture = None
            if cover is not None and fmt.cover == COMMENT:
                metadata["METADATA_BLOCK_PICTURE"] = base64.b64encode(_flac_picture(cover)).decode("ascii")
            elif cover is not None and fmt.cover == STREAM:
                picture = self.container.add_mux_stream("png" if cover.mime == "image/png" else "mjpeg",
                                                        width=cover.width, height=cover.height)
                picture.disposition = av.stream.Disposition.attached_pic
                picture.metadata["comment"] = "Cover (front)"  # the picture type FFmpeg writes (ID3, FLAC)
            # Ogg keeps its comments in the audio stream's header, the others in the container's
            (self.stream if fmt.muxer == "ogg" else self.container).metadata.update(metadata)
            self.container.start_encoding()
            if picture is not None:
                packet = av.Packet(cover.data)
                packet.stream, packet.pts, packet.dts, packet.is_keyframe = picture, 0, 0, True
                self.container.mux(packet)
        except BaseException:
            self.container.close()
            raise
        self.samples = 0

    def write(self, samples: np.ndarray) -> None:
        av = _av()
        data = _as_samples(samples)
        if not data.size:
            return
        frame = av.AudioFrame.from_ndarray(data[None, :], format="flt", layout="mono")
        frame.sample_rate, frame.pts = self.sample_rate, self.samples
        self.samples += data.size
        for packet in self.stream.encode(frame):
            self.container.mux(packet)

    def set_chapters(self, chapters: list[tuple[str, int, int]]) -> None:
        self.container.set_chapters(_av_chapters(chapters, self.sample_rate))

    def close(self) -> None:
        try:
            for packet in self.stream.encode(None):
                self.container.mux(packet)
        finally:
            self.container.close()

    def discard(self) -> None:
        try:
            self.container.close()
        except Exception:  # noqa: BLE001 - the output is being thrown away; its first error is what matters
            pass


class FileEncoder:
    """Encodes chunk by chunk into ``path``, which appears only when ``finish`` completes (see the module doc).

    ``fmt`` defaults to the one the suffix names. ``chapters``: known marks, or None for marks given to
    ``finish``. Usable as a context manager: leaving the block normally finishes, an exception aborts."""

    def __init__(self, path: str | os.PathLike, fmt: str | None = None, *, tags: Tags | None = None,
                 chapters: Sequence[ChapterMark] | None = None, cover: Cover | None = None,
                 bitrate: int | None = None, sample_rate: int = SAMPLE_RATE):
        self.path = Path(path)
        self.format = audio_format(fmt or self.path)
        self.sample_rate = sample_rate
        self._tags, self._chapters, self._cover, self._bitrate = tags, chapters, cover, bitrate
        self.temp_paths: list[Path] = []  # what an interrupted run may leave behind, for the caller to record
        self._done = False
        self._pipeline = None
        self._pipeline_closed = False
        temp = create_temp_beside(self.path)
        self.temp_paths.append(temp)
        try:
            self._pipeline = self._open(temp, chapters)
        except BaseException:
            self.abort()
            raise

    @property
    def samples_written(self) -> int:
        return self._pipeline.samples if self._pipeline is not None else 0

    @property
    def duration(self) -> float:
        return self.samples_written / self.sample_rate

    def write(self, samples: np.ndarray) -> None:
        if self._done:
            raise ValueError(f"the encoder of {self.path.name} is closed")
        try:
            self._pipeline.write(samples)
        except BaseException:
            self.abort()
            raise

    def finish(self, chapters: Sequence[ChapterMark] | None = None) -> Path:
        """Complete the file (with ``chapters`` if given here) and move it onto the target; returns its path."""
        if self._done:
            raise ValueError(f"the encoder of {self.path.name} is closed")
        try:
            marks = chapters if chapters is not None else self._chapters
            total = self._pipeline.samples
            late = chapters is not None and self.format.chapters == HEADER
            if marks is not None and self.format.chapters == TRAILER:
                self._pipeline.set_chapters(normalized_chapters(marks, total, self.sample_rate))
            self._pipeline.close()
            self._pipeline_closed = True
            final = self.temp_paths[0]
            if late:  # the header is written: copy the packets into a file whose header holds the chapters
                final = create_temp_beside(self.path)
                self.temp_paths.append(final)
                _remux(self.temp_paths[0], final, self.format, self._tags,
                       normalized_chapters(marks, total, self.sample_rate), self._cover, self.sample_rate)
            _sync(final)
            os.replace(final, self.path)
            sync_folder(self.path.parent)
        except BaseException:
            self.abort()
            raise
        self._done = True
        self._remove_temps()
        return self.path

    def abort(self) -> None:
        """Stop and remove what was written; the target is left as it was. Safe to call more than once."""
        self._done = True
        if self._pipeline is not None and not self._pipeline_closed:
            self._pipeline.discard()
            self._pipeline_closed = True
        self._remove_temps()

    def _open(self, temp: Path, chapters: Sequence[ChapterMark] | None) -> _Pipeline:
        # FFmpeg writes the file itself, by its path: through a Python file object its write callback would run
        # Python code, where a Ctrl-C raised inside PyAV's callback is dropped as "unraisable" and the export goes on
        # chapters known now go into the header before the length is known: each runs to the next, the last to
        # the latest end an ID3 CHAP frame can say (2^32 - 2 ms), which players read as "to the end"
        marks = None
        if chapters is not None and self.format.chapters == HEADER:
            marks = normalized_chapters(chapters, _UNKNOWN_END_MS * self.sample_rate // 1000, self.sample_rate)
        return _Pipeline(self.format, _url(temp), self._tags or Tags(), marks, self._cover, self._bitrate,
                         self.sample_rate, streaming=False)

    def _remove_temps(self) -> None:
        for temp in self.temp_paths:
            try:
                temp.unlink(missing_ok=True)
            except OSError:
                pass

    def __enter__(self) -> FileEncoder:
        return self

    def __exit__(self, kind, error, traceback) -> None:
        if kind is not None:
            self.abort()
        elif not self._done:
            self.finish()


class StreamEncoder:
    """Encodes a response as it is made: ``encode(samples)`` and ``finish()`` return the bytes to send now.
    ``tags`` and ``cover`` are for formats that carry them; a stream has no chapters."""

    def __init__(self, fmt: str, *, tags: Tags | None = None, bitrate: int | None = None,
                 sample_rate: int = SAMPLE_RATE):
        self.format = audio_format(fmt)
        if self.format.name not in STREAMABLE:
            raise UnsupportedError(f"{self.format.name} cannot be encoded as a stream; use encode_bytes")
        self._sink = _Sink()
        self._pipeline = _Pipeline(self.format, self._sink, tags, None, None, bitrate, sample_rate,
                                   streaming=True)
        self._closed = False

    @property
    def samples_written(self) -> int:
        return self._pipeline.samples

    def encode(self, samples: np.ndarray) -> bytes:
        self._pipeline.write(samples)
        return self._sink.take()

    def finish(self) -> bytes:
        if not self._closed:
            self._closed = True
            self._pipeline.close()
        return self._sink.take()

    def discard(self) -> None:
        if not self._closed:
            self._closed = True
            self._pipeline.discard()


def encode_bytes(fmt: str, samples: np.ndarray, *, tags: Tags | None = None,
                 chapters: Sequence[ChapterMark] = (), cover: Cover | None = None, bitrate: int | None = None,
                 sample_rate: int = SAMPLE_RATE) -> bytes:
    """One complete file of ``samples`` (float32 [N]) in memory, with exact headers (a WAV's sizes, an MP3's
    frame count); MP4 needs a seekable file to put its index at the end, which memory is."""
    import io

    fmt_ = audio_format(fmt)
    data = _as_samples(samples)
    marks = normalized_chapters(chapters, data.size, sample_rate) if chapters else None
    buffer = io.BytesIO()
    pipeline = _Pipeline(fmt_, buffer, tags, marks, cover, bitrate, sample_rate, streaming=False)
    try:
        pipeline.write(data)
    except BaseException:
        pipeline.discard()
        raise
    pipeline.close()
    return buffer.getvalue()


def create_temp_beside(path: Path) -> Path:
    """A new empty file in ``path``'s folder named ``.orator-*.tmp``, with the permissions the umask gives a new
    file (0644 under the usual 022): the file a user gets is this one, renamed."""
    path.parent.mkdir(parents=True, exist_ok=True)
    for _ in range(100):
        temp = path.parent / f"{TEMP_PREFIX}{secrets.token_hex(6)}{TEMP_SUFFIX}"
        try:
            fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0), 0o666)
        except FileExistsError:
            continue
        os.close(fd)
        return temp
    raise FileExistsError(errno.EEXIST, "no free temporary file name", str(path.parent))


# ---- internals ------------------------------------------------------------------------------------------------
def _av():
    """PyAV, or ``UnsupportedError`` saying how to install it (it is in the audio, gui and server extras)."""
    try:
        import av
    except ImportError as e:
        raise UnsupportedError(f"encoding audio needs PyAV, which is not installed ({e}): "
                               "pip install 'orator[audio]'") from None
    return av


class _Sink:
    """A write-only file for a stream: no seek, so muxers write nothing they would patch later."""

    def __init__(self):
        self._data = bytearray()

    def write(self, data) -> int:
        self._data += data
        return len(data)

    def take(self) -> bytes:
        out = bytes(self._data)
        self._data.clear()
        return out


def _as_samples(samples) -> np.ndarray:
    """float32 [N] in [-1, 1]: NaN becomes silence and infinities full scale, so one bad sample cannot stop a
    book's encoder."""
    data = np.asarray(samples, dtype=np.float32).reshape(-1)
    if not np.all(np.isfinite(data)):
        data = np.nan_to_num(data, nan=0.0, posinf=1.0, neginf=-1.0)
    return np.ascontiguousarray(np.clip(data, -1.0, 1.0))


def _url(path: Path) -> str:
    """FFmpeg's name for a local file: ``file:`` first, so a folder named like ``a:b`` is no protocol."""
    return f"file:{path}"


def _sync(path: Path) -> None:
    """Flush a closed file's data to disk (so the rename that follows never exposes an empty or torn file)."""
    fd = os.open(path, os.O_RDWR | getattr(os, "O_BINARY", 0))
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _av_chapters(chapters: list[tuple[str, int, int]], sample_rate: int) -> list[dict]:
    return [{"id": i + 1, "start": start, "end": end, "time_base": Fraction(1, sample_rate),
             "metadata": {"title": title}} for i, (title, start, end) in enumerate(chapters)]


def _chapter_comments(chapters: list[tuple[str, int, int]], sample_rate: int) -> dict[str, str]:
    """The Vorbis comment chapter convention (``CHAPTER001=00:01:02.500``, ``CHAPTER001NAME=Title``)."""
    out = {}
    for i, (title, start, _) in enumerate(chapters[:999]):
        millis = start * 1000 // sample_rate
        hours, rest = divmod(millis, 3_600_000)
        out[f"CHAPTER{i + 1:03d}"] = f"{hours:02d}:{rest // 60000:02d}:{rest % 60000 // 1000:02d}.{rest % 1000:03d}"
        out[f"CHAPTER{i + 1:03d}NAME"] = title
    return out


def _flac_picture(cover: Cover) -> bytes:
    """A FLAC PICTURE block (front cover), the form Ogg Opus keeps a cover in (base64, METADATA_BLOCK_PICTURE)."""
    mime = cover.mime.encode("ascii")
    return (struct.pack(">II", 3, len(mime)) + mime + struct.pack(">I", 0)
            + struct.pack(">IIIII", cover.width, cover.height, 24, 0, len(cover.data)) + cover.data)


def _remux(source: Path, target: Path, fmt: AudioFormat, tags: Tags | None, chapters: list[tuple[str, int, int]],
           cover: Cover | None, sample_rate: int) -> None:
    """Copy the audio packets of ``source`` into ``target`` under a new header with these tags, chapters, cover."""
    av = _av()

    with av.open(_url(source)) as src:
        audio = src.streams.audio[0]
        pipeline = _Pipeline(fmt, _url(target), tags, chapters, cover, None, sample_rate, streaming=False,
                             template=audio)
        try:
            for packet in src.demux(audio):
                if packet.dts is None:  # the demuxer's empty flush packet
                    continue
                packet.stream = pipeline.stream
                pipeline.container.mux(packet)
        except BaseException:
            pipeline.discard()
            raise
        pipeline.container.close()


def _png_size(data: bytes) -> tuple[int, int] | None:
    if len(data) < 24 or data[12:16] != b"IHDR":
        return None
    return struct.unpack(">II", data[16:24])


def _jpeg_size(data: bytes) -> tuple[int, int] | None:
    """Width and height from a JPEG's start-of-frame marker; None if there is none in the first 1 MiB."""
    at, end = 2, min(len(data), 1 << 20)
    while at + 9 <= end:
        if data[at] != 0xFF:
            return None
        marker = data[at + 1]
        if marker == 0xFF:
            at += 1
            continue
        length = int.from_bytes(data[at + 2:at + 4], "big")
        if 0xC0 <= marker <= 0xCF and marker not in (0xC4, 0xC8, 0xCC):
            height, width = struct.unpack(">HH", data[at + 5:at + 9])
            return width, height
        at += 2 + length
    return None
