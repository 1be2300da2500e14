"""Chapters of a plain text: the one finder the studio's text reader and ``orator export`` share (Qt-free).

A paragraph ends at a blank line. A chapter heading is a short paragraph that names a chapter ("Chapter 3",
"CHAPTER IV.", "Part One", "Prologue", "Epilogue"...), with the short title lines after the label if there are
any ("CHAPTER I." then "Down the Rabbit-Hole" is one heading), or, after a label alone ("CHAPTER IV"), the next
paragraph when it is one short line that ends no sentence. A voice mark ("[voice: Ann]") is never a heading.

Levels: volumes, books and parts hold the chapters after them. The kinds of label a text uses nest in the order
they first appear ("VOLUME I" then "BOOK FIRST" then "CHAPTER I": three levels; "PART I" then "Book I": parts
hold books), chapters, sections, cantos, acts and interludes always innermost, and front or back matter
("Preface", "Epilogue", "Appendix") at the top. A text without labels whose headings are a name and a number
("Genesis 1", "Genesis 2", ... "Exodus 1": the KJV Bible as Debian's ``bible`` prints it) gets one book per
name, named by it, holding its numbered chapters.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

from engine.core.text.voice_marks import parse_mark
from engine.documents.model import Chapter, Heading, chapter_spans

MAX_HEADING_CHARS = 120  # a longer paragraph is prose, whatever it starts with
MAX_TITLE_LINE_CHARS = 80  # the title line that may follow a chapter label
SENTENCE_END = re.compile(r"""[.!?…:;]["'”’)\]]*$""")
_ORDINALS = (r"first|second|third|fourth|fifth|sixth|seventh|eighth|ninth|tenth|eleventh|twelfth|thirteenth|"
             r"fourteenth|fifteenth|sixteenth|seventeenth|eighteenth|nineteenth|twentieth|last")
# the number of a volume, book or part: "Part One", "BOOK II", "Volume 3", "Book the First", "BOOK FIRST";
# Roman numerals in capitals only, so "Part did..." is prose
_NUMBER = (rf"(?:\d{{1,4}}|(?-i:[IVXLCDM]{{1,8}})|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|"
           rf"thirteen|fourteen|fifteen|sixteen|seventeen|eighteen|nineteen|twenty|{_ORDINALS}|"
           rf"the\s+(?:{_ORDINALS}))")
_GROUPING_KINDS = ("volume", "book", "part")  # labels that hold chapters: their number must be a number
_CHAPTER_KINDS = ("chapter", "section", "canto", "act", "interlude")
_MATTER = ("prologue", "epilogue", "introduction", "preface", "foreword", "afterword", "appendix", "postscript")
_CHAPTER_LABEL = re.compile(
    rf"^(?:(?P<kind>chapter|section|canto|act)\s+[\w.:-]+|(?P<group>volume|book|part)\s+{_NUMBER}\b[.:]?|"
    r"(?P<matter>prologue|epilogue|introduction|preface|foreword|afterword|appendix|interlude|postscript))"
    r"\b[\s\S]*$", re.IGNORECASE)
_BARE_LABEL = re.compile(r"(?:chapter|part|book|section|volume|canto|act)\s+[\w.:-]+", re.IGNORECASE)
_BLANK_LINE = re.compile(r"\n[ \t]*\n")
_HAS_WORD = re.compile(r"\w")
# a book's chapter heading: "Genesis 1", "1 Samuel 3", "Song of Solomon 2"
_NAMED_NUMBER = re.compile(r"((?:[1-4] )?[A-Z][a-z]+(?: (?:of |the )*[A-Z][a-z]+){0,3}) (\d{1,3})")
MIN_NAMED_CHAPTERS = 3  # fewer name-and-number lines are not a scheme of books (a "Figure 1" and a "Table 1")


@dataclass(frozen=True)
class TextHeading:
    """A chapter heading of a plain text: how it is named (label and title joined), its span in the text and its
    level (1 is the highest). A book named by its chapters ("Genesis" before "Genesis 1") has an empty span: it
    is a place in the text, not words of it."""

    title: str
    start: int
    end: int
    level: int = 1


def paragraphs(text: str, start: int = 0, end: int | None = None) -> Iterator[tuple[int, str]]:
    """(offset, text) of each blank-line-separated paragraph of ``text[start:end]`` that has a word, stripped."""
    end = len(text) if end is None else end
    pos = start
    while pos < end:
        blank = _BLANK_LINE.search(text, pos, end)
        stop = blank.start() if blank else end
        chunk = text[pos:stop]
        if _HAS_WORD.search(chunk):
            yield pos + len(chunk) - len(chunk.lstrip()), chunk.strip()
        pos = blank.end() - 1 if blank else end  # the blank line's last line end may start the next one


def is_label(line: str) -> bool:
    return len(line) <= MAX_HEADING_CHARS and bool(_CHAPTER_LABEL.match(line)) and not parse_mark(line)[0]


def label_kind(line: str) -> str:
    """The kind of a label line ("chapter", "part", "prologue"...), lower case; "" when it is none."""
    match = _CHAPTER_LABEL.match(line) if len(line) <= MAX_HEADING_CHARS else None
    if not match:
        return ""
    word = (match.group("kind") or match.group("group") or match.group("matter")).lower()
    return word


def label_with_stop(label: str) -> str:
    """A label followed by its title: "CHAPTER I" -> "CHAPTER I." so the two are not read as one phrase."""
    return label if re.search(r"[.:!?]$", label) else label + "."


def chapter_headings(text: str) -> list[TextHeading]:
    """The chapter headings of ``text``, in order, with their levels (see the module doc). One pass over the
    paragraphs; most are prose, told apart by their first line alone."""
    found: list[tuple[TextHeading, str]] = []  # each heading with the kind of its label
    named: list[tuple[str, int, int, int]] = []  # one-line "Name N" paragraphs, for a text without labels
    previous_was_heading = False
    for at, paragraph in paragraphs(text):
        first = paragraph.partition("\n")[0].strip()
        if not previous_was_heading and not is_label(first):
            if len(paragraph) <= MAX_TITLE_LINE_CHARS and (match := _NAMED_NUMBER.fullmatch(paragraph)):
                named.append((match.group(1), int(match.group(2)), at, at + len(paragraph)))
            continue
        lines = [line.strip() for line in paragraph.split("\n") if line.strip()]
        if is_label(lines[0]):
            title_lines = lines[1:]
            if len(title_lines) <= 2 and all(len(t) <= MAX_TITLE_LINE_CHARS for t in title_lines):
                title = " ".join([label_with_stop(lines[0]) if title_lines else lines[0], *title_lines])
                found.append((TextHeading(title, at, at + len(paragraph)), label_kind(lines[0])))
                previous_was_heading = True
                continue
        if (previous_was_heading and len(lines) == 1 and len(lines[0]) <= MAX_TITLE_LINE_CHARS
                and not SENTENCE_END.search(lines[0]) and parse_mark(lines[0])[0] is None
                and _BARE_LABEL.fullmatch(found[-1][0].title)):
            last, kind = found[-1]
            found[-1] = (TextHeading(f"{label_with_stop(last.title)} {lines[0]}", last.start, at + len(paragraph)),
                         kind)
        previous_was_heading = False
    return _leveled(found) if found else _named_books(named)


def _leveled(found: list[tuple[TextHeading, str]]) -> list[TextHeading]:
    """The headings with their levels: grouping kinds in the order they first appear, chapters under them, front
    and back matter at the top."""
    groups = list(dict.fromkeys(kind for _, kind in found if kind in _GROUPING_KINDS))
    inner = len(groups) + 1
    out = []
    for heading, kind in found:
        if kind in _GROUPING_KINDS:
            level = groups.index(kind) + 1
        elif kind in _MATTER:
            level = 1
        else:
            level = inner
        out.append(TextHeading(heading.title, heading.start, heading.end, level))
    return out


def named_books(text: str) -> list[TextHeading]:
    """Books named by their numbered chapters' headings ("Genesis 1" ... "Exodus 1"): one-line paragraphs of a name
    and a number, each name's numbers running 1, 2, 3... Every such line must fit the scheme, and there must be
    ``MIN_NAMED_CHAPTERS`` of them, or the text has none (its lines are captions or prose)."""
    named = []
    for at, paragraph in paragraphs(text):
        if len(paragraph) <= MAX_TITLE_LINE_CHARS and (match := _NAMED_NUMBER.fullmatch(paragraph)):
            named.append((match.group(1), int(match.group(2)), at, at + len(paragraph)))
    return _named_books(named)


def _named_books(found: list[tuple[str, int, int, int]]) -> list[TextHeading]:
    """``named_books`` from its candidates: (name, number, start, end) of each "Name N" paragraph."""
    if len(found) < MIN_NAMED_CHAPTERS:
        return []
    out: list[TextHeading] = []
    previous: tuple[str, int] | None = None
    for name, number, start, end in found:
        if previous is not None and previous[0] == name and number == previous[1] + 1:
            pass
        elif number == 1 and (previous is None or previous[0] != name):
            out.append(TextHeading(name, start, start, 1))  # the book begins where its first chapter does
        else:
            return []  # a number out of turn: not a scheme of books
        out.append(TextHeading(f"{name} {number}", start, end, 2))
        previous = (name, number)
    return out


def text_structure(text: str) -> tuple[list[Heading], list[Chapter]]:
    """The headings (spans of words) and the chapters of a plain text, as ``engine.documents`` keeps them."""
    found = chapter_headings(text)
    headings = [Heading(h.title, h.level, h.start, h.end) for h in found if h.end > h.start]
    return headings, chapter_spans([(h.start, h.level, h.title) for h in found], text)
