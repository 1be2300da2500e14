"""What an export will write, decided before a sound is made (``BookExporter.plan`` in
``engine.production.book_export``): the options it runs with (``ExportOptions``), and per file (``OutputPlan``) its
tags and the sequence of segments to speak (``Speech``), pauses (``Pause``) and chapter starts (``ChapterStart``).
``passage_speech`` cuts a passage into the segments said; ``chapter_file_name`` names a per-chapter file.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from engine.core.text.reading_policy import ReadingPolicy, policy_segments
from engine.production.audio_metadata import Tags
from engine.production.book_structure import Passage, Pauses
from engine.production.loudness import LoudnessTarget

MAX_FILE_TITLE_CHARS = 80  # of a chapter's title in its file name
_UNSAFE_NAME = re.compile(r'[\x00-\x1f\x7f/\\:*?"<>|]+')


@dataclass(frozen=True)
class ExportOptions:
    format: str = "m4b"
    pauses: Pauses = field(default_factory=Pauses)
    per_chapter: bool = False  # one file per chapter in the output folder
    chapters: tuple[int, ...] | None = None  # the chapters to export (0-based, book order); None: all
    subtitles: str | None = None  # "srt", "vtt" or None
    bitrate: int | None = None  # bits per second of a lossy format; None: the format's default
    max_frames: int | None = None  # per segment; None: the engine's budget
    segment_chars: int | None = None  # target length (engine.core.text.segments.Segmenter); None: default
    cover: bytes | None = None  # overrides the book's
    loudness: LoudnessTarget | None = None  # one gain for the whole book to reach it; None: levels as spoken


@dataclass(frozen=True)
class Speech:
    text: str  # as written: what its subtitle cue shows
    voice: object  # engine Voice
    key: str
    spoken: str = ""  # what is said (the pronunciation rules applied); what its key and seed come from
    said: str = ""  # what the reading policy hands to speech, before the pronunciation rules

    def __post_init__(self):
        if not self.said:
            object.__setattr__(self, "said", self.text)
        if not self.spoken:
            object.__setattr__(self, "spoken", self.said)


@dataclass(frozen=True)
class Pause:
    seconds: float


@dataclass(frozen=True)
class ChapterStart:
    title: str


@dataclass
class OutputPlan:
    path: Path
    tags: Tags
    items: list  # Speech, Pause and ChapterStart, in order

    @property
    def speeches(self) -> list[Speech]:
        return [item for item in self.items if isinstance(item, Speech)]


def chapter_file_name(number: int, count: int, title: str, suffix: str) -> str:
    """``07 - The Title.mp3``: numbered so they sort in book order, the title made safe for every file system."""
    safe = " ".join(_UNSAFE_NAME.sub(" ", title).split()).strip(" .")
    if len(safe) > MAX_FILE_TITLE_CHARS:
        safe = safe[:MAX_FILE_TITLE_CHARS].rstrip(" .")
    while len(safe.encode("utf-8")) > 3 * MAX_FILE_TITLE_CHARS // 2:  # 120 bytes: well within any name limit
        safe = safe[:-1]
    digits = max(2, len(str(count)))
    return f"{number:0{digits}d} - {safe.rstrip(' .') or f'Chapter {number}'}{suffix}"


def passage_speech(passage: Passage, policy: ReadingPolicy | None = None,
                   target_chars: int | None = None) -> list[tuple[str, str]]:
    """(as written, as said) of each segment export speaks of ``passage``: its segments under the reading policy
    (``engine.core.text.reading_policy``; None: the default policy), each with its runs of whitespace made one space.
    What is said is before the pronunciation rules. ``orator export --list-segments`` prints the same."""
    out = []
    for seg in policy_segments(passage.text, policy, target_chars=target_chars, kinds=passage.kind):
        out.append((" ".join(seg.text.split()), " ".join(seg.speech.split())))
    return out

