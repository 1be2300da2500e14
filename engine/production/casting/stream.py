"""Casting text read as it streams: the segments of a reading (the studio's ``qtapp.reading_plan``), cut where the
quotations of their paragraphs start and end, each piece in its span's voice, its offsets still the document's
(so the reading highlight follows the spans). Qt-free.

``cast_stream(pieces, segments, cast)``: ``pieces`` are the text's line pieces ``(offset, text)`` as the reading
reads them, ``segments(pieces)`` the ``(Segment, voice)`` pairs it makes of them, in order. A paragraph (to a
blank line) is cast as ``engine.production.casting.paragraph_spans`` casts one once all its segments are out; a segment
that crosses a span boundary is cut there (a piece with nothing to say stays with the piece before it). A segment whose
speech differs from its text (the reading policy's) is not cut: it takes the voice of the span it starts in. A segment
with a voice mark keeps it. Memory: a paragraph is held until it ends, at most ``MAX_PARAGRAPH`` characters; a longer
one is cast a line at a time (quotations over its lines then go uncast).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator

from engine.core.text.segments import Segment
from engine.production.casting import Cast, paragraph_spans

MAX_PARAGRAPH = 64 * 1024
_BLANK_LINE = re.compile(r"\n[ \t]*\n")
_HAS_WORD = re.compile(r"\w")


def cast_stream(pieces: Iterable[tuple[int, str]], segments: Callable[[Iterable[tuple[int, str]]], Iterable],
                cast: Cast) -> Iterator[tuple[Segment, str | None]]:
    """``segments(pieces)``'s (segment, voice) pairs, cut and voiced by ``cast`` (see the module doc)."""
    buffer = _Buffer()

    def recorded():
        for offset, piece in pieces:
            buffer.add(offset, piece)
            yield offset, piece

    pending: list[tuple[Segment, str | None]] = []
    for pair in segments(recorded()):
        pending.append(pair)
        yield from _ready(buffer, pending, cast, final=False)
    yield from _ready(buffer, pending, cast, final=True)


class _Buffer:
    """The text recorded since the start of the paragraph being read, at document offset ``start``."""

    def __init__(self):
        self.start: int | None = None
        self.text = ""

    def add(self, offset: int, piece: str) -> None:
        if self.start is None or offset != self.start + len(self.text):  # the first piece, or a jump: start anew
            self.start, self.text = offset, ""
        self.text += piece

    def drop_to(self, end: int) -> None:
        self.text = self.text[end - self.start:]
        self.start = end


def _ready(buffer: _Buffer, pending: list, cast: Cast, final: bool) -> Iterator[tuple[Segment, str | None]]:
    while pending and buffer.start is not None:
        end = _paragraph_end(buffer)
        if end is None and not final:
            if len(buffer.text) <= MAX_PARAGRAPH:
                return  # the paragraph goes on
            # one line longer than a paragraph may be: what is out goes uncast, and is forgotten
            yield from pending
            buffer.drop_to(max(buffer.start, pending[-1][0].end))
            pending.clear()
            return
        if end is None:
            end = buffer.start + len(buffer.text)
        if not final and pending[-1][0].start < end:
            return  # some of the paragraph's segments may be still to come
        paragraph = buffer.text[:end - buffer.start]
        spans = paragraph_spans([paragraph], cast)[0]
        while pending and pending[0][0].start < end:
            segment, voice = pending.pop(0)
            yield from _cut(segment, voice, spans, paragraph, buffer.start)
        buffer.drop_to(end)


def _paragraph_end(buffer: _Buffer) -> int | None:
    """Where the paragraph at the buffer's start ends (after its blank line), or, past ``MAX_PARAGRAPH``, its last
    line; None: not yet known."""
    found = _BLANK_LINE.search(buffer.text)
    if found is not None:
        return buffer.start + found.end()
    if len(buffer.text) > MAX_PARAGRAPH:
        line_end = buffer.text.rfind("\n", 0, MAX_PARAGRAPH)
        return buffer.start + line_end + 1 if line_end >= 0 else None
    return None


def _cut(segment: Segment, voice: str | None, spans, paragraph: str, base: int):
    if voice is not None:  # a voice mark: the writer's own choice
        yield segment, voice
        return
    inside = [s for s in spans if s.start + base < segment.end and s.end + base > segment.start]
    if len(inside) <= 1 or segment.spoken is not None:
        yield segment, (inside[0].voice if inside else None)
        return
    pieces: list[list] = []  # [start, end, voice], document offsets
    for span in inside:
        start, end = max(segment.start, span.start + base), min(segment.end, span.end + base)
        text = paragraph[start - base:end - base]
        if pieces and not _HAS_WORD.search(text):
            pieces[-1][1] = end
        elif pieces and not _HAS_WORD.search(paragraph[pieces[-1][0] - base:pieces[-1][1] - base]):
            pieces[-1] = [pieces[-1][0], end, span.voice]
        else:
            pieces.append([start, end, span.voice])
    for start, end, piece_voice in pieces:
        text = paragraph[start - base:end - base]
        lead = len(text) - len(text.lstrip())
        stripped = text.strip()
        yield Segment(start + lead, start + lead + len(stripped), stripped), piece_voice
