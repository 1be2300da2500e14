"""DOCX: what a paragraph is beyond its text (a code listing, a list item) and the footnotes and endnotes it refers
to (Qt-free). docx_reader reads the body; these read a paragraph's style and the notes' parts.

A paragraph styled as code ("Source Text", "Preformatted Text", "HTML Preformatted", "Macro Text", "Code", in any
case, and styles named after them) is CODE; one with list numbering (``w:numPr``) or a "List ..." style is a list
item. A note is read after the paragraph that refers to it (the reading policy reads or skips it); the separator
notes Word keeps in the same part are not notes.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from engine.documents.model import LIST_ITEM

W = "{http://schemas.openxmlformats.org/wordprocessingml/2006/main}"
MAX_NOTES = 100_000  # notes of one part; a long annotated book has a few thousand
# a notes part is parsed whole (the body is streamed): a few MB for a long annotated book, and parsing costs about
# ten times its size in memory
MAX_NOTES_PART_BYTES = 32 << 20
_CODE_STYLE = re.compile(r"source\s*(?:text|code)|preformatted|macro\s*text|^code\b|\bcode$|listing|verbatim",
                         re.IGNORECASE)
_LIST_STYLE = re.compile(r"^list\b", re.IGNORECASE)


def code_style(style: str) -> bool:
    return bool(_CODE_STYLE.search(style))


def list_paragraph(p, style: str) -> str | None:
    """LIST_ITEM for a numbered or bulleted paragraph, else None."""
    if p.find(f"{W}pPr/{W}numPr") is not None or _LIST_STYLE.match(style):
        return LIST_ITEM
    return None


def read_notes(root, kind: str, paragraph_text: Callable[[object], str]) -> dict[tuple[str, str], str]:
    """(kind, id) -> the text of each note of a footnotes or endnotes part (its paragraphs on one line each)."""
    notes: dict[tuple[str, str], str] = {}
    if root is None:
        return notes
    for note in root.iter(f"{W}{kind}"):
        if note.get(f"{W}type") in ("separator", "continuationSeparator", "continuationNotice"):
            continue
        text = " ".join(" ".join(paragraph_text(p).split()) for p in note.iter(f"{W}p")).strip()
        if text and note.get(f"{W}id") is not None:
            notes[(kind, note.get(f"{W}id"))] = text
        if len(notes) >= MAX_NOTES:
            break
    return notes


def table_look_first_row(look) -> bool:
    """Whether a ``w:tblLook`` marks the table's first row (as a header row's style)."""
    if look is None:
        return False
    if look.get(f"{W}firstRow") is not None:
        return look.get(f"{W}firstRow") in ("1", "true", "on")
    value = look.get(f"{W}val") or ""
    return bool(re.fullmatch(r"[0-9A-Fa-f]{1,4}", value)) and bool(int(value, 16) & 0x20)
