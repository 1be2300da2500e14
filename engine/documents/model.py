"""The imported document (text plus structure) and the assembly every reader shares (Qt-free).

A reader turns a file into ``Block``s (paragraphs and headings, with the anchors they hold) and
optionally a table of contents (``TocEntry``s naming anchors); ``assemble`` cleans the blocks, joins
them with blank lines into ``Document.text`` and turns headings and contents entries into character
spans of that text. The cleaning is where the rules for reading aloud live: no block without a word
or number, standalone section numbers joined with their heading or dropped, "6.1." never a sentence.
"""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass, field
from pathlib import Path

from engine.core.text.block_kinds import (  # noqa: F401 (the kinds are the readers' vocabulary, imported from here)
    CODE,
    DEFINITION,
    DIAGRAM,
    FOOTNOTE,
    FORMULA,
    HEADING,
    KINDS,
    LIST_ITEM,
    PARAGRAPH,
    PROSE,
    SESSION,
    TABLE_ROW,
)

# Bounds that keep a hostile or absurd file from exhausting memory or time; each is far above a real book.
MAX_FILE_BYTES = 1 << 30  # any file (PDFs are read from disk page by page, the others into memory)
MAX_MARKUP_BYTES = 256 << 20  # a text, Markdown or HTML file read whole
MAX_MARKDOWN_BYTES = 32 << 20  # lower: Markdown's inline parsing is the costliest per byte on hostile input
MAX_UNPACKED_BYTES = 512 << 20  # what may be unpacked from one EPUB or DOCX archive
MAX_PDF_PAGES = 10_000
MAX_TEXT_CHARS = 128_000_000  # the extracted text
# tags of one HTML page, or of all an EPUB's pages: each costs a few hundred bytes parsed (2 million: under 1 GB),
# and a dense real manual holds well under a million
MAX_MARKUP_TAGS = 2_000_000
# heading levels a document without a contents gets chapters from: h1 > h2 > h3, not every h5 of a manual
MAX_HEADING_CHAPTER_LEVELS = 3
TITLE_BLOCK_CHARS = 3000  # a book's title headings and what they introduce (a copyright notice) before its chapters
_AS_WRITTEN = frozenset({CODE, SESSION, TABLE_ROW, FORMULA, DIAGRAM})  # kept whole by the cleaning


class DocumentError(Exception):
    """A document cannot be opened; the message explains why in words a user understands."""


@dataclass(frozen=True)
class Heading:
    """A heading of the document: its text, its level (1 is the highest) and its span in ``Document.text``."""

    title: str
    level: int
    start: int
    end: int


@dataclass(frozen=True)
class Chapter:
    """A place to jump to: a contents entry (or a heading where the document has no contents), its level
    (1 is the highest), and its span in ``Document.text``, which runs to the next chapter of the same or a
    higher level, so a chapter's span holds its sections."""

    title: str
    level: int
    start: int
    end: int


@dataclass
class Document:
    """What the studio reads: ``text`` (paragraphs separated by blank lines), the title and author (the
    file's name and "" where the file names none), chapters and headings as spans of ``text``, and warnings
    about what could not be read (skipped parts, a guessed encoding)."""

    path: Path
    text: str
    title: str
    author: str = ""
    chapters: list[Chapter] = field(default_factory=list)
    headings: list[Heading] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    # (start, end, kind) of each block whose kind is not PARAGRAPH, in order; headings included
    kinds: list[tuple[int, int, str]] = field(default_factory=list)

    def kind_at(self, position: int) -> str:
        """The kind of the block holding ``position`` of ``text`` (PARAGRAPH where the format says none)."""
        i = bisect.bisect_right(self.kinds, (position, float("inf"))) - 1
        if i >= 0 and self.kinds[i][0] <= position < self.kinds[i][1]:
            return self.kinds[i][2]
        return PARAGRAPH


@dataclass
class Block:
    """A paragraph (``level`` 0) or a heading (``level`` 1-6) as a reader found it, with the anchors
    (element ids, document names) that point at it and its ``kind`` (one of ``KINDS``; a heading's is HEADING)."""

    text: str
    level: int = 0
    anchors: list[str] = field(default_factory=list)
    kind: str = PARAGRAPH


@dataclass(frozen=True)
class TocEntry:
    """An entry of a file's own contents (EPUB navigation, PDF bookmarks): it names an anchor of a block."""

    title: str
    level: int
    anchor: str


@dataclass
class Parsed:
    """What a reader returns: the blocks in reading order, metadata, and the contents if the file has one
    (``None`` derives chapters from the headings)."""

    blocks: list[Block]
    title: str = ""
    author: str = ""
    toc: list[TocEntry] | None = None
    fallback_anchors: dict[str, str] = field(default_factory=dict)  # anchor -> anchor to try when it is missing


# ---- cleaning ---------------------------------------------------------------------------------------
_INVISIBLE = re.compile("[\u00ad\u200b\u200c\u200d\u2060\ufeff\ufffe\uffff\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")
_SPACES = re.compile(r"[ \t\u00a0\u2000-\u200a\u202f\u205f\u3000]+")
_BLANK_LINES = re.compile(r"\n\s*\n+")
_HAS_WORD = re.compile(r"\w")
_STRAY_MARKS = re.compile(r"(?:(?<=\s)|^)[\u0300-\u036f]+", re.MULTILINE)  # accents attached to no letter
# A Roman numeral of two letters or more (one letter is more often a letter: "A", "C", "I").
_ROMAN = r"(?=[IVXLCDM]{2})M{0,3}(?:CM|CD|D?C{0,3})(?:XC|XL|L?X{0,3})(?:IX|IV|V?I{0,3})"
# A block that is only a section or page number ("6.1.", "12", "IV", "§ 3"): read alone it is noise.
_NUMBER_ONLY = re.compile(rf"^(?:§\s*)?(?:\d{{1,4}}(?:[.\s]+\d{{1,4}})*\.?|{_ROMAN}\.?)$")
# A leading section number whose final period would make the segmenter end a sentence after it.
_LEADING_NUMBER = re.compile(rf"^((?:\d{{1,3}}\.)*\d{{1,3}}|{_ROMAN})\.(?=\s+\S)")
# "Chapter 1" alone before the heading it labels (LaTeX classes print "CHAPTER" and "THREE" apart).
_LABEL = r"(?:Chapter|Part|Appendix|Book|Lesson|Unit)"
_NUMBER_WORD = (r"(?:\d{1,3}|[IVXLCDM]{1,7}|[A-Z]|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|"
                r"thirteen|fourteen|fifteen|sixteen|seventeen|eighteen|nineteen|twenty(?:[ -]\w+)?|thirty(?:[ -]\w+)?)")
_LABEL_ONLY = re.compile(rf"^{_LABEL}\s+{_NUMBER_WORD}\.?$", re.IGNORECASE)
_BARE_LABEL = re.compile(rf"^{_LABEL}$", re.IGNORECASE)
_BARE_NUMBER_WORD = re.compile(rf"^{_NUMBER_WORD}$", re.IGNORECASE)
# "Chapter 1. Title": the period after the label becomes a colon, a pause that ends no sentence.
_LABELLED_NUMBER = re.compile(r"^((?:Chapter|Part|Appendix|Section|Book|Lesson|Unit)\s+(?:\d{1,3}(?:\.\d{1,3})*|"
                              r"[IVXLCDM]{1,7}|[A-Z]))\.(?=\s+\S)", re.IGNORECASE)


def clean_block_text(text: str) -> str:
    """One paragraph's text: invisible characters dropped, spaces collapsed, lines stripped, no blank line, no
    line without a word."""
    text = _INVISIBLE.sub("", text.replace("\r\n", "\n").replace("\r", "\n"))
    text = _SPACES.sub(" ", _STRAY_MARKS.sub("", text))
    # a line without a letter or digit ("." in a listing, a rule of dashes) is not read
    text = "\n".join(line.strip() for line in text.split("\n") if _HAS_WORD.search(line))
    return _BLANK_LINES.sub("\n", text).strip()


def normalize_section_number(text: str, heading: bool) -> str:
    """``6.1. Foo`` -> ``6.1 Foo`` and, in a heading, ``Chapter 1. Foo`` -> ``Chapter 1: Foo``."""
    if heading:
        text = _LABELLED_NUMBER.sub(r"\1:", text, count=1)
    return _LEADING_NUMBER.sub(r"\1", text, count=1)


def clean_blocks(blocks: list[Block]) -> list[Block]:
    """The blocks worth reading, section numbers handled; anchors of dropped blocks move to the next one."""
    out: list[Block] = []
    carried: list[str] = []
    pending_number: Block | None = None
    for block in blocks:
        anchors = carried + block.anchors
        carried = []
        if block.kind in _AS_WRITTEN:
            # a listing's "1." or a row's "12" is no section number; a row of symbols ("✓; —") is said
            text = _SPACES.sub(" ", _INVISIBLE.sub("", block.text)).strip() if block.kind == TABLE_ROW \
                else clean_block_text(block.text)
            if text.strip():
                out.append(Block(text, 0, anchors, block.kind))
            else:
                carried = anchors
            continue
        text = clean_block_text(block.text)
        if out and _BARE_LABEL.match(out[-1].text) and _BARE_NUMBER_WORD.match(text):
            label = out.pop()
            text, anchors = f"{label.text} {text}", label.anchors + anchors
        elif block.level and out and _LABEL_ONLY.match(out[-1].text) and not _LABEL_ONLY.match(text):
            label = out.pop()  # "Chapter 2" then "First steps": one heading "Chapter 2: First steps"
            text, anchors = f"{label.text.rstrip('.')}: {text}", label.anchors + anchors
        if not _HAS_WORD.search(text):
            carried = anchors  # only punctuation (a rule, dot leaders, "* * *"): nothing to read
            continue
        # a paragraph of Roman letters alone is a numeral where the format marks no paragraphs (a PDF page's "iv"),
        # a word where it does ("CV", "MIX")
        if _NUMBER_ONLY.match(text) and (block.kind in (PARAGRAPH, HEADING) or block.level or text[:1].isdigit()
                                         or text[:1] == "§"):
            if pending_number is not None:
                carried = pending_number.anchors
            pending_number = Block(text.rstrip(". "), block.level, anchors, block.kind)
            continue
        if pending_number is not None:
            anchors = pending_number.anchors + anchors
            # a standalone number before a heading that has none is its section number; any other is dropped
            if block.level and not re.match(rf"[\d§]|{_ROMAN}\b", text):
                text = f"{pending_number.text} {text}"
            pending_number = None
        out.append(Block(normalize_section_number(text, bool(block.level)), block.level, anchors,
                         HEADING if block.level else block.kind))
    if pending_number is not None:
        carried = pending_number.anchors + carried
    if carried:
        out.append(Block("", 0, carried))  # an empty end marker keeps trailing anchors resolvable
    return out


# ---- assembly ---------------------------------------------------------------------------------------
def assemble(parsed: Parsed, doc: Document) -> None:
    """Fills ``doc.text``, ``doc.headings`` and ``doc.chapters`` (and title and author) from ``parsed``."""
    blocks = clean_blocks(parsed.blocks)
    pieces: list[str] = []
    offsets: dict[str, int] = {}
    headings: list[Heading] = []
    kinds: list[tuple[int, int, str]] = []
    pos = 0
    for block in blocks:
        if block.text and pieces:
            pos += 2  # the blank line before this paragraph
        for anchor in block.anchors:
            offsets.setdefault(anchor, pos)
        if not block.text:
            continue
        pieces.append(block.text)
        if block.level:
            headings.append(Heading(" ".join(block.text.split()), block.level, pos, pos + len(block.text)))
        if block.kind != PARAGRAPH:
            kinds.append((pos, pos + len(block.text), block.kind))
        pos += len(block.text)
    text = "\n\n".join(pieces)
    if len(text) > MAX_TEXT_CHARS:
        raise DocumentError(f"“{doc.path.name}” holds more than {MAX_TEXT_CHARS // 1_000_000} million characters "
                            "of text, more than Orator can open.")
    doc.text = text
    doc.headings = headings
    doc.kinds = kinds
    if parsed.title.strip():
        doc.title = " ".join(parsed.title.split())
    if parsed.author.strip():
        doc.author = " ".join(parsed.author.split())
    if parsed.toc is not None:
        marks = []
        for entry in parsed.toc:
            start = offsets.get(entry.anchor)
            if start is None and entry.anchor in parsed.fallback_anchors:
                start = offsets.get(parsed.fallback_anchors[entry.anchor])
            title = normalize_section_number(" ".join(entry.title.split()), heading=True)
            if start is not None and title:
                marks.append((start, entry.level, title))
    else:
        marks = [(h.start, h.level, h.title) for h in _chapter_headings(headings)]
    doc.chapters = chapter_spans(marks, text)


def _chapter_headings(headings: list[Heading]) -> list[Heading]:
    """Without a contents: the headings of the highest ``MAX_HEADING_CHAPTER_LEVELS`` levels that are not the title
    block, nested (h1 > h2 > h3; a lone top heading is the document's title, its sections its chapters).
    A title block is a level of two headings or more that all come before the first deeper heading, within
    ``TITLE_BLOCK_CHARS`` of it, over deeper levels with two headings or more: a Texinfo page's "settitle" and
    "Top" headings are not two chapters named after the book."""
    if not headings:
        return []
    levels = sorted({h.level for h in headings})
    while len(levels) > 1:
        first_deeper = next(h for h in headings if h.level > levels[0])
        own = [h for h in headings if h.level == levels[0]]
        if (len(own) >= 2 and all(h.start < first_deeper.start for h in own)
                and first_deeper.start - own[0].start <= TITLE_BLOCK_CHARS
                and sum(h.level > levels[0] for h in headings) >= 2):
            levels = levels[1:]
        else:
            break
    deepest = levels[min(len(levels), MAX_HEADING_CHAPTER_LEVELS) - 1]
    return [h for h in headings if levels[0] <= h.level <= deepest]


def chapter_spans(marks: list[tuple[int, int, str]], text: str) -> list[Chapter]:
    """Chapters in reading order, levels renumbered from 1, each ending where the next of its level or a
    higher one begins; repeated entries (same start and title) are kept once."""
    if not marks:
        return []
    marks = sorted(dict.fromkeys(marks), key=lambda m: m[0])  # sort is stable: contents order within one start
    top = min(level for _, level, _ in marks)
    ends = [len(text)] * len(marks)
    open_marks: list[int] = []  # indices whose end is not known yet, levels increasing
    for i, (start, level, _) in enumerate(marks):
        while open_marks and marks[open_marks[-1]][1] >= level:
            ends[open_marks.pop()] = start
        open_marks.append(i)
    chapters = []
    for (start, level, title), end in zip(marks, ends, strict=True):
        while end > start and text[end - 1].isspace():
            end -= 1  # the blank line before the next chapter is not part of this one
        chapters.append(Chapter(title, level - top + 1, start, end))
    return chapters
