"""Voice marks, the one rule for the studio's reading and for export: a line that starts with ``[voice: NAME]``
starts a passage spoken by the voice NAME, which holds to the next blank line or the next mark. Qt-free.

The mark itself is not spoken, and a mark inside a line is text. Why a paragraph, ended by a blank line, and not
the mark's line alone: books and most text files wrap a paragraph over several lines, so a mark on its first line
must voice all of it, and in text with one paragraph a line a blank line after a speaker's lines is the one
place where any writer ends them. Both readers follow it: ``engine.production.book_structure`` (export: a passage's
voice) and ``qtapp.reading_plan`` (reading aloud, from any line: ``voice_above`` finds the mark still in effect there).

``parse_mark`` reads a mark at the start of a line; ``mark_names`` lists the voices a stretch of text names.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

# the name is one run of a class that cannot hold the closing bracket, stripped afterwards: a line whose mark never
# closes then fails in linear time, where a lazy name between runs of \s backtracks polynomially
VOICE_MARK = re.compile(r"[ \t]*\[voice:([^\]\n]*)\][ \t]*", re.IGNORECASE)
_MARK_START = re.compile(r"\[(?i:voice):")  # a literal first character keeps the search fast on long texts


def parse_mark(line: str) -> tuple[str | None, int]:
    """Return (voice name or None, length of the mark) for a line that may start with a mark."""
    match = VOICE_MARK.match(line)
    name = match.group(1).strip() if match else ""
    if not name:
        return None, 0
    return name, match.end()


def ends_marks(line: str) -> bool:
    """Whether ``line`` (without its line end) is a blank line, which ends a marked passage."""
    return not line.strip()


def voice_above(lines: Iterable[str]) -> str | None:
    """The voice in effect after ``lines``, given nearest first (the lines above a place in the text): the mark
    of the first marked line before any blank one, else None (the default voice)."""
    for line in lines:
        if ends_marks(line):
            return None
        if "[" in line:
            name, _ = parse_mark(line)
            if name is not None:
                return name
    return None


def mark_names(text: str, start: int = 0, end: int | None = None) -> set[str]:
    """The voice names of the marks in ``text[start:end]`` (at a line start, or at ``start``)."""
    end = len(text) if end is None else end
    names = set()
    for found in _MARK_START.finditer(text, start, end):
        line_start = max(start, text.rfind("\n", 0, found.start()) + 1)
        if text[line_start:found.start()].strip(" \t"):
            continue  # text before it on its line: a mark inside a line is text
        line_end = text.find("\n", found.start(), end)
        name, _ = parse_mark(text[line_start:end if line_end < 0 else line_end])
        if name is not None:
            names.add(name)
    return names
