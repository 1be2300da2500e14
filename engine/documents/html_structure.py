"""What an HTML element is when read aloud: a code block, a list item, a definition, a footnote and the marks that
refer to it, a data table's rows read with their column headers (tables.py: the rows of ``<thead>``, or a first row
of ``<th>`` cells, are the headers) (Qt-free). html_reader's walk asks these.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from itertools import islice

from engine.core.text.spoken_symbols import superscript
from engine.documents.model import CODE, DEFINITION, FOOTNOTE, LIST_ITEM, Block
from engine.documents.tables import row_blocks

CODE_TAGS = frozenset({"pre", "listing", "xmp", "plaintext"})
# classes generators give a block of code or a terminal transcript (DocBook, Sphinx, Texinfo, sisu, Pandoc, Hugo)
CODE_CLASSES = frozenset({"code", "screen", "programlisting", "synopsis", "cmdsynopsis", "verbatim", "highlight",
                          "sourcecode", "codehilite", "literal-block", "example", "smallexample", "lisp",
                          "console", "shell", "terminal", "code-block", "codeblock"})
_CODE_CLASS_PREFIXES = ("language-", "lang-", "highlight-", "sourcecode-")
_CODE_CONTAINERS = frozenset({"p", "div", "pre", "blockquote", "section", "figure", "table"})
# a note: EPUB's epub:type, ARIA's role, or a generator's class (DocBook's div.footnote, docutils' aside.footnote)
NOTE_TYPES = frozenset({"footnote", "endnote", "rearnote"})
NOTE_ROLES = frozenset({"doc-footnote", "doc-endnote"})
NOTE_CLASSES = frozenset({"footnote", "endnote"})
# a list of notes whose items are the notes (Pandoc's section.footnotes, EPUB's endnotes sections)
NOTES_TYPES = frozenset({"footnotes", "endnotes", "rearnotes"})
NOTES_ROLES = frozenset({"doc-endnotes"})
NOTES_CLASSES = frozenset({"footnotes", "endnotes"})
_NOTE_ITEMS = frozenset({"li", "dd", "p", "div", "aside"})
_NOTE_TAGS = frozenset({"div", "aside", "li", "p", "dd", "section", "table", "tr"})
EPUB_TYPE = "{http://www.idpf.org/2007/ops}type"
_SPACE = re.compile(r"\s+")


def _local(el) -> str:
    tag = el.tag
    return tag.rsplit("}", 1)[-1].rsplit(":", 1)[-1].lower() if isinstance(tag, str) else ""


def _words(el, name: str) -> set[str]:
    value = el.get(name) if name != "epub:type" else (el.get(EPUB_TYPE) or el.get("epub:type"))
    return set((value or "").lower().split())


def block_kind(el, name: str) -> str | None:
    """The kind a block element gives what it holds, or None where it gives none (a ``<p>`` is its parent's)."""
    if name in CODE_TAGS:
        return CODE
    if name in _NOTE_TAGS and is_note(el, name):
        return FOOTNOTE
    if name == "li":
        return LIST_ITEM
    if name in ("dt", "dd"):
        return DEFINITION
    if name in _CODE_CONTAINERS and el.get("class"):
        classes = _words(el, "class")
        if classes & CODE_CLASSES or any(c.startswith(_CODE_CLASS_PREFIXES) for c in classes):
            return CODE
    return None


def is_note(el, name: str) -> bool:
    """Whether ``el`` is one footnote or endnote (not the list that holds them)."""
    if _words(el, "epub:type") & NOTE_TYPES or _words(el, "role") & NOTE_ROLES:
        return True
    if name in ("div", "aside", "table", "dl") and _words(el, "class") & NOTE_CLASSES and el.get("id"):
        return True
    if name in _NOTE_ITEMS and el.get("id"):
        parent = el.getparent()
        for _ in range(2):  # <section class="footnotes"><ol><li id="fn1">
            if parent is None:
                break
            if _words(parent, "epub:type") & NOTES_TYPES or _words(parent, "role") & NOTES_ROLES \
                    or _words(parent, "class") & NOTES_CLASSES:
                return True
            parent = parent.getparent()
    return False


def notes_by_id(body) -> dict[str, object]:
    """The page's notes by their ``id`` (a note whose id sits on a link or heading inside it is found by that id
    too, as DocBook and docutils write them)."""
    notes: dict[str, object] = {}
    for el in body.iter():
        if not isinstance(el.tag, str) or el.get("id") is None:
            continue
        name = _local(el)
        if name in _NOTE_TAGS and is_note(el, name):
            notes[el.get("id")] = el
    return notes


_TEXINFO_MARK = re.compile(r"\(\d{1,4}\)")
_HEADINGS = frozenset({"h1", "h2", "h3", "h4", "h5", "h6"})


def gather_texinfo_notes(body) -> None:
    """Texinfo writes a note as a heading holding its number, a link back to its mark ("<h5><a id="FOOT1"
    href="#DOCF1">(1)</a></h5>"), then the note's paragraphs: each such run is put in one ``div.footnote`` with
    the link's id, so the note is found, and read after its paragraph, as any other note is."""
    from lxml import etree

    for link in list(body.iter("a", "{http://www.w3.org/1999/xhtml}a")):
        heading = link.getparent()
        if heading is None or _local(heading) not in _HEADINGS or not link.get("id") \
                or not (link.get("href") or "").startswith("#") \
                or not _TEXINFO_MARK.fullmatch((link.text or "").strip()) or (heading.text or "").strip():
            continue
        note = etree.Element(heading.tag.replace(_local(heading), "div"), {"class": "footnote", "id": link.get("id")})
        heading.addprevious(note)
        sibling = note.getnext()
        while sibling is not None and (sibling is heading or _local(sibling) not in _HEADINGS | {"hr"}):
            after = sibling.getnext()
            note.append(sibling)  # moves it, its tail with it
            sibling = after
        del link.attrib["id"]


def note_reference(el, name: str, notes: dict[str, object]) -> str | None:
    """The id of the note that ``el`` (a link, or a superscript holding one) refers to on this page, or None."""
    if not notes or name not in ("a", "sup", "span"):
        return None
    link = el if name == "a" else next((a for a in islice(el.iter(), 8) if _local(a) == "a"), None)
    href = (link.get("href") or "").strip() if link is not None else ""
    return href[1:] if href.startswith("#") and href[1:] in notes else None


# ---- tables ---------------------------------------------------------------------------------------------------
def _span(cell) -> int:
    value = (cell.get("colspan") or "1").strip()
    return min(int(value), 64) if value.isdigit() and int(value) > 0 else 1


def table_rows(table, inline: Callable[[object], str]) -> list[Block]:
    """The caption and rows of a data table as blocks (see the module docstring); ``inline`` gives a cell's text.
    Rows of nested tables are left to their own table."""
    rows: list[tuple[list[tuple[str, int, bool]], bool]] = []  # (cells (text, span, is th), in thead)
    caption: str | None = None
    for child in table:
        name = _local(child)
        if name == "caption" and caption is None:
            caption = inline(child)
        sections = [(child, False)] if name == "tr" else \
            [(tr, name == "thead") for tr in child if _local(tr) == "tr"] if name in ("thead", "tbody", "tfoot") else []
        for tr, in_head in sections:
            rows.append(([(inline(c), _span(c), _local(c) == "th") for c in tr if _local(c) in ("td", "th")], in_head))
    header_rows = [cells for cells, head in rows if head]
    body = [cells for cells, head in rows if not head]
    if not header_rows and len(body) > 1 and all(is_th for _, _, is_th in body[0]):
        header_rows, body = [body[0]], body[1:]
    strip = [[(text, span) for text, span, _ in cells] for cells in header_rows], \
        [[(text, span) for text, span, _ in cells] for cells in body]
    return ([Block(caption)] if caption else []) + row_blocks(*strip)


_RAISED_DIGITS = re.compile(r"[-+−]?\d{1,6}")


def raised_digits(el) -> str | None:
    """The text of a ``<sup>`` that holds a number alone ("256", "-3"), written as superscript characters, or
    None: a power after a number, a mark after a word (engine.core.text.spoken_symbols says which)."""
    if len(el) or not el.text or not _RAISED_DIGITS.fullmatch(el.text.strip()):
        return None
    return superscript(el.text.strip().replace("−", "-"))


def one_line(text: str) -> str:
    return _SPACE.sub(" ", text).strip()
