"""Per-paragraph voice marks: a line that starts with ``[voice: NAME]`` is spoken by that voice.

The mark itself is not spoken. ``parse_mark`` reads a mark at the start of a line; ``mark_names`` lists the
voices a stretch of text names, so they can be loaded before a background job needs them. How marks cut a
text into passages is ``qtapp.reading_plan.iter_sentences``.
"""

from __future__ import annotations

import re

VOICE_MARK = re.compile(r"[ \t]*\[voice:\s*([^\]\n]*?)\s*\][ \t]*", re.IGNORECASE)
_MARK_START = re.compile(r"\[(?i:voice):")  # a literal first character keeps the search fast on long texts


def parse_mark(line: str) -> tuple[str | None, int]:
    """Return (voice name or None, length of the mark) for a line that may start with a mark."""
    match = VOICE_MARK.match(line)
    if not match or not match.group(1):
        return None, 0
    return match.group(1), match.end()


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
