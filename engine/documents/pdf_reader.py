"""PDF: the text of the pages as paragraphs a reader would read, through PDFium (pypdfium2) (Qt-free).

PDFium was chosen on evidence (docs/documents.md#choosing-the-pdf-extractor, bench/tuning/pdf_extractors.py):
on four real manuals it kept word spacing where pypdf ran words together, kept reading order at least as well
as pdfminer.six, and read a page faster than either. Its text comes line by line (pdf_lines.py) with each
character's box and font size; from those this module removes what is printed but not read: contents and index
pages (dot leaders, lines ending in page numbers), running headers and footers (a line in the top or bottom band,
apart from the text, repeated on three pages or more, or on two of a document under ten pages), page numbers and
footnote markers (pdf_footnotes.py: a digit is removed only as a mark with its note); it joins words
hyphenated at a line end (PDFium marks them) unless the document spells the word with its hyphen
elsewhere; it rebuilds paragraphs across lines, columns and pages (a paragraph ends at a wider gap,
a line short of its column's edge, a change of size, an indent, a list bullet or a reference's "[17]"),
and moves each note (a FOOTNOTE block) right after the paragraph holding its mark, or, where no mark was
found, after the paragraph its page break cut. Bookmarks give chapters; without them, larger type gives headings.
"""

from __future__ import annotations

import re
import statistics
import unicodedata
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from engine.core.text.reading_policy import code_kind
from engine.documents.model import CODE, FOOTNOTE, MAX_PDF_PAGES, Block, Document, DocumentError, Parsed, TocEntry
from engine.documents.pdf_footnotes import (
    drop_footnote_marks,
    rejoin_printed_lines,
)
from engine.documents.pdf_lines import Line, Page, printed_lines, read_line

# a running header or footer lies within EDGE_BAND of the page's height from its top or bottom (a journal's header
# sits lower than a manual's); a page number, or a line known by its place alone, within NARROW_BAND
EDGE_BAND = 0.12
NARROW_BAND = 0.08
MAX_PAGE_CHARS = 1_000_000  # characters of one page; a dense printed page holds under 10,000
HYPHEN_MARK = "\x02"  # what PDFium puts for a hyphen at a line end
_LINE = re.compile(r"[^\r\n]+")
_LEADERS = re.compile(r"(?:\.\s*){4,}\s*(?:[\dIVXLCDMivxlcdm]+)?\s*$|(?:\.\s?){3,}\s*\d+\s*$")
_INDEX_ENTRY = re.compile(r",\s*\d{1,4}(?:[–-]\d{1,4})?(?:,\s*\d{1,4}(?:[–-]\d{1,4})?)*\s*$")
_ENDS_WITH_PAGE = re.compile(r"\S\s+(?:\d{1,4}|[ivxlcdm]{1,6})\s*$")
_PAGE_NUMBER = re.compile(r"^(?:page\s*)?[\[(–—-]?\s*(?:\d{1,4}|[ivxlcdm]{1,7})\s*[\])–—-]?"
                          r"(?:\s*(?:/|of)\s*\d{1,4})?$", re.IGNORECASE)
# a list item's or reference's start: a bullet, "1.", "(a)", "[17]" (its next lines, indented, continue it)
_BULLET = re.compile(r"^(?:[•◦▪▫‣∙·●○■□➢►–—*]\s|\(?\d{1,2}[.)]\s|\(?[a-z][.)]\s|\[\d{1,4}\]\s)")
_NOTE_START = re.compile(r"^(?:[∗*†‡§¶]|\d{1,3}\s?[A-Za-z(“\"])")  # a note's first words: its mark or number
_TERMINAL = re.compile(r"[.!?:;…][\"'”’)\]]*$")
_DIGITS = re.compile(r"\d+")
_ROMAN_WORD = re.compile(r"\b[ivxlcdm]{1,7}\b")
_HYPHENATED = re.compile(rf"(\w+)[{HYPHEN_MARK}-]{HYPHEN_MARK}?(\w+)")
_ACCENTS = {"¨": "\u0308", "´": "\u0301", "ˆ": "\u0302", "˜": "\u0303", "¸": "\u0327", "˚": "\u030a",
            "ˇ": "\u030c", "˘": "\u0306", "˝": "\u030b", "¯": "\u0304", "˙": "\u0307"}
_SPACING_ACCENT = re.compile(f"([{''.join(_ACCENTS)}])([^\\W\\d_])")
_WORDS = re.compile(r"\w+(?:-\w+)*")
_NUMBER_PREFIX = re.compile(r"^(?:(?:chapter|part|appendix|section)\s+)?(?:\d{1,4}\s+)*")  # of normalized text


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
        bookmarks = _bookmarks(pdf)
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


def _bookmarks(pdf) -> list[tuple[str, int, int]]:
    """(title, level from 1, page index) of the bookmarks that point at a page."""
    out = []
    try:
        for bookmark in pdf.get_toc(max_depth=8):
            dest = bookmark.get_dest()
            page = dest.get_index() if dest is not None else None
            title = " ".join((bookmark.get_title() or "").split())
            if page is not None and title:
                out.append((title, bookmark.level + 1, page))
    except Exception:  # a broken outline costs the chapters, not the book
        return []
    return out


# ---- what is printed but not read -------------------------------------------------------------------
def _strip_furniture(pages: list[Page]) -> None:
    """Removes running headers/footers, page numbers and contents and index pages, in place."""
    pitches = [a.y_end - b.y for page in pages for a, b in zip(page.lines, page.lines[1:], strict=False)
               if a.size == b.size and 0 < a.y_end - b.y < 3 * a.size]
    pitch = statistics.median(pitches) if pitches else 12.0
    edges = [_edge_lines(page, pitch) for page in pages]
    keys = [{line: _keys(line, page) for line in lines} for page, lines in zip(pages, edges, strict=True)]
    counts = Counter()
    for page_keys in keys:
        counts.update({k for line_keys in page_keys.values() for k in line_keys})
    # a paper of a few pages alternates two headers (title, authors), each on every other page after the first
    repeated = {key for key, n in counts.items() if n >= (3 if len(pages) >= 10 else 2)}
    for page, page_keys in zip(pages, keys, strict=True):
        furniture = {line for line, line_keys in page_keys.items()
                     if _PAGE_NUMBER.match(line.text) and _in_band(line, page, NARROW_BAND)
                     or any(k in repeated for k in line_keys)}
        page.lines = [line for line in page.lines if line not in furniture]
        leaders = sum(bool(_LEADERS.search(line.text)) for line in page.lines)
        numbered = sum(bool(_LEADERS.search(line.text) or _ENDS_WITH_PAGE.search(line.text)) for line in page.lines)
        entries = sum(bool(_INDEX_ENTRY.search(line.text)) for line in page.lines)
        if leaders >= 3 and numbered >= 0.6 * len(page.lines) or entries >= 5 and entries >= 0.5 * len(page.lines):
            page.lines = []  # a contents page, a list of tables, an index: titles and page numbers
        else:
            page.lines = [line for line in page.lines if not _LEADERS.search(line.text)]


def _keys(line: Line, page: Page) -> tuple[str, ...]:
    """What repeats in a running header or footer: its text with numbers masked, the first three words of
    that (a header naming the current section changes after them), or, nearest the edge, its place on the page
    (deeper in, a heading at the top of several pages shares its place)."""
    key = _ROMAN_WORD.sub("#", _DIGITS.sub("#", line.text.lower()))
    keys = key, "prefix:" + " ".join(key.split()[:3])
    return keys + (f"place:{round(line.y / 2)}:{line.size}",) if _in_band(line, page, NARROW_BAND) else keys


def _in_band(line: Line, page: Page, band: float) -> bool:
    return line.y > page.height * (1 - band) or line.top < page.height * band


def _edge_lines(page: Page, pitch: float, band: float = EDGE_BAND) -> list[Line]:
    """Lines in the page's top or bottom band set apart from the text by a wider gap than between lines,
    wherever they come in the text's order."""
    out = []
    for line in page.lines:
        if line.y > page.height * (1 - band):
            below = [o.y for o in page.lines if o.y < line.y - 0.5]
            if not below or line.y - max(below) >= 1.5 * pitch:
                out.append(line)
        elif line.top < page.height * band:
            above = [o.y for o in page.lines if o.y > line.y + 0.5]
            if not above or min(above) - line.y >= 1.5 * pitch:
                out.append(line)
    return out


# ---- paragraphs ---------------------------------------------------------------------------------------
def _paragraphs(pages: list[Page], bookmarks: list[tuple[str, int, int]]) -> list[_Block]:
    _strip_furniture(pages)
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
                blocks[-1].text = _join(blocks[-1].text, first.text)
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
        _mark_bookmarks(blocks, bookmarks)
    _resolve_hyphens(blocks)
    for block in blocks:
        block.text = _compose_accents(block.text)
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
        text = f"{text}\n{line.text}" if is_code else _join(text, line.text)
    size = lines[0].size
    level = level_of.get(size, 0) if len(text) <= 200 and not is_code else 0
    block = _Block(text, level, size=size, note=lines[0].starts_note, y=lines[0].y, first=lines[0],
                   refs=[note for line in lines for note in line.notes])
    if is_code:
        block.kind = code_kind(text)
    if size < body_size * 0.9:
        block.small = True
    return block


def _join(a: str, b: str) -> str:
    if a.endswith(HYPHEN_MARK) or (a.endswith("-") and a[-2:-1].isalpha() and b[:1].islower()):
        return a[:-1] + HYPHEN_MARK + b  # resolved once the whole document's words are known
    return f"{a} {b}"


def _continues(prev: _Block, nxt: _Block) -> bool:
    """A paragraph cut by a page break: body text on both sides and no sentence end before the break."""
    if prev.level or nxt.level or prev.small or nxt.small or CODE in (prev.kind, nxt.kind):
        return False
    if _BULLET.match(nxt.text):
        return False
    return prev.text.endswith(HYPHEN_MARK) or not _TERMINAL.search(prev.text)


def _compose_accents(text: str) -> str:
    """"M¨oller" -> "Möller": TeX prints an accent as a glyph of its own before its letter."""
    if not _SPACING_ACCENT.search(text):
        return text
    return unicodedata.normalize("NFC", _SPACING_ACCENT.sub(lambda m: m.group(2) + _ACCENTS[m.group(1)], text))


def _resolve_hyphens(blocks: list[Block]) -> None:
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


# ---- bookmarks --------------------------------------------------------------------------------------
def _normal(text: str) -> str:
    return " ".join(re.sub(r"[^\w\s]", " ", text.replace(HYPHEN_MARK, "").lower()).split())


def _merge_wrapped_title(blocks: list[_Block], page_of: list[int], j: int, wanted: str) -> None:
    while j + 1 < len(blocks) and blocks[j + 1].size == blocks[j].size:
        joined = _NUMBER_PREFIX.sub("", _normal(f"{blocks[j].text} {blocks[j + 1].text}"))
        if not wanted.startswith(joined):
            return
        blocks[j].text = f"{blocks[j].text} {blocks[j + 1].text}"
        blocks[j].anchors.extend(blocks[j + 1].anchors)
        del blocks[j + 1], page_of[j + 1]


def _mark_bookmarks(blocks: list[Block], bookmarks: list[tuple[str, int, int]]) -> None:
    """Each bookmark names the block on its page (or the next) that begins with its title, which becomes a
    heading of the bookmark's level; a bookmark with no such block points at its page."""
    page_of: list[int] = []
    page = -1
    for block in blocks:
        for anchor in block.anchors:
            if anchor.startswith("page"):
                page = int(anchor[4:])
        page_of.append(page)
    start = 0
    matched: set[int] = set()
    size_levels: Counter = Counter()
    for i, (title, level, page_index) in enumerate(bookmarks):
        wanted = _normal(title)
        if not wanted:
            continue
        for j in range(start, len(blocks)):
            if page_of[j] < page_index:
                continue
            if page_of[j] > page_index + 1:
                break
            text = _normal(blocks[j].text)
            core = _NUMBER_PREFIX.sub("", text)
            if blocks[j].level and len(core) >= len(wanted) // 2 and wanted.startswith(core):
                _merge_wrapped_title(blocks, page_of, j, wanted)  # a title the layout broke into blocks
                text = _normal(blocks[j].text)
            if text.startswith(wanted) or re.match(rf"^(?:\w{{1,12}} ){{0,4}}{re.escape(wanted)}\b", text):
                if len(text) <= len(wanted) + 40:
                    blocks[j].level = min(level, 6)
                    matched.add(j)
                    size_levels[(blocks[j].size, blocks[j].level)] += 1
                blocks[j].anchors.append(f"bookmark{i}")
                start = j
                break
    # other large type takes the level bookmarks give to its size, or none (a "Note", a table title)
    level_of_size: dict[float, int] = {}
    for (size, level), _ in size_levels.most_common():
        level_of_size.setdefault(size, level)
    for j, block in enumerate(blocks):
        if j not in matched and block.level:
            block.level = level_of_size.get(block.size, 0)
