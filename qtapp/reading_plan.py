"""What a reading will say, segment by segment, planned only as far as reading has got. Qt-free.

A text source (``StrText`` for a string, ``qtapp.editor.DocumentText`` for the editor) hands out the text
from a position as line pieces: ``(offset, text)``, contiguous, each ending at a line end ("\\n" included)
or cut from a longer line. ``iter_sentences`` turns those pieces into ``Sentence``s: a line that starts
with ``[voice: NAME]`` starts a passage in that voice that holds to the next blank line or the next mark
(``engine.core.text.voice_marks``, the rule export follows too), every other run of lines is a passage in the default
voice, and each passage is cut by ``engine.core.text.reading_policy.PolicySegmenter``
(``engine.core.text.segments.Segmenter`` with
the reading policy: what is said of URLs, code and decoration), so the sentences are exactly the segments the
engine would cut from each passage and their spans are document offsets. A "sentence" here is one such
segment: short sentences of a passage merged into one (``engine.core.text.segments``).
``ReadingPlan`` keeps the sentences read so far and pulls more only when asked, so starting
to read a 20 MB book costs what its first sentences cost.

The same sentences are what the worker speaks (given to the engine as they are), what the editor
highlights and what the exporter writes as subtitles.
"""

from __future__ import annotations

import bisect
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Protocol

from engine.core.text.reading_policy import PolicySegmenter, ReadingPolicy
from engine.core.text.segments import Segment
from engine.core.text.voice_marks import ends_marks, parse_mark, voice_above
from engine.production.casting import Cast
from engine.production.casting.stream import cast_stream

# Characters per piece: a source cuts longer lines, so no one step reads a whole book; a voice mark is read
# from its line's first piece, so one longer than this is text.
MAX_PIECE = 64 * 1024
JUMP_REACH = 64 * 1024  # a jump this far past the planned sentences extends the plan; farther starts a new one


@dataclass(frozen=True, slots=True)
class Sentence:
    segment: Segment  # span in the document and the text spoken
    voice: str | None  # library voice name of its passage, None for the default voice

    @property
    def start(self) -> int:
        return self.segment.start

    @property
    def end(self) -> int:
        return self.segment.end


class TextSource(Protocol):
    def line_start(self, position: int) -> int:
        """Where the line holding ``position`` starts."""

    def lines_above(self, line_start: int) -> Iterator[str]:
        """The lines before the one starting at ``line_start``, nearest first, without their line ends."""

    def pieces(self, start: int, end: int | None = None) -> Iterator[tuple[int, str]]:
        """The text of [start, end) as line pieces, read lazily."""


class StrText:
    """A string as a text source."""

    def __init__(self, text: str):
        self.text = text

    def line_start(self, position: int) -> int:
        return self.text.rfind("\n", 0, position) + 1

    def lines_above(self, line_start: int) -> Iterator[str]:
        end = line_start - 1  # the line end of the line above
        while end >= 0:
            begin = self.text.rfind("\n", 0, end) + 1
            yield self.text[begin:end]
            end = begin - 1

    def pieces(self, start: int = 0, end: int | None = None) -> Iterator[tuple[int, str]]:
        text = self.text
        end = len(text) if end is None else min(end, len(text))
        position = start
        while position < end:
            line_end = text.find("\n", position, end)
            line_end = end if line_end < 0 else line_end + 1
            yield from cut_line(position, text[position:min(line_end, position + MAX_PIECE)])
            position = min(line_end, position + MAX_PIECE)


def cut_line(offset: int, line: str) -> Iterator[tuple[int, str]]:
    """``line`` (one line, its "\\n" included) as pieces of at most ``MAX_PIECE`` characters."""
    for at in range(0, len(line), MAX_PIECE):
        yield offset + at, line[at:at + MAX_PIECE]


def line_pieces(offset: int, text: str) -> Iterator[tuple[int, str]]:
    """``text`` (at ``offset``, any number of lines) as line pieces."""
    position = 0
    while position < len(text):
        line_end = text.find("\n", position)
        line_end = len(text) if line_end < 0 else line_end + 1
        yield from cut_line(offset + position, text[position:line_end])
        position = line_end


def iter_sentences(pieces: Iterable[tuple[int, str]], voice: str | None = None,
                   target_chars: int | None = None, policy: ReadingPolicy | None = None,
                   kinds: Callable[[int], str] | None = None) -> Iterator[Sentence]:
    """The sentences of the text the line pieces hold, in order (see the module docstring); ``voice``: the mark in
    effect where the pieces start (``voice_at``); ``target_chars``: the segments' target length
    (``engine.core.text.segments.Segmenter``); ``policy``: the reading policy (None: the default one); ``kinds``: the
    kind of the block at an offset (``engine.documents.Document.kind_at``) while the text is the document as imported,
    else None (the policy guesses by lines)."""
    segmenter: PolicySegmenter | None = None
    at_line_start = True
    for offset, piece in _marks_whole(pieces):
        if at_line_start:
            name, mark_len = parse_mark(piece.rstrip("\n"))
            blank = voice is not None and ends_marks(piece.rstrip("\n")) and piece.endswith("\n")
            if name is not None or blank or segmenter is None:
                if segmenter is not None:
                    yield from _sentences(segmenter.finish(), voice)
                if name is not None:
                    voice = name
                elif blank:
                    voice = None
                segmenter = PolicySegmenter(policy, offset + mark_len, target_chars=target_chars, kinds=kinds)
                piece = piece[mark_len:]
        at_line_start = piece.endswith("\n")
        yield from _sentences(segmenter.feed(piece), voice)
    if segmenter is not None:
        yield from _sentences(segmenter.finish(), voice)


_MARK_OPENING = "[voice:"
_MAX_MARK_CHARS = 1024  # a mark longer than this is not held back whole: it is read as text


def _marks_whole(pieces: Iterable[tuple[int, str]]) -> Iterator[tuple[int, str]]:
    """``pieces`` with a line's opening piece joined to the next ones until the voice mark it may start is whole,
    so a mark cut between pieces is still a mark."""
    held: tuple[int, str] | None = None
    at_line_start = True
    for offset, piece in pieces:
        if held is not None:
            offset, piece = held[0], held[1] + piece
            held = None
        head = piece.lstrip(" \t")[:len(_MARK_OPENING)].lower()
        if (at_line_start and "\n" not in piece and "]" not in piece and len(piece) < _MAX_MARK_CHARS
                and _MARK_OPENING.startswith(head)):
            held = (offset, piece)
            continue
        at_line_start = piece.endswith("\n")
        yield offset, piece
    if held is not None:
        yield held


def cast_sentences(pieces: Iterable[tuple[int, str]], cast: Cast, voice: str | None = None,
                   target_chars: int | None = None, policy: ReadingPolicy | None = None,
                   kinds: Callable[[int], str] | None = None) -> Iterator[Sentence]:
    """``iter_sentences`` cast (``engine.production.casting.stream``): each quotation in its voice, cut out of its line
    with its own document span, so the highlight follows the voices."""
    def plain(recorded):
        return ((s.segment, s.voice) for s in iter_sentences(recorded, voice, target_chars, policy, kinds))

    for segment, name in cast_stream(pieces, plain, cast):
        yield Sentence(segment, name)


def voice_at(source: TextSource, position: int) -> str | None:
    """The voice mark in effect at ``position``: its own line's, when that starts with one before ``position``,
    else the nearest one above with no blank line between."""
    line_start = source.line_start(position)
    if position > line_start:
        head = "".join(piece for _, piece in source.pieces(line_start, position))
        name, mark_len = parse_mark(head)
        if name is not None and mark_len <= position - line_start:
            return name
    return voice_above(source.lines_above(line_start))


def _sentences(segments: list[Segment], voice: str | None) -> Iterator[Sentence]:
    for segment in segments:
        yield Sentence(segment, voice)


class ReadingPlan:
    """The sentences of one reading, numbered from 0, planned from ``pieces`` as they are asked for."""

    def __init__(self, pieces: Iterable[tuple[int, str]], voice: str | None = None,
                 target_chars: int | None = None, policy: ReadingPolicy | None = None,
                 kinds: Callable[[int], str] | None = None, cast: Cast | None = None):
        self._source = (cast_sentences(pieces, cast, voice, target_chars, policy, kinds) if cast
                        else iter_sentences(pieces, voice, target_chars, policy, kinds))
        self.sentences: list[Sentence] = []  # planned so far
        self._ends: list[int] = []  # sentence ends, for lookups by position
        self.complete = False  # every sentence is planned

    def get(self, index: int) -> Sentence | None:
        """Sentence ``index``, planning up to it; None past the last."""
        while len(self.sentences) <= index and self._pull():
            pass
        return self.sentences[index] if 0 <= index < len(self.sentences) else None

    def run(self, first: int, limit: int) -> list[Sentence]:
        """Up to ``limit`` consecutive sentences from ``first`` that share its voice (one engine call's worth)."""
        head = self.get(first)
        if head is None:
            return []
        run = [head]
        while len(run) < limit and (nxt := self.get(first + len(run))) is not None and nxt.voice == head.voice:
            run.append(nxt)
        return run

    def index_at(self, position: int, reach: int | None = None) -> int | None:
        """The sentence holding ``position``, else the next one after it, else the last; None when there is none,
        or when ``position`` is more than ``reach`` characters past what is planned (plan anew from there)."""
        while not self.complete and (not self._ends or self._ends[-1] <= position):
            if reach is not None and self._ends and position - self._ends[-1] > reach:
                return None
            self._pull()
        if not self.sentences:
            return None
        return min(bisect.bisect_right(self._ends, position), len(self.sentences) - 1)

    def _pull(self) -> bool:
        sentence = next(self._source, None)
        if sentence is None:
            self.complete = True
            return False
        self.sentences.append(sentence)
        self._ends.append(sentence.end)
        return True
