"""Split long text into sentence-level segments that are spoken one after another.

Each segment keeps its character span in the original text so a reader can highlight what is being
spoken. Sentences end at Western (. ! ? …) and CJK (。！？；) punctuation and at blank lines, except
where Western punctuation is followed by a lowercase word (``e.g. this``, ``"Why?" she asked``) or a
period ends a title, a Latin abbreviation or an initial (``Dr. Smith``, ``J. R. R. Tolkien``);
a sentence longer than ``max_chars`` is cut at the last clause mark (, ; : 、，) or space before
the limit, so no segment is unbounded and no model context is exceeded.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from engine.errors import TextError

DEFAULT_MAX_CHARS = 300

# A sentence end: terminal punctuation (with closing quotes/brackets) followed by space or end,
# CJK terminal punctuation anywhere, or a paragraph break.
_SENTENCE_END = re.compile(
    r"""(?:[.!?…]+["'”’)\]]*(?=\s|$))"""
    r"""|(?:[。！？；]+[」』”’）)]*)"""
    r"""|(?:\n\s*\n)"""
)
_CLAUSE_MARK = re.compile(r"[,;:、，；：]\s*|\s+")
# Words that a period follows without ending the sentence (compared in lowercase, without the period).
_ABBREVIATIONS = frozenset({"mr", "mrs", "ms", "dr", "prof", "st", "mt", "jr", "sr", "vs", "e.g", "i.e", "cf"})
_LAST_WORD = re.compile(r"[\w.]+$")


@dataclass(frozen=True, slots=True)
class Segment:
    start: int  # character offset in the original text
    end: int  # exclusive
    text: str  # stripped text of the span


def check_text(text, what: str = "text", allow_empty: bool = False) -> None:
    """``TextError`` unless ``text`` is a string the tokenizer can take: it has a UTF-8 form (no lone surrogate,
    as JSON's ``"\\ud800"`` gives) and, unless ``allow_empty``, something besides whitespace to speak."""
    if not allow_empty and (text is None or isinstance(text, str) and not text.strip()):
        raise TextError("there is no text to speak" if what == "text" else f"there is nothing in the {what}")
    if not isinstance(text, str):
        raise TextError(f"the {what} must be a string, not {type(text).__name__}")
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as e:
        raise TextError(f"character {e.start} of the {what} is a lone surrogate {text[e.start]!r}, which is no "
                        "Unicode character") from None


def split_segments(text: str, max_chars: int = DEFAULT_MAX_CHARS) -> list[Segment]:
    """Sentence-level segments of ``text`` with their spans; whitespace-only pieces are dropped."""
    if max_chars < 20:
        raise ValueError("max_chars must be at least 20")
    segments: list[Segment] = []
    pos = 0
    for m in _SENTENCE_END.finditer(text):
        if _continues(text, m):
            continue
        _add(segments, text, pos, m.end(), max_chars)
        pos = m.end()
    _add(segments, text, pos, len(text), max_chars)
    return segments


def _continues(text: str, m: re.Match) -> bool:
    """True when the Western punctuation of ``m`` does not end a sentence (see the module docstring)."""
    if text[m.start()] not in ".!?…":
        return False
    next_char = text[m.end():m.end() + 8].lstrip()[:1]
    if next_char.islower():
        return True
    if m.group() != ".":
        return False
    word = _LAST_WORD.search(text, max(0, m.start() - 12), m.start())
    if word is None:
        return False
    word = word.group()
    return word.lower() in _ABBREVIATIONS or (len(word) == 1 and word.isupper() and word != "I")


def _add(out: list[Segment], text: str, start: int, end: int, max_chars: int) -> None:
    # trim surrounding whitespace but keep offsets exact
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    while end - start > max_chars:
        cut = _cut_point(text, start, start + max_chars)
        _add(out, text, start, cut, max_chars)
        start = cut
        while start < end and text[start].isspace():
            start += 1
    if end > start:
        out.append(Segment(start, end, text[start:end]))


def _cut_point(text: str, start: int, limit: int) -> int:
    """The end of the last clause mark or space in text[start:limit], or ``limit`` if none."""
    best = None
    for m in _CLAUSE_MARK.finditer(text, start + 1, limit):
        best = m.end() if not text[m.start()].isspace() else m.start()
    return best if best and best > start else limit
