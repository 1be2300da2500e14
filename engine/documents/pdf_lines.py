"""PDFium's text of a page as printed lines: each with its box, its type size and the numbers in smaller type, a
power written in superscript characters (Qt-free). pdf_reader builds paragraphs from them.

PDFium gives a page's text line by line, but runs lines of one character each together ("A" over "A" as "AA"):
a line whose two ends lie lines apart is cut where a character drops well below the one before it and goes back
to the left. A
number in smaller type raised right after a number of one or two digits is a power ("2" then a raised "256" is
written "2²⁵⁶", said "2 to the power 256"); smaller digits that are not raised (another font's figures in "1770")
or follow three digits or more (a year set with a raised last digit) stay digits of the number, and a number in
smaller type after a word is left to pdf_footnotes (a mark, when its note is found).

Characters set in a music font (LilyPond's Emmentaler, SMuFL's Bravura, MuseScore's Leland...) are notes, rests and
clefs of a printed score, a picture drawn with glyphs: PDFium gives them as letters ("h h h ª"), so they are left
out, as an image would be, and a line of nothing else is no line. A line whose every character is set in a
monospaced font (Courier, Computer Modern's typewriter, Latin Modern Mono, DejaVu Sans Mono...) is marked ``mono``:
pdf_reader takes such lines for code.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass, field

from engine.core.text.spoken_symbols import superscript
from engine.documents.pdf_footnotes import SMALL, SUPERSCRIPTS, small_digit_runs

_DIGITS = re.compile(r"\d+")
# the music fonts of engraving programs (LilyPond, SMuFL, MuseScore, Finale, Sibelius), after a subset's "ABCDEF+"
_MUSIC_FONT = re.compile(r"(?:^|\+)(?:emmentaler|feta|parmesan|gonville|lilyjazz|bravura|leland|petaluma|sebastian"
                         r"|musejazz|mscore|finale ?(?:maestro|jazz|broadway|engraver)|maestro|petrucci|opus ?std"
                         r"|opus(?:special|text|chords|figuredbass|metronome|percussion)|ekmelos|musisync)",
                         re.IGNORECASE)
# monospaced fonts by name (their descriptors' FixedPitch flag is often unset: TeX's are marked only Symbolic)
_MONO_FONT = re.compile(r"mono|courier|cmtt|lmtt|typewriter|consolas|menlo|inconsolata|source ?code|sfmt|txtt"
                        r"|nimbusmon|lucidaconsole|andale|fira ?code|liberationmono|cousine|letter ?gothic",
                        re.IGNORECASE)
_FIXED_PITCH = 1  # the FixedPitch bit of a font descriptor's flags


@dataclass(eq=False)
class Line:
    text: str
    x0: float
    x1: float
    y: float  # baseline-ish: the bottom of the first character's loose box
    top: float
    size: float
    y_end: float  # the same for the last character (PDFium may put two printed lines in one)
    starts_note: bool = False  # the first line of a footnote
    small_digits: list[tuple[int, int]] = field(default_factory=list)  # whole numbers in smaller type
    notes: list[Line] = field(default_factory=list)  # first lines of the notes whose marks it held (pdf_footnotes)
    mono: bool = False  # every character in a monospaced font: a line of code


@dataclass
class Page:
    number: int
    height: float
    lines: list[Line] = field(default_factory=list)


def printed_lines(textpage, text: str, start: int, end: int):
    """(first, last) character indices of each printed line in PDFium's line ``text[start:end]``: PDFium runs
    lines of one character each together ("A" over "A" as "AA"), so a line whose ends lie lines apart is cut
    where a character drops or rises by one and a half times its height and goes back to the left, as a new
    printed line does (a sub- or superscript, a limit under "lim", stays nearer). A character PDFium gives no
    box (a glyph it could not measure: zero width and height, somewhere else on the page) decides nothing."""
    line = text[start:end]
    first = start + len(line) - len(line.lstrip())
    last = start + len(line.rstrip()) - 1
    if last < first:
        return
    boxed = [i for i in range(first, last + 1) if not text[i].isspace()]
    head = next((box for i in boxed[:16] if (box := _box(textpage, i)) is not None), None)
    tail = next((box for i in reversed(boxed[-16:]) if (box := _box(textpage, i)) is not None), None)
    if head is None or tail is None or not _apart(head, tail):
        yield first, last
        return
    begin, previous = first, None
    for i in boxed:
        box = _box(textpage, i)
        if box is None:
            continue
        if previous is not None and _new_line(previous, box):
            stop = i - 1
            while stop > begin and text[stop].isspace():
                stop -= 1
            yield begin, stop
            begin = i
        previous = box
    yield begin, last


def _box(textpage, index: int) -> tuple[float, float, float, float] | None:
    """Character ``index``'s loose box (left, bottom, right, top), or None where PDFium gives it an empty one."""
    left, bottom, right, top = textpage.get_charbox(index, loose=True)
    return None if right - left < 1e-3 and top - bottom < 1e-3 else (left, bottom, right, top)


def _apart(before: tuple[float, float, float, float], after: tuple[float, float, float, float]) -> bool:
    """Whether two characters' boxes lie lines apart: one drops or rises by one and a half times its height."""
    return abs(after[1] - before[1]) > 1.5 * max(before[3] - before[1], after[3] - after[1], 1.0)


def _new_line(before: tuple[float, float, float, float], after: tuple[float, float, float, float]) -> bool:
    """Whether the character boxed ``after`` starts another printed line than the one boxed ``before``: lines apart,
    and back to the left."""
    return _apart(before, after) and after[0] < before[2] - 0.5


def read_line(textpage, text: str, first: int, last: int) -> Line | None:
    """The printed line ``text[first:last + 1]`` with its box, type size and digits in smaller type; a number in
    smaller raised type right after a digit is a power, written in superscript characters ("2²⁵⁶"). Characters in
    a music font are left out; None for a line of nothing else."""
    import pypdfium2.raw as pdfium_c

    music, mono = _fonts(textpage, text, first, last)
    if music:
        while first <= last and (first in music or text[first].isspace()):
            first += 1
        while last >= first and (last in music or text[last].isspace()):
            last -= 1
        if last < first:
            return None

    left, bottom, _, top = textpage.get_charbox(first, loose=True)
    end = last  # a combining mark PDFium left at the line's end is boxed where its letter is, not at the end
    while end > first and (unicodedata.combining(text[end]) or text[end].isspace()):
        end -= 1
    _, bottom_end, right, _ = textpage.get_charbox(end, loose=True)
    size = max(pdfium_c.FPDFText_GetFontSize(textpage.raw, i) for i in (first, (first + last) // 2, last))
    stripped = text[first:last + 1]
    size_of = lambda i: pdfium_c.FPDFText_GetFontSize(textpage.raw, first + i)  # noqa: E731
    small = small_digit_runs(stripped, size_of, size)
    plain = stripped.translate(SUPERSCRIPTS)
    kept = []
    for run in small:
        at = run[0]
        if _power_base(plain, at) and _raised(textpage, first + at, size):
            plain = plain[:at] + superscript(plain[at:run[1]]) + plain[run[1]:]
        else:
            kept.append(run)
    for at, end in _raised_tails(plain, size_of, size):  # "2" then "256" raised: one run of digits in PDFium's text
        if _power_base(plain, at) and _raised(textpage, first + at, size):
            plain = plain[:at] + superscript(plain[at:end]) + plain[end:]
    if music:
        plain, kept = _without(plain, {i - first for i in music}, kept)
    return Line(plain, left, right, bottom, top, round(size, 1), bottom_end, small_digits=kept, mono=mono)


def _without(text: str, gone: set[int], runs: list[tuple[int, int]]) -> tuple[str, list[tuple[int, int]]]:
    """``text`` without the characters at ``gone`` (the spaces they leave one space), and ``runs`` (spans of it)
    moved to match; a run that loses a character goes."""
    out: list[str] = []
    where: list[int] = []  # the index in the result of each character of text
    for i, ch in enumerate(text):
        where.append(len(out))
        if i in gone or ch == " " and (not out or out[-1] == " "):
            continue
        out.append(ch)
    where.append(len(out))
    kept = [(where[a], where[a] + b - a) for a, b in runs
            if not any(i in gone for i in range(a, b)) and where[b] - where[a] == b - a]
    return "".join(out).strip(), kept


def _fonts(textpage, text: str, first: int, last: int) -> tuple[set[int], bool]:
    """The indices of the characters of ``text[first:last + 1]`` set in a music font, and whether every other
    one is set in a monospaced font."""
    import ctypes

    import pypdfium2.raw as pdfium_c

    name = ctypes.create_string_buffer(128)
    flags = ctypes.c_int()
    music: set[int] = set()
    fonts: dict[tuple[bytes, int], tuple[bool, bool]] = {}  # (name, flags) -> (music, monospaced)
    mono, seen = True, False
    for i in range(first, last + 1):
        if text[i].isspace():
            continue
        if not pdfium_c.FPDFText_GetFontInfo(textpage.raw, i, name, len(name), ctypes.byref(flags)):
            mono = False  # a character of no font: not known to be code
            continue
        key = (name.value, flags.value)
        kinds = fonts.get(key)
        if kinds is None:
            font = name.value.decode("latin-1")
            kinds = fonts[key] = (bool(_MUSIC_FONT.search(font)),
                                  bool(flags.value & _FIXED_PITCH or _MONO_FONT.search(font)))
        if kinds[0]:
            music.add(i)
        else:
            mono, seen = mono and kinds[1], True
    return music, mono and seen


def _power_base(text: str, at: int) -> bool:
    """Whether the digits before ``at`` can be a power's base: one or two ("2²⁵⁶", "10⁻³"), not a year's first
    three ("(196¹)" is a year set with a raised last digit)."""
    digits = len(text[:at]) - len(text[:at].rstrip("0123456789"))
    return 1 <= digits <= 2 and (at == digits or not text[at - digits - 1].isdigit())


def _raised_tails(text: str, size_of, size: float) -> list[tuple[int, int]]:
    """The spans of smaller type that end runs of digits begun in the line's type ("2256": "256")."""
    tails = []
    for m in _DIGITS.finditer(text):
        if m.end() - m.start() < 2 or size_of(m.start()) < SMALL * size or size_of(m.end() - 1) >= SMALL * size:
            continue
        at = m.end() - 1
        while at > m.start() and size_of(at - 1) < SMALL * size:
            at -= 1
        if at > m.start() and all(size_of(i) >= SMALL * size for i in range(m.start(), at)):
            tails.append((at, m.end()))
    return tails


def _raised(textpage, index: int, size: float) -> bool:
    """Whether character ``index`` sits above the baseline of the one before it (a superscript, not a digit of
    another font's smaller figures)."""
    if textpage.get_text_range(index, 1) in "⁰¹²³⁴⁵⁶⁷⁸⁹":
        return True
    bottom = textpage.get_charbox(index)[1]
    base = textpage.get_charbox(index - 1)[1]
    return bottom - base > 0.2 * size
