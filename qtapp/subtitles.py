"""SubRip (.srt) subtitles written cue by cue, so a book's subtitles never sit in memory."""

from __future__ import annotations

import textwrap
from dataclasses import dataclass
from typing import TextIO

LINE_WIDTH = 42  # characters per subtitle line, the usual broadcast limit


@dataclass(frozen=True, slots=True)
class Cue:
    start_s: float
    end_s: float
    text: str


def format_timestamp(seconds: float) -> str:
    """``HH:MM:SS,mmm`` as SRT wants it (negative times clamp to zero)."""
    millis = max(0, int(round(seconds * 1000)))
    hours, millis = divmod(millis, 3_600_000)
    minutes, millis = divmod(millis, 60_000)
    secs, millis = divmod(millis, 1000)
    return f"{hours:02d}:{minutes:02d}:{secs:02d},{millis:03d}"


def wrap_cue_text(text: str, width: int = LINE_WIDTH) -> str:
    """Collapse whitespace and wrap to lines of at most ``width`` characters (long words stay whole)."""
    return "\n".join(textwrap.wrap(" ".join(text.split()), width=width, break_long_words=False)) or "…"


class SrtWriter:
    """Numbers cues from 1 and writes each one as soon as it is known."""

    def __init__(self, file: TextIO):
        self._file = file
        self.count = 0

    def write(self, cue: Cue) -> None:
        if cue.end_s < cue.start_s:
            raise ValueError(f"cue ends before it starts: {cue}")
        self.count += 1
        self._file.write(f"{self.count}\n{format_timestamp(cue.start_s)} --> {format_timestamp(cue.end_s)}\n"
                         f"{wrap_cue_text(cue.text)}\n\n")
