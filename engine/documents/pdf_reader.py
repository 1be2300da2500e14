"""PDF: the text of the pages as paragraphs a reader would read, through PDFium (pypdfium2) (Qt-free).

PDFium was chosen on evidence (docs/documents.md#choosing-the-pdf-extractor, bench/tuning/pdf_extractors.py):
on four real manuals it kept word spacing where pypdf ran words together, kept reading order at least as well
as pdfminer.six, and read a page faster than either. Its text comes line by line (pdf_lines.py) with each
character's box and font size; from those this module removes what is printed but not read: contents and index
pages, running headers and footers and page numbers (pdf_furniture.py), and footnote markers (pdf_footnotes.py:
a digit is removed only as a mark with its note); it joins words hyphenated at a line end (PDFium marks them)
unless the document spells the word with its hyphen elsewhere (pdf_words.py); it rebuilds paragraphs across
lines, columns and pages (a paragraph ends at a wider gap, a line short of its column's edge, a change of size,
an indent, a list bullet or a reference's "[17]"), and moves each note (a FOOTNOTE block) right after the
paragraph holding its mark, or, where no mark was found, after the paragraph its page break cut. Bookmarks give
chapters (pdf_bookmarks.py); without them, larger type gives headings.
"""

from __future__ import annotations

import re
import statistics
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from engine.core.text.reading_policy import code_kind
from engine.documents.model import CODE, FOOTNOTE, MAX_PDF_PAGES, Block, Document, DocumentError, Parsed, TocEntry
from engine.documents.pdf_bookmarks import mark_bookmarks, read_bookmarks
from engine.documents.pdf_footnotes import (
    drop_footnote_marks,
    rejoin_printed_lines,
)
from engine.documents.pdf_furniture import strip_furniture
from engine.documents.pdf_lines import Line, Page, printed_lines, read_line
from engine.documents.pdf_words import HYPHEN_MARK, compose_accents, join_lines, resolve_hyphens

MAX_PAGE_CHARS = 1_000_000  # characters of one page; a dense printed page holds under 10,000
_LINE = re.compile(r"[^\r\n]+")
# a list item's or reference's start: a bullet, "1.", "(a)", "[17]" (its next lines, indented, continue it)
_BULLET = re.compile(r"^(?:[•◦▪▫‣∙·●○■□➢►–—*]\s|\(?\d{1,2}[.)]\s|\(?[a-z][.)]\s|\[\d{1,4}\]\s)")
_NOTE_START = re.compile(r"^(?:[∗*†‡§¶]|\d{1,3}\s?[A-Za-z(“\"])")  # a note's first words: its mark or number
_TERMINAL = re.compile(r"[.!?:;…][\"'”’)\]]*$")


def read_pdf(path: Path, doc: Document) -> Parsed:
    import pypdfium2 as pdfium

    try:
        pdf = pdfium.PdfDocument(str(path))
    except pdfium.PdfiumError as e:
        if "password" in str(e).lower():
            raise DocumentError(f"“{path.name}” is password protected.") from e
        raise DocumentError(f"“{path.name}” is not a valid PDF file ({e}).") from e
    try:
        if len(pdf) > MAX_PDF_PAGES:
            raise DocumentError(f"“{path.name}” has {len(pdf):,} pages, more than the {MAX_PDF_PAGES:,} "
                                "Orator opens.")
        pages = []
        unreadable = 0
        for i in range(len(pdf)):
            try:
                pages.append(_page(pdf, i, path.name))
            except pdfium.PdfiumError:
                unreadable += 1  # a damaged page costs that page, not the document
                pages.append(Page(i, 842.0))
        if unreadable:
            doc.warnings.append(f"{unreadable} page(s) of the PDF could not be read and were skipped.")
        metadata = pdf.get_metadata_dict(skip_empty=True)
        bookmarks = read_bookmarks(pdf)
    finally:
        pdf.close()
    drop_footnote_marks(pages)
    if not any(page.lines for page in pages):
        raise DocumentError(f"“{path.name}” holds no text, only images (scanned pages need OCR, which Orator "
                            "does not do).")
    blocks = _paragraphs(pages, bookmarks)
    title = metadata.get("Title", "")
    toc = [TocEntry(title_, level, f"bookmark{i}") for i, (title_, level, _) in enumerate(bookmarks)]
    return Parsed(blocks, title if title.lower() not in ("untitled", "") else "", metadata.get("Author", ""),
                  toc or None, {f"bookmark{i}": f"page{p}" for i, (_, _, p) in enumerate(bookmarks)})


def _page(pdf, index: int, name: str) -> Page:
    page = pdf[index]
    try:
        width, height = page.get_size()
        textpage = page.get_textpage()
        try:
            if textpage.count_chars() > MAX_PAGE_CHARS:
                raise DocumentError(f"Page {index + 1} of “{name}” holds more than {MAX_PAGE_CHARS:,} characters, "
                                    "more than Orator reads on one page.")
            # PDFium marks a hyphen it takes for a line-end one with U+0002, in some files U+FFFE
            text = textpage.get_text_range().replace("\ufffe", HYPHEN_MARK)
            result = Page(index, height)
            for m in _LINE.finditer(text):
                for first, last in printed_lines(textpage, text, m.start(), m.end()):
                    if (line := read_line(textpage, text, first, last)) is not None:
                        result.lines.append(line)
            result.lines = rejoin_printed_lines(result.lines)
            return result
        finally:
            textpage.close()
    finally:
        page.close()


# ---- paragraphs ---------------------------------------------------------------------------------------
def _paragraphs(pages: list[Page], bookmarks: list[tuple[str, int, int]]) -> list[_Block]:
    strip_furniture(pages)
    body_lines = [line for page in pages for line in page.lines]
    if not body_lines:
        return []
    sizes = Counter()
    for line in body_lines:
        sizes[line.size] += len(line.text)
    body_size = sizes.most_common(1)[0][0]
    pitches = [a.y_end - b.y for page in pages for a, b in zip(page.lines, page.lines[1:], strict=False)
               if a.size == b.size == body_size and 0 < a.y_end - b.y < 3 * body_size]
    pitch = statistics.median(pitches) if pitches else 1.2 * body_size
    rights = sorted(line.x1 for line in body_lines if line.size == body_size)
    lefts = sorted(line.x0 for line in body_lines if line.size == body_size)
    default = (lefts[len(lefts) // 2], rights[int(0.9 * (len(rights) - 1))]) if rights else (0.0, 0.0)
    heading_sizes = sorted({s for s in sizes if s >= body_size * 1.15}, reverse=True)
    # lines all in a monospaced font are code, unless most of the document is set so (a typewritten text)
    code = 2 * sum(len(line.text) for line in body_lines if line.mono) < sum(sizes.values())
    level_of = {s: min(i + 1, 6) for i, s in enumerate(heading_sizes)}

    blocks: list[_Block] = []
    footnotes: list[_Block] = []
    for page in pages:
        page_blocks: list[_Block] = []
        current: list[Line] = []
        columns = _columns(page.lines, body_size) or [default]
        for line in page.lines:
            if current and _breaks(current[-1], line, current[0], pitch, columns, body_size, code):
                page_blocks.append(_block(current, body_size, level_of, code))
                current = []
            current.append(line)
        if current:
            page_blocks.append(_block(current, body_size, level_of, code))
        # small type at the bottom of a page is footnotes: read after the paragraph they interrupt
        trailing: list[_Block] = []
        while page_blocks and page_blocks[-1].level == 0 and page_blocks[-1].small:
            trailing.insert(0, page_blocks.pop())
        in_note = False
        for block in trailing:  # a note's first block starts with its mark or number, the next go on with it
            in_note = in_note or block.note or bool(_NOTE_START.match(block.text))
            if in_note:
                block.kind = FOOTNOTE  # a caption in small type at a page's foot is no note
        # notes at the foot of a column other than the last come mid-page in reading order
        notes = [b for b in page_blocks if _is_column_note(b, page.height)]
        if notes:
            page_blocks = [b for b in page_blocks if b not in notes]
            for note in notes:
                note.kind = FOOTNOTE
            trailing = notes + trailing
        if page_blocks:
            page_blocks[0].anchors.append(f"page{page.number}")
            first = page_blocks[0]
            if blocks and _continues(blocks[-1], first):
                blocks[-1].text = join_lines(blocks[-1].text, first.text)
                blocks[-1].anchors.extend(first.anchors)
                blocks[-1].refs.extend(first.refs)
                page_blocks = page_blocks[1:]
            blocks.extend(footnotes)
            footnotes = []
        elif trailing:
            trailing[0].anchors.append(f"page{page.number}")
        blocks.extend(page_blocks)
        footnotes.extend(trailing)
    blocks.extend(footnotes)
    blocks = _notes_after_their_paragraphs(blocks)
    if bookmarks:
        mark_bookmarks(blocks, bookmarks)
    resolve_hyphens(blocks)
    for block in blocks:
        block.text = compose_accents(block.text)
    return blocks


def _columns(lines: list[Line], body_size: float) -> list[tuple[float, float]]:
    """(left, right) of the page's text columns: body lines grouped by where they start, a group of four or
    more being a column whose right edge is where nine in ten of its lines end at most."""
    groups: dict[int, list[float]] = {}
    for line in lines:
        if abs(line.size - body_size) < 0.5:
            groups.setdefault(round(line.x0 / 6), []).append(line.x1)
    columns = []
    for key, ends in groups.items():
        if len(ends) >= 4:
            ends.sort()
            columns.append((key * 6.0, ends[int(0.9 * (len(ends) - 1))]))
    return sorted(columns)


def _column_of(line: Line, columns: list[tuple[float, float]]) -> tuple[float, float]:
    """The column ``line`` starts in: the nearest whose left edge is at or before it, else the first."""
    inside = [c for c in columns if c[0] <= line.x0 + 3 < c[1]]
    return max(inside) if inside else columns[0]


def _breaks(prev: Line, line: Line, first: Line, pitch: float, columns: list[tuple[float, float]],
            body_size: float, code: bool = False) -> bool:
    """True when ``line`` starts a new paragraph after ``prev`` (``first`` is the paragraph's first line); with
    ``code``, lines of code (monospaced) go on to a wider gap, whatever their lengths and indents."""
    if abs(prev.size - line.size) > 0.5 or line.starts_note or prev.mono != line.mono:
        return True
    gap = prev.y_end - line.y
    left, right = _column_of(prev, columns)
    if gap < 0:
        # a jump up: the top of the next column continues a sentence the last one left open
        return not (line.x0 >= right - 5 and line.size <= 1.05 * body_size and not _TERMINAL.search(prev.text))
    if gap > 1.4 * max(pitch * line.size / body_size, 1.0):
        return True  # a wider gap
    if code and line.mono:
        return False  # a listing's short and indented lines are one block
    if _BULLET.match(line.text):
        return True
    if line.size > 1.05 * body_size:
        return False  # a heading wraps over short lines
    if prev.x1 < right - 0.12 * max(right - left, 1.0) and prev.text[-1:] != HYPHEN_MARK:
        return True  # a short line ends its paragraph
    if line.x0 > prev.x0 + 0.8 * line.size and not _BULLET.match(first.text):
        # an indented first line, unless the line before is a full first line that ends no sentence: then the
        # indent hangs, as a definition's or a reference's lines do under its term
        return not (prev is first and not _TERMINAL.search(prev.text))
    return False


@dataclass
class _Block(Block):
    size: float = 0.0  # the type size of its first line
    small: bool = False  # smaller than the body type: a footnote, a caption
    note: bool = False  # its first line starts a footnote whose mark was found (pdf_footnotes)
    y: float = 0.0  # its first line's baseline, from the page's bottom
    first: Line | None = None  # its first line
    refs: list[Line] = field(default_factory=list)  # first lines of the notes whose marks it holds


def _notes_after_their_paragraphs(blocks: list[_Block]) -> list[_Block]:
    """``blocks`` with each note whose mark was found right after the paragraph that holds the mark (a note
    placed at its page's foot may otherwise come a paragraph or more later); its anchors stay where it was."""
    notes = {id(b.first): b for b in blocks if b.kind == FOOTNOTE and b.first is not None}
    heads = {id(notes[id(n)]) for b in blocks for n in b.refs if id(n) in notes and notes[id(n)] is not b}
    groups: dict[int, list[_Block]] = {}  # a note's first block -> it and the blocks that go on with it
    moved: set[int] = set()
    head = None
    for block in blocks:
        if id(block) in heads:
            head = groups.setdefault(id(block), [block])
        elif head is not None and block.kind == FOOTNOTE and not block.note:
            head.append(block)
        else:
            head = None
            continue
        moved.add(id(block))
    out: list[_Block] = []
    carried: list[str] = []
    for block in blocks:
        if id(block) in moved:
            carried += block.anchors
            block.anchors = []
            continue
        block.anchors = carried + block.anchors
        carried = []
        pending = [block]
        while pending:  # the block, then its notes, then the notes their text refers to
            current = pending.pop(0)
            out.append(current)
            pending[:0] = [b for n in current.refs if id(n) in notes for b in groups.pop(id(notes[id(n)]), [])]
    for group in groups.values():  # a note whose only reference lies in a note read before it
        out.extend(group)
    if carried and out:
        out[-1].anchors.extend(carried)
    return out


def _is_column_note(block: _Block, height: float) -> bool:
    """A block in small type in the page's lowest quarter that starts with a note's mark or number."""
    return block.small and not block.level and block.y < 0.25 * height \
        and (block.note or bool(_NOTE_START.match(block.text)))


def _block(lines: list[Line], body_size: float, level_of: dict[float, int], code: bool = False) -> _Block:
    """A paragraph of ``lines``; with ``code``, lines all in a monospaced font are a CODE block, line by line."""
    is_code = code and lines[0].mono and not lines[0].starts_note
    text = lines[0].text
    for line in lines[1:]:
        text = f"{text}\n{line.text}" if is_code else join_lines(text, line.text)
    size = lines[0].size
    level = level_of.get(size, 0) if len(text) <= 200 and not is_code else 0
    block = _Block(text, level, size=size, note=lines[0].starts_note, y=lines[0].y, first=lines[0],
                   refs=[note for line in lines for note in line.notes])
    if is_code:
        block.kind = code_kind(text)
    if size < body_size * 0.9:
        block.small = True
    return block


def _continues(prev: _Block, nxt: _Block) -> bool:
    """A paragraph cut by a page break: body text on both sides and no sentence end before the break."""
    if prev.level or nxt.level or prev.small or nxt.small or CODE in (prev.kind, nxt.kind):
        return False
    if _BULLET.match(nxt.text):
        return False
    return prev.text.endswith(HYPHEN_MARK) or not _TERMINAL.search(prev.text)
