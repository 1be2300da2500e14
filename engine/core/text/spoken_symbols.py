"""Signs a reader says as words: superscripts (a power after a number, a footnote mark after a word) and the
symbols a table cell may hold alone ("✓", "—"). Qt-free; the reading policy applies them to what is said, the
document readers write superscripts with ``superscript``.

- A superscript after a number, a lone letter or a unit is a power: "2²⁵⁶" is said "2 to the power 256", "x²"
  "x squared", "10⁻³" "10 to the power minus 3", "km²" "km squared".
- A superscript after a word is a footnote mark ("Smith¹"): its note is read at the paragraph's end (or skipped),
  so the mark itself is not said.
- In a table row, a cell that is only a symbol is said as its word ("Supported: ✓" as "Supported: yes"): a tick
  or cross as yes or no, a dash as none, others by their Unicode name ("★" as "black star").
"""

from __future__ import annotations

import re
import unicodedata

_SUPERSCRIPT = str.maketrans("0123456789-+", "⁰¹²³⁴⁵⁶⁷⁸⁹⁻⁺")
_PLAIN = str.maketrans("⁰¹²³⁴⁵⁶⁷⁸⁹⁻⁺", "0123456789-+")
_UNITS = frozenset({"m", "cm", "mm", "km", "dm", "nm", "µm", "s", "ms", "ft", "in", "yd", "mi", "g", "kg", "h"})
# the base a superscript follows: a number, or a word (a lone letter or unit is a power's base, others take a mark)
_LETTER = "[^\\W\\d_⁰¹²³⁴⁵⁶⁷⁸⁹]"
_RAISED = re.compile(rf"(\d|(?<!{_LETTER}){_LETTER}+)([⁻⁺]?[⁰¹²³⁴⁵⁶⁷⁸⁹]+)")
# a cell of a table row: the row's start or "; ", an optional "Header: ", then the value up to "; " or the end
_CELL = re.compile(r"(^|; )((?:[^;:]{1,200}: )?)([^\w\s;]{1,3})(?=; |$)")
_SYMBOL_WORDS = {"✓": "yes", "✔": "yes", "☑": "yes", "✅": "yes", "●": "yes", "•": "yes", "+": "yes",
                 "✗": "no", "✘": "no", "✕": "no", "❌": "no", "☒": "no", "×": "no", "○": "no",
                 "—": "none", "–": "none", "-": "none", "−": "none", "…": "and so on", "?": "unknown",
                 "*": "star", "%": "percent", "$": "dollars", "€": "euros", "£": "pounds"}


def superscript(digits: str) -> str:
    """``digits`` (and a sign) as superscript characters: how a reader writes a power it found raised."""
    return digits.translate(_SUPERSCRIPT)


def _power(match: re.Match) -> str:
    base, raised = match.group(1), match.group(2).translate(_PLAIN)
    if not base.isdigit() and len(base) > 1 and base not in _UNITS:
        return base  # a footnote mark after a word: not said
    if raised == "2":
        return f"{base} squared"
    if raised == "3":
        return f"{base} cubed"
    return f"{base} to the power {raised.replace('-', 'minus ').replace('+', '')}"


def say_powers(text: str) -> str:
    """``text`` with its superscripts said (see the module docstring)."""
    if not any("⁰" <= ch <= "⁹" or ch in "¹²³" for ch in text):
        return text
    return _RAISED.sub(_power, text)


def symbol_word(symbol: str) -> str:
    """The word said for a cell of symbols only."""
    if symbol in _SYMBOL_WORDS:
        return _SYMBOL_WORDS[symbol]
    if len(set(symbol)) == 1 and symbol[0] in _SYMBOL_WORDS:
        return _SYMBOL_WORDS[symbol[0]]
    names = [unicodedata.name(ch, "").lower() for ch in symbol]
    return " ".join(n for n in names if n) or "symbol"


def say_table_symbols(row: str) -> str:
    """A table row (``Header: value; Header: value``) with each cell of symbols only said as its word."""
    return _CELL.sub(lambda m: f"{m.group(1)}{m.group(2)}{symbol_word(m.group(3))}", row)
