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
from, and as ``narrator`` where the container allows free keys), album, track, genre, comment
(``engine.production.audio_metadata``). Formats: ``engine.production.audio_formats``; the PyAV container each
file is written through: ``engine.production.mux_pipeline``.
"""

from __future__ import annotations

import errno
import os
import secrets
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from engine.atomic_files import TEMP_PREFIX, TEMP_SUFFIX, sync_folder
from engine.core.chunks import SAMPLE_RATE
from engine.errors import UnsupportedError
from engine.production.audio_formats import HEADER, STREAMABLE, TRAILER, audio_format
from engine.production.audio_metadata import ChapterMark, Cover, Tags, normalized_chapters
from engine.production.mux_pipeline import MuxPipeline, StreamSink, as_samples, file_url, remux

_UNKNOWN_END_MS = (1 << 32) - 2


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
                remux(self.temp_paths[0], final, self.format, self._tags,
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

    def _open(self, temp: Path, chapters: Sequence[ChapterMark] | None) -> MuxPipeline:
        # FFmpeg writes the file itself, by its path: through a Python file object its write callback would run
        # Python code, where a Ctrl-C raised inside PyAV's callback is dropped as "unraisable" and the export goes on
        # chapters known now go into the header before the length is known: each runs to the next, the last to
        # the latest end an ID3 CHAP frame can say (2^32 - 2 ms), which players read as "to the end"
        marks = None
        if chapters is not None and self.format.chapters == HEADER:
            marks = normalized_chapters(chapters, _UNKNOWN_END_MS * self.sample_rate // 1000, self.sample_rate)
        return MuxPipeline(self.format, file_url(temp), self._tags or Tags(), marks, self._cover, self._bitrate,
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
        self._sink = StreamSink()
        self._pipeline = MuxPipeline(self.format, self._sink, tags, None, None, bitrate, sample_rate,
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
    data = as_samples(samples)
    marks = normalized_chapters(chapters, data.size, sample_rate) if chapters else None
    buffer = io.BytesIO()
    pipeline = MuxPipeline(fmt_, buffer, tags, marks, cover, bitrate, sample_rate, streaming=False)
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



def _sync(path: Path) -> None:
    """Flush a closed file's data to disk (so the rename that follows never exposes an empty or torn file)."""
    fd = os.open(path, os.O_RDWR | getattr(os, "O_BINARY", 0))
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
