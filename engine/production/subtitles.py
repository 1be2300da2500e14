"""Subtitles for rendered speech: SubRip (.srt) and WebVTT (.vtt), written cue by cue so a book's subtitles never
sit in memory.

A cue is one spoken segment (a sentence, ``engine.core.text.segments.split_segments``) timed by where its audio was
written in the file, so pauses, chapter breaks and a resumed export all keep the cues on their words. A segment too long
for two subtitle lines is cut at word boundaries into several cues (``split_cue``), each given a share of the segment's
time in proportion to its characters. Chapter-aware: ``chapter(title, start_s)`` marks where a chapter begins (a
``NOTE`` block in WebVTT; SubRip has no comments, so nothing), cues never straddle a chapter because a segment never
does, and ``chapters_vtt`` writes a WebVTT chapters track (``<track kind="chapters">``) for players that show one.
"""

from __future__ import annotations

import re
import textwrap
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TextIO

LINE_WIDTH = 42  # characters per subtitle line, the usual broadcast limit
MAX_LINES = 2  # lines per cue: more would cover the picture of a video voiced over
KINDS = ("srt", "vtt")
_CLAUSE_END = re.compile(r"[,;:—–]$")


@dataclass(frozen=True, slots=True)
class Cue:
    start_s: float
    end_s: float
    text: str
    # a cue of subtitles someone wrote (a voiceover's): written whole under this number, so it keeps the
    # number its report and clip have; None: numbered in order and split where too long to read
    number: int | None = None


def _parts(seconds: float) -> tuple[int, int, int, int]:
    millis = max(0, int(round(seconds * 1000)))
    hours, millis = divmod(millis, 3_600_000)
    minutes, millis = divmod(millis, 60_000)
    secs, millis = divmod(millis, 1000)
    return hours, minutes, secs, millis


def srt_timestamp(seconds: float) -> str:
    """``HH:MM:SS,mmm`` as SubRip wants it (negative times clamp to zero)."""
    return "{:02d}:{:02d}:{:02d},{:03d}".format(*_parts(seconds))


def vtt_timestamp(seconds: float) -> str:
    """``HH:MM:SS.mmm`` as WebVTT wants it (negative times clamp to zero)."""
    return "{:02d}:{:02d}:{:02d}.{:03d}".format(*_parts(seconds))


format_timestamp = srt_timestamp


def wrap_cue_text(text: str, width: int = LINE_WIDTH) -> str:
    """Collapse whitespace and wrap to lines of at most ``width`` characters (long words stay whole)."""
    return "\n".join(textwrap.wrap(" ".join(text.split()), width=width, break_long_words=False)) or "…"


def split_cue(cue: Cue, max_chars: int = LINE_WIDTH * MAX_LINES) -> list[Cue]:
    """``cue`` as cues of at most ``max_chars`` characters each (a word longer than that stays whole), cut after
    a clause mark where one falls in the second half of a piece, else at a space; each piece gets a share of the
    cue's time in proportion to its length."""
    words = " ".join(cue.text.split()).split(" ")
    pieces: list[str] = []
    current: list[str] = []
    for word in words:
        if current and len(" ".join([*current, word])) > max_chars:
            cut = next((i + 1 for i in range(len(current) - 1, len(current) // 2 - 1, -1)
                        if _CLAUSE_END.search(current[i])), len(current))
            pieces.append(" ".join(current[:cut]))
            current = current[cut:]
        current.append(word)
    if current:
        pieces.append(" ".join(current))
    if len(pieces) <= 1:
        return [Cue(cue.start_s, cue.end_s, " ".join(words))]
    total = sum(len(p) for p in pieces)
    out, start, done = [], cue.start_s, 0
    for piece in pieces:
        done += len(piece)
        end = cue.start_s + (cue.end_s - cue.start_s) * done / total
        out.append(Cue(start, end, piece))
        start = end
    return out


class SubtitleWriter:
    """Writes cues as soon as they are known; ``count`` is how many were written."""

    suffix = ""

    def __init__(self, file: TextIO):
        self._file = file
        self.count = 0

    def write(self, cue: Cue) -> None:
        if not cue.end_s >= cue.start_s:
            raise ValueError(f"cue ends before it starts: {cue}")
        for piece in split_cue(cue) if cue.number is None else [cue]:
            self.count += 1
            self._write(piece)

    def chapter(self, title: str, start_s: float) -> None:
        """A chapter begins at ``start_s``."""

    def _write(self, cue: Cue) -> None:
        raise NotImplementedError

    def _number(self, cue: Cue) -> int:
        return self.count if cue.number is None else cue.number


class SrtWriter(SubtitleWriter):
    """SubRip: cues numbered from 1."""

    suffix = ".srt"

    def _write(self, cue: Cue) -> None:
        text = wrap_cue_text(cue.text).replace("-->", "->")  # a text line with an arrow would read as a timing
        self._file.write(f"{self._number(cue)}\n{srt_timestamp(cue.start_s)} --> {srt_timestamp(cue.end_s)}\n"
                         f"{text}\n\n")


class VttWriter(SubtitleWriter):
    """WebVTT: the ``WEBVTT`` header first, text escaped (``&``, ``<``, ``>``), chapters as ``NOTE`` blocks."""

    suffix = ".vtt"

    def __init__(self, file: TextIO):
        super().__init__(file)
        file.write("WEBVTT\n\n")

    def chapter(self, title: str, start_s: float) -> None:
        text = " ".join(title.split()).replace("-->", "->") or "…"
        self._file.write(f"NOTE Chapter at {vtt_timestamp(start_s)}: {text}\n\n")

    def _write(self, cue: Cue) -> None:
        text = vtt_escape(wrap_cue_text(cue.text))
        self._file.write(f"{self._number(cue)}\n{vtt_timestamp(cue.start_s)} --> {vtt_timestamp(cue.end_s)}\n"
                         f"{text}\n\n")


def vtt_escape(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def subtitle_writer(kind: str, file: TextIO) -> SubtitleWriter:
    """The writer of ``kind`` ("srt" or "vtt")."""
    writers = {"srt": SrtWriter, "vtt": VttWriter}
    if kind not in writers:
        raise ValueError(f"subtitles are {' or '.join(KINDS)}, not {kind!r}")
    return writers[kind](file)


def chapters_vtt(chapters: Iterable[tuple[str, float, float]]) -> str:
    """A WebVTT chapters track: one cue per (title, start_s, end_s)."""
    out = ["WEBVTT", ""]
    for number, (title, start, end) in enumerate(chapters, 1):
        out += [str(number), f"{vtt_timestamp(start)} --> {vtt_timestamp(end)}",
                vtt_escape(" ".join(title.split()) or "…"), ""]
    return "\n".join(out) + "\n"
