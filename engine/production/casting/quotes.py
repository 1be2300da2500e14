"""Quoted speech in prose: where each quotation of a paragraph opens and closes, and whom the text names as its
speaker beside it ("…," said Elizabeth / Elizabeth said, "…"). Qt-free, linear in the length of the text.

Rules, each the convention of printed fiction:

- A book quotes in double marks (“…” „…“ «…» or straight "…") or, where it has more opening single marks than
  double ones, in single marks (‘…’ or straight '…'; British style). Marks of the other kind inside a quotation
  are nested quotes, and are part of it.
- A curly or angled mark says which way it faces; a straight one faces the way its neighbours say (after a space
  it opens, before one it closes, else it closes an open quotation and opens otherwise).
- A single mark between letters is an apostrophe (don't, o'clock), as is one before an elided word ('tis, 'em).
  A closing single mark after a letter and before a space and a word (the Bennets' house) closes an open quotation
  only where no other closing mark follows it before the next opening one: else it is a possessive.
- A quotation not closed by the end of its paragraph ends there (``Quote.open_end``); when the next paragraph
  starts with an opening mark, the quotation goes on there (a speech of several paragraphs repeats the opening
  mark at each and closes only the last), as it does where the next paragraph's first mark closes a quotation
  (a paragraph cut in two by a line break). Any other closing mark with no open quotation is text.
- The speaker: a name (capitalised, with an optional title such as Mr. or Miss) after a speech verb right after
  the quotation ("said Elizabeth"), before one right after it ("Elizabeth said"), or the same just before the
  quotation ("Elizabeth said, “…”"). Only a bounded window of text beside each quotation is searched, so a
  hostile text costs what a plain one of its length does.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

DOUBLE, SINGLE = "double", "single"
_DOUBLE_MARKS = re.compile(r"[\"“”„«»]")
_SINGLE_MARKS = re.compile(r"['‘’‚‹›]")
_DOUBLE_OPEN, _DOUBLE_CLOSE = "“„«", "”»"
_SINGLE_OPEN, _SINGLE_CLOSE = "‘‚‹", "’›"
_OPEN_BEFORE = "([{—–-/\"“„«'‘‚‹"  # what stands before an opening mark besides a space
_CLOSE_AFTER = ".,;:!?)]}—–-…\"”»'’›"  # what follows a closing mark besides a space
_ELISIONS = {"tis", "twas", "twere", "twill", "em", "cause", "til", "till", "bout", "round", "n", "im", "er"}
WINDOW = 120  # characters beside a quotation searched for its speaker
_OPENS, _CLOSES, _WEAK_CLOSE, _TOGGLE = range(4)

_VERBS = (r"(?:said|says|cried|replied|answered|asked|returned|continued|added|exclaimed|observed|rejoined|"
          r"whispered|shouted|called|began|repeated|resumed|interrupted|muttered|remarked|declared|inquired|"
          r"enquired|thought|urged|insisted|protested|pursued|persisted|retorted|explained|admitted|agreed|"
          r"murmured|sighed|laughed|went\s+on)")
_TITLE = (r"(?:Mr|Mrs|Ms|Miss|Mme|Mlle|Dr|Sir|Lady|Lord|Dame|Colonel|Col|Captain|Capt|General|Major|Professor|"
          r"Prof|Aunt|Uncle|Father|Mother|Sister|Brother|Madame|Monsieur)\.?")
_NOT_NAMES = r"(?:He|She|It|They|We|I|You|His|Her|Their|The|This|That|Then|But|And|So|Yet|Now|There|Here)\b"
_WORD = r"[A-ZÀ-ÖØ-Þ][A-Za-zÀ-ÖØ-öø-ÿ'’-]*"
_NAME = rf"(?!{_NOT_NAMES})((?:{_TITLE}\s+)?{_WORD}(?:\s+(?!{_NOT_NAMES}){_WORD}){{0,2}})"
_LEAD = r"^[\s,;:—–-]*"
_AFTER = (re.compile(rf"{_LEAD}{_VERBS}\s+{_NAME}"),
          re.compile(rf"{_LEAD}{_NAME}\s+(?:[a-z]+ly\s+)?{_VERBS}\b"))
_BEFORE = (re.compile(rf"{_NAME}\s+(?:[a-z]+ly\s+)?{_VERBS}\b[^\"“”.!?]{{0,60}}?[,:]?\s*$"),
           re.compile(rf"\b{_VERBS}\s+{_NAME}\s*[,:]?\s*$"))


@dataclass(frozen=True, slots=True)
class Quote:
    start: int  # the opening mark's offset (or the paragraph's first offset for a quotation going on)
    end: int  # past the closing mark, or the paragraph's end
    open_end: bool  # not closed in its paragraph


def quote_style(texts) -> str:
    """``DOUBLE`` or ``SINGLE``: which marks quote speech in ``texts`` (strings), by their opening marks."""
    counts = {DOUBLE: 0, SINGLE: 0}
    for text in texts:
        for style, marks in ((DOUBLE, _DOUBLE_MARKS), (SINGLE, _SINGLE_MARKS)):
            counts[style] += sum(_kind(text, m.start(), style) == _OPENS for m in marks.finditer(text))
    return SINGLE if counts[SINGLE] > counts[DOUBLE] else DOUBLE


def find_quotes(text: str, style: str = DOUBLE, going_on: bool = False) -> list[Quote]:
    """The quotations of one paragraph, in order, not overlapping (see the module doc). ``going_on``: the paragraph
    before ended inside a quotation; where this one's first mark closes one, the quotation goes on from its start
    (a paragraph a line break cut from the one before)."""
    marks = [(m.start(), _kind(text, m.start(), style))
             for m in (_DOUBLE_MARKS if style == DOUBLE else _SINGLE_MARKS).finditer(text)]
    marks = [(at, kind) for at, kind in marks if kind is not None]
    # a weak close closes only where no other close follows before the next opening mark
    strong_after = [False] * len(marks)
    later = False
    for i in range(len(marks) - 1, -1, -1):
        strong_after[i] = later
        kind = marks[i][1]
        if kind in (_CLOSES, _TOGGLE):
            later = True
        elif kind == _OPENS:
            later = False
    quotes: list[Quote] = []
    start = 0 if going_on and marks and marks[0][1] in (_CLOSES, _WEAK_CLOSE) else None
    for i, (at, kind) in enumerate(marks):
        if start is None:
            if kind in (_OPENS, _TOGGLE):
                start = at
            continue
        if kind == _OPENS:  # an opening mark inside an open quotation: the first one was never closed
            if at > start:
                quotes.append(Quote(start, at, False))
            start = at
        elif kind == _CLOSES or kind == _TOGGLE or (kind == _WEAK_CLOSE and not strong_after[i]):
            quotes.append(Quote(start, at + 1, False))
            start = None
    if start is not None:
        quotes.append(Quote(start, len(text), True))
    return quotes


def opens_paragraph(text: str, quotes: list[Quote]) -> bool:
    """Whether the paragraph's first quotation starts at its first character that is not a space."""
    return bool(quotes) and not text[:quotes[0].start].strip()


def speaker(text: str, quote: Quote, previous_end: int, next_start: int) -> str | None:
    """The name the text gives as ``quote``'s speaker, or None; ``previous_end`` / ``next_start``: where the
    quotations before and after it end and start (the narration between is searched, at most ``WINDOW`` each)."""
    after = text[quote.end:min(next_start, quote.end + WINDOW)]
    for pattern in _AFTER:
        found = pattern.match(after)
        if found:
            return " ".join(found.group(1).split())
    before = text[max(previous_end, quote.start - WINDOW):quote.start]
    for pattern in _BEFORE:
        found = pattern.search(before)
        if found:
            return " ".join(found.group(1).split())
    return None


def _kind(text: str, at: int, style: str) -> int | None:
    """How the mark at ``at`` acts: opens, closes, closes only if no close follows (weak), either way (a straight
    mark between two words' worth of context), or None: not a quotation mark (an apostrophe)."""
    mark = text[at]
    before = text[at - 1] if at > 0 else " "
    after = text[at + 1] if at + 1 < len(text) else " "
    opens = before.isspace() or before in _OPEN_BEFORE
    closes = after.isspace() or after in _CLOSE_AFTER
    if style == DOUBLE:
        if mark in _DOUBLE_OPEN:
            return _OPENS
        if mark in _DOUBLE_CLOSE:
            return _CLOSES
        if opens and not closes:
            return _OPENS
        return _CLOSES if closes and not opens else _TOGGLE
    if before.isalnum() and after.isalnum():
        return None  # don't, o'clock
    word = re.match(r"[A-Za-z]+", text[at + 1:at + 8]) if not before.isalnum() else None
    if word and word.group(0).lower() in _ELISIONS and (at + 1 + word.end() >= len(text) or
                                                        not text[at + 1 + word.end()].isalpha()):
        return None  # 'tis, 'em
    if mark in _SINGLE_OPEN or mark == "'" and opens and not closes:
        return _OPENS
    if mark in _SINGLE_CLOSE or mark == "'" and closes:
        # the Bennets' house: a mark after a letter, then a space and a word, may be a possessive
        following = text[at + 1:at + 3]
        if before.isalpha() and following[:1].isspace() and following[1:2].isalnum():
            return _WEAK_CLOSE
        return _CLOSES
    return None
