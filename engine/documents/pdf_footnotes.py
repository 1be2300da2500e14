"""PDF footnotes: which printed numbers are footnote marks, and which lines start the notes (Qt-free).

A reader never drops a digit of the text, so a number is taken for a footnote mark only when it is one:
a whole number (no digit beside it) that stands right after a word's end, in smaller type ("wizard²",
"wizard.²", "developers ⁴.") or, as some generators set marks, in the body's type before the line's end or a
new sentence ("gz1", "(RFA).3", "a wizard. 2", or alone on a line after one), and a footnote starting with
that number (a line in smaller type in the lower half of the page) is printed on the same page or the next.
Such a mark is removed, and the note's own leading number with it; the note is read after the paragraph it
holds the mark (pdf_reader moves it there). Anything short of that is kept as printed: smaller digits inside "1770"
or "(2002)", an exponent in "km s−1", a number with no note, a note with no mark.
PDFium ends a line after raised type ("(196¹" then ")"), so pieces of one printed line are first put together.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Sequence
from typing import Protocol

# PDFium's text for the superscript digits of some fonts; they are read as digits, and are small by nature
SUPERSCRIPTS = str.maketrans("⁰¹²³⁴⁵⁶⁷⁸⁹", "0123456789")
_SUPERSCRIPT_CHARS = frozenset("⁰¹²³⁴⁵⁶⁷⁸⁹")
SMALL = 0.8  # a digit in type under this share of its line's size is small
_DIGITS = re.compile(r"[\d⁰¹²³⁴⁵⁶⁷⁸⁹]+")
_CLOSING = "[.,;:!?)\\]”’\"]"
# what a smaller-type mark follows: a letter, or a letter and closing marks ("word²", "(word).²"), then a space at most
_WORD_END = re.compile(rf"[^\W\d_]{_CLOSING}{{0,2}}\s?$")
# a mark in any type (some generators set marks in the body's type): right after a word or its closing marks,
# or after a space that follows closing marks ("wizard. 2", "perl(1).) 3"); then the line's end or a new sentence
_BODY_MARK_BEFORE = "(?:" + "|".join(
    [r"(?<=[^\W\d_])"] + [rf"(?<=[^\W\d_]{_CLOSING}{{{n}}})" for n in (1, 2, 3)]
    + [rf"(?<=[^\W_]{_CLOSING}{{{n}}}\s)" for n in (1, 2, 3)]) + ")"
_MARK_END = re.compile(rf"$|\s|{_CLOSING}")  # what follows a smaller-type mark ("³/4" is a fraction)
_ENDS_WORD = re.compile(rf"[^\W_]{_CLOSING}{{0,3}}$")
_BODY_MARK_AFTER = r"(?=\s*$|\s+[A-Z“\"(•])"
_NOTE_NUMBER = re.compile(r"^\d{1,3}(?=\s?[A-Z“\"(])")


class _Line(Protocol):
    text: str
    x0: float
    x1: float
    size: float
    y: float
    top: float
    y_end: float
    starts_note: bool
    small_digits: list[tuple[int, int]]
    notes: list  # the first lines of the notes whose marks this line held


class _Page(Protocol):
    height: float
    lines: list[_Line]


def small_digit_runs(text: str, size_of: Callable[[int], float], line_size: float) -> list[tuple[int, int]]:
    """The spans of ``text`` (a line as PDFium gives it, before SUPERSCRIPTS) that are whole runs of digits every one
    of which is in smaller type than the line or a superscript character; ``size_of(i)`` is character i's size."""
    runs = []
    for m in _DIGITS.finditer(text):
        if all(text[i] in _SUPERSCRIPT_CHARS or size_of(i) < SMALL * line_size for i in range(m.start(), m.end())):
            runs.append((m.start(), m.end()))
    return runs


def rejoin_printed_lines(lines: list[_Line]) -> list[_Line]:
    """``lines`` with each piece that continues the printed line before it (starting where it ends, within the
    height of its type) joined to it, with a space where the gap between them is one."""
    out: list[_Line] = []
    for line in lines:
        prev = out[-1] if out else None
        if prev is not None and line.y < prev.top and line.top > prev.y \
                and -1.0 <= line.x0 - prev.x1 < 0.6 * max(prev.size, line.size):
            space = " " if line.x0 - prev.x1 > 0.15 * min(prev.size, line.size) else ""
            shift = len(prev.text) + len(space)
            prev.small_digits = prev.small_digits + [(s + shift, e + shift) for s, e in line.small_digits]
            prev.text = prev.text + space + line.text
            prev.x1, prev.y_end, prev.size = line.x1, line.y_end, max(prev.size, line.size)
            continue
        out.append(line)
    return out


def drop_footnote_marks(pages: Sequence[_Page]) -> None:
    """Removes the footnote marks and the numbers of their notes from ``pages``' lines, in place, and marks
    each note's first line (``starts_note``) so it is a paragraph of its own."""
    for index, page in enumerate(pages):
        if not page.lines:
            continue
        sizes: Counter = Counter()
        for line in page.lines:
            sizes[line.size] += len(line.text)
        main = sizes.most_common(1)[0][0]
        notes = []
        for line in page.lines:
            if line.size < 0.9 * main and line.y < page.height * 0.5:
                lead = _note_number(line)
                if lead:
                    line.starts_note = True
                    notes.append((line, lead))
        searched = [page] + ([pages[index - 1]] if index else [])
        for line, lead in notes:
            number = line.text[:lead]
            marked = next((found for other in searched if (found := _remove_mark(other, number, main)) is not None),
                          None)
            if marked is not None:
                marked.notes.append(line)  # the note is read after the paragraph holding its mark
                line.text = line.text[lead:].lstrip()
                line.small_digits = []


def _note_number(line: _Line) -> int:
    """The length of the number a footnote's first line starts with, 0 if it starts with none."""
    m = _NOTE_NUMBER.match(line.text)
    if m:
        return m.end()
    if line.small_digits and line.small_digits[0][0] == 0 and line.small_digits[0][1] <= 3:
        return line.small_digits[0][1]  # a superscript note number, the note in lower case after it
    return 0


def _remove_mark(page: _Page, number: str, main: float) -> _Line | None:
    """Removes the first mark of ``number`` from the body lines of ``page``; the line that held it, or None."""
    body_mark = re.compile(rf"{_BODY_MARK_BEFORE}{number}{_BODY_MARK_AFTER}")
    prev = None
    for i, line in enumerate(page.lines):
        if line.starts_note or line.size < 0.85 * main or line.top >= page.height * 0.92:
            continue
        if line.text == number and prev is not None and _ENDS_WORD.search(prev.text):
            del page.lines[i]  # PDFium put the mark after a line's end on a line of its own
            return prev
        prev = line
        for k, (start, end) in enumerate(line.small_digits):
            if line.text[start:end] == number and _WORD_END.search(line.text[:start]) \
                    and _MARK_END.match(line.text, end):
                start -= start > 0 and line.text[start - 1].isspace()
                line.text = line.text[:start] + line.text[end:]
                line.small_digits = [(s - (end - start), e - (end - start)) if s >= end else (s, e)
                                     for j, (s, e) in enumerate(line.small_digits) if j != k]
                return line
        m = body_mark.search(line.text)
        if m:
            start = m.start() - (m.start() > 0 and line.text[m.start() - 1].isspace())
            cut = m.end() - start
            line.text = line.text[:start] + line.text[m.end():]
            line.small_digits = [(s - cut, e - cut) if s >= m.end() else (s, e) for s, e in line.small_digits]
            return line
    return None
