"""Chapters chosen by number: ``"1,3-5"`` read as 0-based chapter indices (``parse_chapter_selection``), and with a
part bringing every chapter under it (``chapter_selection``, the choice ``orator export --chapters`` and the export
dialog's range make)."""

from __future__ import annotations

import re

from engine.documents.outline import with_descendants


def parse_chapter_selection(spec: str, count: int) -> list[int]:
    """``"1,3-5"`` -> [0, 2, 3, 4]: 1-based numbers and ranges of a book's ``count`` chapters, in book order, each
    once; ``ValueError`` with what is wrong."""
    chosen: set[int] = set()
    parts = [p.strip() for p in str(spec).split(",")]
    if not any(parts):
        raise ValueError("the chapter list is empty")
    for part in parts:
        match = re.fullmatch(r"(\d{1,9})(?:\s*-\s*(\d{1,9}))?", part)
        if not match:
            raise ValueError(f"{part!r} is not a chapter number or range (write e.g. 1,3-5)")
        first, last = int(match.group(1)), int(match.group(2) or match.group(1))
        if first < 1 or last < first:
            raise ValueError(f"{part!r} is not a range of chapters from 1 up")
        if last > count:
            raise ValueError(f"{part!r}: the book has {count} chapter{'s' if count != 1 else ''}")
        chosen.update(range(first - 1, last))
    return sorted(chosen)


def chapter_selection(spec: str, levels: list[int]) -> list[int]:
    """The chapters ``spec`` names (``parse_chapter_selection``) of a book whose chapters have ``levels``, with every
    chapter under them: "2" of a book whose chapter 2 is a part holding 3 and 4 is [1, 2, 3]. ``orator export
    --chapters`` and the export dialog's range both choose with it."""
    return with_descendants(parse_chapter_selection(spec, len(levels)), levels)
