"""PDF words across lines (Qt-free): a paragraph's lines joined (``join_lines``), a word hyphenated at a line end
joined again unless the document spells it with its hyphen elsewhere (``resolve_hyphens``; PDFium marks such a
hyphen with ``HYPHEN_MARK``), and TeX's spacing accents put back on their letters (``compose_accents``)."""

from __future__ import annotations

import re
import unicodedata
from collections import Counter

from engine.documents.model import Block

HYPHEN_MARK = "\x02"  # what PDFium puts for a hyphen at a line end
_HYPHENATED = re.compile(rf"(\w+)[{HYPHEN_MARK}-]{HYPHEN_MARK}?(\w+)")
_ACCENTS = {"¨": "\u0308", "´": "\u0301", "ˆ": "\u0302", "˜": "\u0303", "¸": "\u0327", "˚": "\u030a",
            "ˇ": "\u030c", "˘": "\u0306", "˝": "\u030b", "¯": "\u0304", "˙": "\u0307"}
_SPACING_ACCENT = re.compile(f"([{''.join(_ACCENTS)}])([^\\W\\d_])")
_WORDS = re.compile(r"\w+(?:-\w+)*")


def join_lines(a: str, b: str) -> str:
    """Line ``b`` after line ``a`` of one paragraph: a line-end hyphen is marked (``HYPHEN_MARK``) for
    ``resolve_hyphens``, other lines are joined by a space."""
    if a.endswith(HYPHEN_MARK) or (a.endswith("-") and a[-2:-1].isalpha() and b[:1].islower()):
        return a[:-1] + HYPHEN_MARK + b  # resolved once the whole document's words are known
    return f"{a} {b}"


def compose_accents(text: str) -> str:
    """"M¨oller" -> "Möller": TeX prints an accent as a glyph of its own before its letter."""
    if not _SPACING_ACCENT.search(text):
        return text
    return unicodedata.normalize("NFC", _SPACING_ACCENT.sub(lambda m: m.group(2) + _ACCENTS[m.group(1)], text))


def resolve_hyphens(blocks: list[Block]) -> None:
    """``manip-|ulation`` -> ``manipulation``, but ``command-|line`` stays hyphenated when the document writes
    ``command-line`` more often than ``commandline``."""
    words = Counter()
    for block in blocks:
        words.update(w.lower() for w in _WORDS.findall(block.text.replace(HYPHEN_MARK, " ")))

    def join(m: re.Match) -> str:
        a, b = m.group(1), m.group(2)
        if b[:1].isupper() or a[-1:].isdigit() or words[f"{a}-{b}".lower()] > words[f"{a}{b}".lower()]:
            return f"{a}-{b}"
        return a + b

    for block in blocks:
        if HYPHEN_MARK in block.text:
            block.text = _HYPHENATED.sub(join, block.text).replace(HYPHEN_MARK, "")
