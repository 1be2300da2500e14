"""What an export would speak, segment by segment, before a sound is made (Qt-free): ``orator export
--list-segments`` prints it, one JSON object a line, and the studio's Preview segments dialog shows it, both from
``book_segments`` so the two never differ. Each segment is as the exporter plans it
(``engine.production.export_plan.passage_speech``): the text as the reading policy hands it to speech, before the
pronunciation rules, with its chapter (numbered as ``--list-chapters`` numbers it) and its voice mark's name
(None: the default voice).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from dataclasses import asdict, dataclass

from engine.production.book_structure import Book
from engine.production.export_plan import passage_speech


@dataclass(frozen=True)
class SegmentLine:
    chapter: int  # 1-based
    title: str  # the chapter's
    voice: str | None
    text: str

    def as_json(self) -> str:
        return json.dumps(asdict(self))


def book_segments(book: Book, chapters: Iterable[int] | None = None, policy=None,
                  segment_chars: int | None = None) -> Iterator[SegmentLine]:
    """Each segment export speaks of ``book``'s ``chapters`` (0-based, book order; None: all), lazily: a caller
    that shows the first screenful costs one screenful's work."""
    for index in range(len(book.chapters)) if chapters is None else chapters:
        chapter = book.chapters[index]
        for passage in chapter.passages:
            for _, said in passage_speech(passage, policy, segment_chars):
                yield SegmentLine(index + 1, chapter.title, passage.voice, said)
