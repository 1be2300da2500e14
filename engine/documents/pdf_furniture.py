"""PDF furniture: what a PDF page prints but a reader does not read, found among its lines (Qt-free): running
headers and footers (a line in the top or bottom band, apart from the text, repeated on three pages or more, or on
two of a document under ten pages), page numbers, and contents and index pages (dot leaders, lines ending in page
numbers)."""

from __future__ import annotations

import re
import statistics
from collections import Counter

from engine.documents.pdf_lines import Line, Page

# a running header or footer lies within EDGE_BAND of the page's height from its top or bottom (a journal's header
# sits lower than a manual's); a page number, or a line known by its place alone, within NARROW_BAND
EDGE_BAND = 0.12
NARROW_BAND = 0.08
_LEADERS = re.compile(r"(?:\.\s*){4,}\s*(?:[\dIVXLCDMivxlcdm]+)?\s*$|(?:\.\s?){3,}\s*\d+\s*$")
_INDEX_ENTRY = re.compile(r",\s*\d{1,4}(?:[–-]\d{1,4})?(?:,\s*\d{1,4}(?:[–-]\d{1,4})?)*\s*$")
_ENDS_WITH_PAGE = re.compile(r"\S\s+(?:\d{1,4}|[ivxlcdm]{1,6})\s*$")
_PAGE_NUMBER = re.compile(r"^(?:page\s*)?[\[(–—-]?\s*(?:\d{1,4}|[ivxlcdm]{1,7})\s*[\])–—-]?"
                          r"(?:\s*(?:/|of)\s*\d{1,4})?$", re.IGNORECASE)
_DIGITS = re.compile(r"\d+")
_ROMAN_WORD = re.compile(r"\b[ivxlcdm]{1,7}\b")


def strip_furniture(pages: list[Page]) -> None:
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
