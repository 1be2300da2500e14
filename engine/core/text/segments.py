"""Plan long text as segments for speech: sentences merged into segments spoken one generation each.

Each segment keeps its character span in the original text so a reader can highlight what is being
spoken. Sentences end at Western (. ! ? …) and CJK (。！？；) punctuation and at blank lines, except
where Western punctuation is followed by a lowercase word (``e.g. this``, ``"Why?" she asked``) or a
period ends a title, a Latin abbreviation or an initial (``Dr. Smith``, ``J. R. R. Tolkien``);
a sentence longer than ``max_chars`` is cut where a reader would breathe (``_cut_point``): after the last clause
mark before the limit (, ; : — – -- … 、，；：), else before the last conjunction (and, but, which, that...),
else at the last space, so no segment is unbounded, no model context is exceeded and a phrase stays whole.

Segments are planned for speech, not for grammar: consecutive sentences are merged while the merged span stays
within ``target_chars`` ("Quick! Close the door!" is one generation, with the prosody of the whole), never across
a line break (paragraphs, headings, list items and chapters are lines apart in every text the readers make, hard
wraps are joined before, and the studio pauses between lines), and
a section label ("6.1.", "IV.", "3)") always goes with the sentence after it (its heading), so it is never spoken
on its own. ``split_sentences`` is the plan without merging.

``Segmenter`` does the same over text that arrives in pieces (a document read a window at a time): each
``feed`` returns the segments no later text can change, so a reader plans only what it is about to read,
and its segments are exactly ``split_segments`` of the whole (``split_segments`` is one ``Segmenter``).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from engine.errors import TextError

DEFAULT_MAX_CHARS = 300
# Merged segments aim at this many characters: about 12 s of English speech (150 frames), the length of the
# utterances the model speaks best; far below what a prompt holds (engine.core.frames.capacity: 2048 positions, 1024
# trailing tokens) and a frame budget (engine.core.speech_plan.default_max_frames) that leaves room for slow speech.
DEFAULT_TARGET_CHARS = 200

# A sentence end: terminal punctuation (with closing quotes/brackets) followed by space or end,
# CJK terminal punctuation anywhere, or a paragraph break. A match starts only where a run of
# punctuation starts and never backtracks into it, so a run of n dots costs n steps, not n squared.
_SENTENCE_END = re.compile(
    r"""(?:(?<![.!?…])[.!?…]++["'”’)\]]*+(?=\s|$))"""
    r"""|(?:[。！？；]+[」』”’）)]*)"""
    r"""|(?:\n\s*\n)"""
)
# Where a long sentence is cut, best first (``_cut_point``). A clause mark ends its piece: a comma, semicolon or
# colon followed by a space (not "1,000" or "10:30"), with the quotes or brackets that close on it; a dash
# between words (em dash, a spaced en dash or hyphen, "--" as typewritten text writes it); an ellipsis inside a
# sentence; the CJK marks, which need no space. A conjunction starts the next piece: the cut is the space before it.
# A mark or word must be followed by the space that proves it whole, so a prefix of the text never finds a
# candidate the whole text lacks (``settled_end`` relies on it).
_CLAUSE_MARK = re.compile(
    r"""[,;:]["'”’)\]]*+(?=\s)"""
    r"""|[—―]++["'”’)\]]*+"""
    r"""|(?<=\s)(?:–|-{1,2})(?=\s)|(?<=\w)--(?=[\w\s])"""
    r"""|(?:…|\.\.\.)(?=\s)"""
    r"""|[、，；：]"""
)
_CONJUNCTION = re.compile(
    r"\s+(?=(?:and|but|or|nor|yet|which|that|because|although|though|while|whereas|unless|until|when|where|"
    r"whether|who|whom|whose|since|if)\s)"
)
_SPACE = re.compile(r"\s+")
# Words that a period follows without ending the sentence (compared in lowercase, without the period).
_ABBREVIATIONS = frozenset({"mr", "mrs", "ms", "dr", "prof", "st", "mt", "jr", "sr", "vs", "e.g", "i.e", "cf"})
_LAST_WORD = re.compile(r"[\w.]+$")
# A section label: a number, roman numeral or letter list mark, dotted ("6.1.", "IV.", "3)", "(a)", "A.2"), or
# text with no letter at all ("§ 4.", "***").
_NUMBER = r"(?:\d+|[IVXLC]+|[ivxlc]+|[A-Za-z])"
_LABEL = re.compile(rf"[(\[]?{_NUMBER}(?:[.)\]]+{_NUMBER})*[.)\]]*")
_LOOK_AHEAD = 9  # characters after a sentence end that decide it: 8 for the next word, 1 for the match itself
_LOOK_BEHIND = 12  # characters before a period that hold the abbreviation or initial it may end


@dataclass(frozen=True, slots=True)
class Segment:
    start: int  # character offset in the original text
    end: int  # exclusive
    text: str  # stripped text of the span
    spoken: str | None = None  # what is said instead of ``text`` (pronunciation rules); None: ``text`` as written

    @property
    def speech(self) -> str:
        """What the model is given for this segment: ``spoken`` where the rules changed it, else ``text``."""
        return self.text if self.spoken is None else self.spoken


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


def segments_of(text: str | Sequence[Segment], target_chars: int | None = None) -> list[Segment]:
    """What a call speaks: the segments of ``text`` (merged up to ``target_chars``, see ``Segmenter``), or ``text``
    itself when it is a sequence of segments already cut (a reader that plans a document passes them; their spans
    are its own offsets). ``TextError`` unless there is something to speak and every segment is a ``Segment``
    with a span and speakable text; ``ValueError`` for a target that is none (``check_target_chars``)."""
    if target_chars is not None:
        check_target_chars(target_chars)
    if isinstance(text, str) or text is None:
        check_text(text)
        return split_segments(text, target_chars=target_chars)
    if not isinstance(text, Sequence):
        raise TextError(f"the text must be a string or a sequence of segments, not {type(text).__name__}")
    segments = list(text)
    if not segments:
        raise TextError("there is no text to speak")
    for index, seg in enumerate(segments):
        if not isinstance(seg, Segment):
            raise TextError(f"segment {index} must be an engine.core.text.segments.Segment, not {type(seg).__name__}")
        if not (isinstance(seg.start, int) and isinstance(seg.end, int) and 0 <= seg.start <= seg.end):
            raise TextError(f"segment {index} has no valid span ({seg.start!r}, {seg.end!r})")
        check_text(seg.text, what=f"segment {index}")
        if seg.spoken is not None:
            check_text(seg.spoken, what=f"spoken form of segment {index}")
    return segments


def split_segments(text: str, max_chars: int = DEFAULT_MAX_CHARS, target_chars: int | None = None) -> list[Segment]:
    """The speech segments of ``text`` with their spans (see the module docstring); whitespace-only pieces are
    dropped. ``target_chars``: see ``Segmenter``; 0 gives sentences (``split_sentences``)."""
    segmenter = Segmenter(max_chars=max_chars, target_chars=target_chars)
    return segmenter.feed(text) + segmenter.finish()


def split_sentences(text: str, max_chars: int = DEFAULT_MAX_CHARS) -> list[Segment]:
    """The sentences of ``text`` (overlong ones cut), unmerged."""
    return split_segments(text, max_chars, target_chars=0)


def iter_segments(pieces: Iterable[str], start: int = 0, max_chars: int = DEFAULT_MAX_CHARS,
                  target_chars: int | None = None):
    """``split_segments`` of the concatenated ``pieces``, offsets from ``start``, produced as the pieces are read."""
    segmenter = Segmenter(start, max_chars, target_chars)
    for piece in pieces:
        yield from segmenter.feed(piece)
    yield from segmenter.finish()


def check_target_chars(target_chars, max_chars: int = DEFAULT_MAX_CHARS) -> int:
    """``target_chars`` as a segment target, or a ``ValueError`` saying why it is none: 0 (sentences) or a whole
    number of characters from 20 to ``max_chars``."""
    if isinstance(target_chars, bool) or not isinstance(target_chars, int):
        raise ValueError(f"the segment target must be a whole number of characters, not {target_chars!r}")
    if target_chars != 0 and not 20 <= target_chars <= max_chars:
        raise ValueError(f"the segment target must be 0 (one sentence a segment) or from 20 to {max_chars} "
                         f"characters, not {target_chars}")
    return target_chars


class Segmenter:
    """``split_segments`` over text fed piece by piece, offsets counted from ``start``.

    ``feed(piece)`` returns the segments that are final. A sentence is final when its end is followed by enough
    text to decide it (``_LOOK_AHEAD``), or it is a cut piece of a sentence already known to be longer than
    ``max_chars``; a merged segment is final when the sentence after it is, and does not join it (too long, or
    a line break between), or when it has reached ``target_chars``. ``finish()`` returns the rest. Only
    the current sentence, the segment being merged and a few characters before them are kept, so the memory is
    bounded by the longest sentence, not by the text.
    """

    def __init__(self, start: int = 0, max_chars: int = DEFAULT_MAX_CHARS, target_chars: int | None = None):
        """``target_chars``: None for ``DEFAULT_TARGET_CHARS`` (or ``max_chars`` when that is less), 0 for
        sentences, else from 20 to ``max_chars`` (``check_target_chars``)."""
        if max_chars < 20:
            raise ValueError("max_chars must be at least 20")
        self.max_chars = max_chars
        if target_chars is None:
            target_chars = min(DEFAULT_TARGET_CHARS, max_chars)
        self.target_chars = check_target_chars(target_chars, max_chars)
        self._group: list[Segment] = []  # the sentences of the segment being merged, absolute offsets
        self._text = ""  # the text from ``_origin`` on that may still be needed
        self._origin = start  # offset of ``_text[0]``
        self._pos = 0  # start of the current sentence in ``_text``
        self._scan = 0  # where the search for the next sentence end resumes in ``_text``

    def feed(self, piece: str) -> list[Segment]:
        self._text += piece
        return self._run(final=False)

    def finish(self) -> list[Segment]:
        return self._run(final=True)

    def _run(self, final: bool) -> list[Segment]:
        text, origin, out = self._text, self._origin, []
        m = None
        for m in _SENTENCE_END.finditer(text, self._scan):
            if not final and m.end() + _LOOK_AHEAD > len(text):
                break  # more text may extend this match or decide it continues
            self._scan = m.end()
            if not _continues(text, m):
                _add(out, text, self._pos, m.end(), self.max_chars)
                self._pos = m.end()
            m = None
        if final:
            _add(out, text, self._pos, len(text), self.max_chars)
            self._pos = self._scan = len(text)
        else:
            if m is None:  # no match can start before trailing whitespace (a paragraph break may end there)
                self._scan = max(self._scan, _trailing_space_start(text, self._scan, len(text)))
            self._cut_known_long(out, m.start() if m is not None else len(text))
        sentences = [Segment(origin + seg.start, origin + seg.end, seg.text) for seg in out] if origin else out
        merged = self._merge(sentences, final) if self.target_chars else sentences
        held = self._group[0].start - origin if self._group else len(text)
        keep = max(0, min(self._pos, self._scan, held) - _LOOK_BEHIND)
        if keep > 4096 or final:  # drop what no later match can look at, in large steps
            self._text, self._origin = text[keep:], self._origin + keep
            self._pos, self._scan = self._pos - keep, self._scan - keep
        return merged

    def _merge(self, sentences: list[Segment], final: bool) -> list[Segment]:
        """The segments that ``sentences`` (final, in order, after those already merged) complete."""
        out, group = [], self._group
        for sentence in sentences:
            if group and not self._joins(group, sentence):
                out.append(self._merged(group))
                group.clear()
            group.append(sentence)
            if group[-1].end - group[0].start >= self.target_chars and not _is_label(group[-1].text):
                out.append(self._merged(group))  # nothing more can join: out now, not when the next sentence is
                group.clear()
        if group and (final or self._closed(group)):
            out.append(self._merged(group))
            group.clear()
        return out

    def _closed(self, group: list[Segment]) -> bool:
        """Whether no later sentence can join ``group``, judged from the whitespace after it: a line break (after
        a sentence that is no label), or more of it than the segment has room for. Its segment is then final now
        rather than when the next sentence is."""
        rest = self._text[group[-1].end - self._origin:]
        gap = len(rest) - len(rest.lstrip())
        label = _is_label(group[-1].text)
        if not label and "\n" in rest[:gap]:
            return True
        room = self.max_chars if label else self.target_chars
        return group[-1].end + gap + 1 - group[0].start > room

    def _joins(self, group: list[Segment], sentence: Segment) -> bool:
        """Whether ``sentence`` joins the segment of ``group``: after a label it always does (within
        ``max_chars``); else when the merged span is within ``target_chars`` and no line break is between."""
        length = sentence.end - group[0].start
        if _is_label(group[-1].text):
            return length <= self.max_chars
        gap = self._text[group[-1].end - self._origin:sentence.start - self._origin]
        return length <= self.target_chars and "\n" not in gap

    def _merged(self, group: list[Segment]) -> Segment:
        start, end = group[0].start, group[-1].end
        return group[0] if len(group) == 1 else Segment(start, end, self._text[start - self._origin:end - self._origin])

    def _cut_known_long(self, out: list[Segment], safe: int) -> None:
        """Emit the cut pieces of the current sentence while it is certainly longer than ``max_chars``: its end
        is at least the last non-space character before ``safe`` (the first undecided sentence end)."""
        text = self._text
        known_end = _trailing_space_start(text, self._pos, safe)
        while True:
            start = self._pos
            while start < known_end and text[start].isspace():
                start += 1
            if known_end - start <= self.max_chars:
                return
            cut = _cut_point(text, start, start + self.max_chars)
            _add(out, text, start, cut, self.max_chars)
            self._pos = cut


def _is_label(text: str) -> bool:
    """Whether ``text`` (one sentence) is a section label that must not be spoken on its own."""
    return _LABEL.fullmatch(text) is not None or not any(ch.isalpha() for ch in text)


def _trailing_space_start(text: str, low: int, high: int) -> int:
    """The start of the whitespace that ends ``text[low:high]`` (``high`` if it ends in none)."""
    while high > low and text[high - 1].isspace():
        high -= 1
    return high


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


def _cut_point(text: str, start: int, limit: int, known: int | None = None) -> int:
    """Where the piece of a long sentence that starts at ``start`` ends, within ``text[start:limit]``: after the
    last clause mark, else before the last conjunction, else at the last space, each looked for in the last two
    thirds of the span (a mark near its start would leave a scrap); with none there, the last space before them;
    ``limit`` if there is no space at all. ``known``: where the text received so far ends, when that is before
    ``limit``: the cut found then is at or before the one the whole text gets (candidates only add up as text
    arrives), which is what lets live text settle words early (``settled_end``)."""
    end = limit if known is None else min(known, limit)
    low = start + max(1, (limit - start) // 3)
    for pattern, after in ((_CLAUSE_MARK, True), (_CONJUNCTION, False), (_SPACE, False)):
        best = None
        for m in pattern.finditer(text, low, end):
            best = m.end() if after else m.start()
        if best is not None and best > start:
            return best
    best = None
    for m in _SPACE.finditer(text, start + 1, min(low, end)):
        best = m.start()
    return best if best is not None and best > start else limit


def settled_end(text: str, start: int, max_chars: int = DEFAULT_MAX_CHARS) -> int:
    """How far the segment that begins at ``start`` (the first non-space character after the previous segment) is
    certain to reach however ``text``, received so far, goes on: an offset at a word boundary, at most its first
    sentence end that is undecided (too little text after it, ``_LOOK_AHEAD``) or decided to end a sentence, and
    within ``max_chars`` of ``start`` and at most where a longer sentence would be cut by what has arrived (a cut
    only moves later as text arrives: ``_cut_point``). Live text speaks a segment's words up to here before the
    segment is final (``engine.core.text.live_text``)."""
    bound = start + max_chars - 1  # a cut is found before the limit, never at it (``_cut_point``)
    bound = min(bound, _cut_point(text, start, start + max_chars, len(text)))
    for m in _SENTENCE_END.finditer(text, start):
        if m.start() >= bound or m.end() + _LOOK_AHEAD > len(text) or not _continues(text, m):
            bound = min(bound, m.end())
            break
    # a word boundary the tokenizer keeps: the start of a run of spaces after a word; a newline after punctuation
    # would join that punctuation's token
    best = start
    for m in re.finditer(r"\s+", text[start:min(bound + 1, len(text))]):
        at = start + m.start()
        if at > bound:
            break
        if text[at] not in "\r\n" or text[at - 1].isalnum():
            best = at
    return best
