"""Chapters of a plain text: the one finder the studio's text reader and ``orator export`` share (Qt-free).

A paragraph ends at a blank line. A chapter heading is a short paragraph that names a chapter ("Chapter 3",
"CHAPTER IV.", "Part One", "Prologue", "Epilogue"...), with the short title lines after the label if there are
any ("CHAPTER I." then "Down the Rabbit-Hole" is one heading), or, after a label alone ("CHAPTER IV"), the next
paragraph when it is one short line that ends no sentence. A voice mark ("[voice: Ann]") is never a heading.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

from engine.voice_marks import parse_mark

MAX_HEADING_CHARS = 120  # a longer paragraph is prose, whatever it starts with
MAX_TITLE_LINE_CHARS = 80  # the title line that may follow a chapter label
SENTENCE_END = re.compile(r"""[.!?…:;]["'”’)\]]*$""")
_CHAPTER_LABEL = re.compile(
    r"^(?:(?:chapter|part|book|section|volume|canto|act)\s+[\w.:-]+|prologue|epilogue|introduction|preface|"
    r"foreword|afterword|appendix|interlude|postscript)\b[\s\S]*$", re.IGNORECASE)
_BARE_LABEL = re.compile(r"(?:chapter|part|book|section|volume|canto|act)\s+[\w.:-]+", re.IGNORECASE)
_BLANK_LINE = re.compile(r"\n[ \t]*\n")
_HAS_WORD = re.compile(r"\w")


@dataclass(frozen=True)
class TextHeading:
    """A chapter heading of a plain text: how it is named (label and title joined) and its span in the text."""

    title: str
    start: int
    end: int


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


def label_with_stop(label: str) -> str:
    """A label followed by its title: "CHAPTER I" -> "CHAPTER I." so the two are not read as one phrase."""
    return label if re.search(r"[.:!?]$", label) else label + "."


def chapter_headings(text: str) -> list[TextHeading]:
    """The chapter headings of ``text``, in order (see the module doc)."""
    out: list[TextHeading] = []
    previous_was_heading = False
    for at, paragraph in paragraphs(text):
        lines = [line.strip() for line in paragraph.split("\n") if line.strip()]
        if is_label(lines[0]):
            title_lines = lines[1:]
            if len(title_lines) <= 2 and all(len(t) <= MAX_TITLE_LINE_CHARS for t in title_lines):
                title = " ".join([label_with_stop(lines[0]) if title_lines else lines[0], *title_lines])
                out.append(TextHeading(title, at, at + len(paragraph)))
                previous_was_heading = True
                continue
        if (previous_was_heading and len(lines) == 1 and len(lines[0]) <= MAX_TITLE_LINE_CHARS
                and not SENTENCE_END.search(lines[0]) and parse_mark(lines[0])[0] is None
                and _BARE_LABEL.fullmatch(out[-1].title)):
            out[-1] = TextHeading(f"{label_with_stop(out[-1].title)} {lines[0]}", out[-1].start, at + len(paragraph))
        previous_was_heading = False
    return out
