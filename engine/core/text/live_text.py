"""Live text: text that arrives while it is being spoken (an LLM's answer, token by token).

``LiveText`` is the append-only handle a producer writes into from any thread (``append(text)``, ``close()``);
an iterator of text deltas does as well (``live_source``). ``LivePlanner`` cuts what arrived into segments with
``engine.core.text.segments.Segmenter`` (a segment is final once no later text can change it) and, for the segment
not final yet, says which of its words are certain already (``engine.core.text.segments.settled_end``) and their
token ids. The rows the model reads of the segment being spoken are ``engine.core.live_track.LiveTrack``'s.

Rules that make a live call speak what ``Engine.stream`` speaks: the segments are the Segmenter's; a segment's
ids are those of its whole text (a word is only taken once it is complete, so the ids taken early are the start
of the segment's ids; should the tokenizer see it otherwise, the ids taken stay taken and the rest follows);
segment ``i`` is sampled with the call's seed + ``i``. With all the text there at the start every segment is
final at once and the call is ``Engine.stream`` in the streaming-text layout, code for code.
"""

from __future__ import annotations

import logging
import threading
from collections import deque
from collections.abc import Callable, Iterable, Iterator

from engine.core.text.segments import DEFAULT_MAX_CHARS, Segment, Segmenter, check_text, settled_end
from engine.errors import TextError

log = logging.getLogger("orator.engine")
POLL_S = 0.05  # how often a loop waiting for text looks at its cancel event
_LOOK_BACK = 1024  # characters kept before the next segment: more than a sentence end's decision looks back at


class LiveText:
    """Append-only text, written from any thread while a generation reads it. ``abort()`` ends it as cancelled
    (a waiting generation wakes and stops)."""

    def __init__(self):
        self._cond = threading.Condition()
        self._pieces: list[str] = []
        self._closed = self._aborted = False
        self._listeners: list[Callable[[], None]] = []
        self.chars = 0

    def append(self, text: str) -> None:
        check_text(text, allow_empty=True)
        with self._cond:
            if self._closed:
                raise TextError("this live text is closed: nothing can be added to it")
            if text:
                self._pieces.append(text)
                self.chars += len(text)
            self._notify()

    def close(self) -> None:
        with self._cond:
            self._closed = True
            self._notify()

    def abort(self) -> None:
        with self._cond:
            self._closed = self._aborted = True
            self._notify()

    @property
    def closed(self) -> bool:
        return self._closed

    @property
    def aborted(self) -> bool:
        return self._aborted

    def listen(self, callback: Callable[[], None]) -> None:
        """Call ``callback()`` (on the writer's thread, so it must be quick) after every change."""
        with self._cond:
            self._listeners.append(callback)

    def read(self, start: int, timeout: float) -> tuple[list[str], bool]:
        """The pieces from number ``start`` on, waiting up to ``timeout`` seconds while there are none; and whether
        the text is closed."""
        with self._cond:
            if len(self._pieces) <= start and not self._closed and timeout > 0:
                self._cond.wait(timeout)
            return self._pieces[start:], self._closed

    def _notify(self) -> None:
        self._cond.notify_all()
        for callback in self._listeners:
            callback()


class _IteratorSource:
    """An iterator of text deltas read as ``LiveText`` is: each read takes its next delta (blocking the reader
    until the iterator gives one, whatever the timeout)."""

    aborted = False

    def __init__(self, deltas: Iterable[str]):
        self._deltas: Iterator[str] = iter(deltas)
        self._taken = 0
        self.closed = False

    def read(self, start: int, timeout: float) -> tuple[list[str], bool]:
        if self.closed:
            return [], True
        try:
            piece = next(self._deltas)
        except StopIteration:
            self.closed = True
            return [], True
        check_text(piece, allow_empty=True)
        return [piece], False


def live_source(text: LiveText | Iterable[str]) -> LiveText | _IteratorSource:
    """What a live call reads: a ``LiveText`` as it is, an iterator of text deltas (not a plain string) wrapped."""
    if isinstance(text, LiveText):
        return text
    if isinstance(text, str) or not isinstance(text, Iterable):
        raise TextError(f"live text must be an engine.core.text.live_text.LiveText or an iterator of text deltas, not "
                        f"{type(text).__name__}")
    return _IteratorSource(text)


class LivePlanner:
    """The segments of live text as it arrives: final ones in a queue (``take_final``), and the ids of the words of
    the next one that are certain already (``open_ids``). ``body_ids(text)``: a segment text's token ids."""

    def __init__(self, source: LiveText | _IteratorSource, body_ids: Callable[[str], list[int]] | None,
                 max_chars: int = DEFAULT_MAX_CHARS):
        self.source, self.body_ids, self.max_chars = source, body_ids, max_chars
        # one sentence a segment: a merged segment would wait for the next sentence before it could end, and the
        # words spoken before it is final are those of its first sentence (``settled_end``)
        self.segmenter = Segmenter(max_chars=max_chars, target_chars=0)
        self.text = ""  # the text received from offset ``origin`` on: what a segment not taken yet may look at
        self.origin = 0
        self.pieces = 0
        self.closed = False
        self.finals: deque[Segment] = deque()
        self.next_start = 0  # where the text of the next segment begins: the end of the last one taken
        self._open: tuple[int, int, list[int]] | None = None  # open_ids, until more text arrives

    @property
    def aborted(self) -> bool:
        return self.source.aborted

    @property
    def finished(self) -> bool:
        """Nothing more to speak: the text is closed and every segment taken."""
        return self.closed and not self.finals

    def pull(self, wait: bool) -> bool:
        """Take the text that arrived (waiting up to ``POLL_S`` for some when ``wait``); whether anything did."""
        if self.closed:
            return False
        pieces, closed = self.source.read(self.pieces, POLL_S if wait else 0)
        self.pieces += len(pieces)
        if pieces:
            joined = "".join(pieces)
            self.text += joined
            self.finals.extend(self.segmenter.feed(joined))
        if closed:
            self.closed = True
            if not self.source.aborted:  # an aborted text's last words are not spoken
                self.finals.extend(self.segmenter.finish())
        if pieces or closed:
            self._open = None
        return bool(pieces) or closed

    def take_final(self) -> Segment:
        seg = self.finals.popleft()
        self.next_start, self._open = seg.end, None
        keep = seg.end - _LOOK_BACK
        if keep - self.origin > 4 * _LOOK_BACK:  # drop what no later segment looks at, in large steps
            self.text, self.origin = self.text[keep - self.origin:], keep
        return seg

    def open_ids(self) -> tuple[int, int, list[int]]:
        """(start, end, ids) of the certain words of the segment after the last one taken: its text so far is
        ``text[start:end]``; no ids while none is certain."""
        if self._open is None:
            text, at = self.text, self.next_start - self.origin
            while at < len(text) and text[at].isspace():
                at += 1
            end = settled_end(text, at, self.max_chars) if at < len(text) else at
            self._open = (self.origin + at, self.origin + end, self.body_ids(text[at:end]) if end > at else [])
        return self._open
