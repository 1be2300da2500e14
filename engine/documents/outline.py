"""The one chapter list of a document (Qt-free): what the studio's chapter panel shows, what the export dialog and
``orator export --list-chapters`` number, and what export speaks chapter by chapter, so a number means the same
chapter everywhere.

The chapters are the document's own (its contents, else its headings: ``engine.documents.model``), at every level,
nested; a document without any gets those its text's chapter labels give (``text_chapters``). Text with a word
before the first chapter (a title page, a copyright notice) is a chapter of its own at the top, named after the
book, so it is listed, and exported, like the rest. A part is the chapters under it: choosing one chooses them
(``with_descendants``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from engine.documents.model import Chapter, Heading, chapter_spans
from engine.documents.text_chapters import text_structure

MAX_DEPTH = 6  # deeper levels nest no further: a hostile outline of ever deeper levels stays a readable tree
_HAS_WORD = re.compile(r"\w")


@dataclass(frozen=True)
class Outline:
    """A document's chapters in reading order (levels from 1), the headings its text speaks as headings, and
    whether the first chapter is the text before the document's own first one (``front_matter``)."""

    chapters: list[Chapter] = field(default_factory=list)
    headings: list[Heading] = field(default_factory=list)
    front_matter: bool = False


def book_title(document) -> str:
    """The title a document is known by: its own, else its file's name."""
    return " ".join((getattr(document, "title", "") or Path(getattr(document, "path", "book")).stem).split())


def outline(document) -> Outline:
    """The chapters of ``document`` (anything with ``text``, ``chapters`` with ``title``, ``level`` and ``start``,
    and optionally ``headings`` and ``title``): see the module doc."""
    text = document.text
    chapters = list(getattr(document, "chapters", None) or [])
    if chapters:
        headings = list(getattr(document, "headings", None) or [])
        marks = [(min(max(int(c.start), 0), len(text)), max(int(getattr(c, "level", 1) or 1), 1), c.title)
                 for c in chapters]
    else:
        headings, found = text_structure(text)
        marks = [(c.start, c.level, c.title) for c in found]
    if not marks:
        return Outline([], headings)
    first = min(start for start, _, _ in marks)
    front = bool(_HAS_WORD.search(text[:first]))
    if front:
        marks.insert(0, (0, min(level for _, level, _ in marks), book_title(document) or "Untitled"))
    return Outline(chapter_spans(marks, text), headings, front)


def chapter_outline(document) -> list[Chapter]:
    """``outline(document).chapters``: the list the studio and export share."""
    return outline(document).chapters


def parents(levels: list[int]) -> list[int | None]:
    """The index of each chapter's parent (None at the top), from their levels in reading order: a chapter's
    parent is the last one before it of a higher level, nesting at most ``MAX_DEPTH`` deep."""
    open_chapters: list[tuple[int, int]] = []  # (level, index), shallowest first
    out: list[int | None] = []
    for index, level in enumerate(levels):
        while open_chapters and (open_chapters[-1][0] >= level or len(open_chapters) >= MAX_DEPTH):
            open_chapters.pop()
        out.append(open_chapters[-1][1] if open_chapters else None)
        open_chapters.append((level, index))
    return out


def with_descendants(chosen, levels: list[int]) -> list[int]:
    """The chapters ``chosen`` (0-based) and every chapter under them, in reading order."""
    chosen = set(chosen)
    picked: list[bool] = []
    for index, parent in enumerate(parents(levels)):
        picked.append(index in chosen or (parent is not None and picked[parent]))
    return [i for i, p in enumerate(picked) if p]
