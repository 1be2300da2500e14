"""What an audio file says besides its audio: its tags (``Tags``), chapter marks (``ChapterMark``) and cover
(``Cover``), and the rules that make them fit every container (``clean_tag``, ``normalized_chapters``).

Tags: title, author (artist and album artist), narrator (the voice's name, as composer, the field audiobook players
read a narrator from, and as ``narrator`` where the container allows free keys), album, track, genre, comment.
A chapter runs to the next one's start or to the end. A cover is a JPEG or PNG image.
"""

from __future__ import annotations

import os
import struct
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from engine.core.chunks import SAMPLE_RATE
from engine.errors import UnsupportedError

MAX_TAG_CHARS = 1000  # a longer title or name is cut, with an ellipsis
MAX_CHAPTER_TITLE_BYTES = 255  # MP4's Nero chapter list (chpl) keeps a title's UTF-8 length in one byte
MAX_COVER_BYTES = 16 << 20  # a cover image above this is refused: it would be copied into every per-chapter file


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
