"""The export queue's jobs: what to export, where, and how far each job has got. Qt-free.

A ``Job`` names its source (a document file, or a ``Snapshot`` of the text or selection saved into the queue's
folder when it was queued, so editing on does not change what is exported), its voice by name (resolved from the
voice library when it runs), format, output, per-chapter flag, chapter selection and seed, and its state and
progress, its loudness target and cast (``engine.production.casting``), and once done the loudness its files reached.
``check_job`` says whether every field has a value it can run with. The queue that keeps the jobs in their file:
``engine.production.export_queue``.

The seed is drawn once when a job is made and kept with it, so a resumed job says each sentence as the
interrupted run did, and the file it writes is the one an uninterrupted run would have written.
"""

from __future__ import annotations

import math
import os
import random
import re
import time
import uuid
from dataclasses import dataclass, field, fields
from pathlib import Path

from engine.core.sampling import MAX_SEED
from engine.core.text.segments import check_target_chars
from engine.production.audio_formats import FORMATS, audio_format
from engine.production.book_structure import Book, book_from_document, book_from_text
from engine.production.casting import MAX_CHARACTERS, MAX_NAME_CHARS, Cast

QUEUED, RUNNING, PAUSED, DONE, FAILED, CANCELLED = "queued", "running", "paused", "done", "failed", "cancelled"
STATES = (QUEUED, RUNNING, PAUSED, DONE, FAILED, CANCELLED)
FINISHED = (DONE, FAILED, CANCELLED)
SUBTITLES = (None, "srt", "vtt")
MAX_FIELD_CHARS = 4096  # of a title, voice, model, path or message read back
HEX_ID = re.compile(r"[0-9a-f]{32}")  # a job's or a snapshot's id


class JobError(ValueError):
    """A job (from the dialog or the queue file) that cannot be run as given."""


@dataclass(frozen=True)
class SnapshotChapter:
    title: str
    start: int
    level: int = 1


@dataclass
class Snapshot:
    """Text frozen when the job was queued, with the chapters the studio knew in it (offsets into ``text``)."""

    text: str
    title: str
    author: str = ""
    chapters: list[SnapshotChapter] = field(default_factory=list)
    headings: list = field(default_factory=list)  # book_from_document reads it; a snapshot keeps none
    warnings: list = field(default_factory=list)


@dataclass
class Job:
    title: str
    output: str  # the file, or with per_chapter the folder
    format: str = "m4b"
    voice: str = ""  # the default voice's name (library voice or preset speaker); "": the studio's default
    model: str = ""  # the checkpoint the studio used when the job was made (shown; the worker's engines speak)
    source: str | None = None  # a document file
    snapshot: str | None = None  # or a snapshot's id (a file in the queue's snapshot folder)
    per_chapter: bool = False
    chapters: list[int] | None = None  # 0-based, book order; None: all
    subtitles: str | None = None
    # the segment target (engine.core.text.segments) when the job was queued, kept so a resumed job cuts its text as it
    # began; None: the default target
    segment_chars: int | None = None
    seed: int = field(default_factory=lambda: random.randrange(MAX_SEED))
    loudness: str = ""  # a target as engine.production.loudness.parse_target reads it; "": the levels as spoken
    dialogue_voice: str = ""  # the voice of quoted speech (engine.production.casting); "": the narrator's
    cast: list[list[str]] = field(default_factory=list)  # [character, voice] pairs
    levels: str = ""  # the loudness the finished files reached, in words
    id: str = field(default_factory=lambda: uuid.uuid4().hex)
    state: str = QUEUED
    done_segments: int = 0
    total_segments: int = 0
    audio_s: float = 0.0
    chars: int = 0  # characters to speak: an estimate until the job is planned
    error: str = ""
    targets: list[str] = field(default_factory=list)  # the files the plan writes
    written: list[str] = field(default_factory=list)  # those finished, removed again by a cancel
    created: float = field(default_factory=time.time)

    def __post_init__(self):
        check_job(self)

    @property
    def finished(self) -> bool:
        return self.state in FINISHED

    @classmethod
    def from_dict(cls, data) -> Job:
        """A job read back from the queue file; ``JobError`` saying what is wrong with it."""
        if not isinstance(data, dict):
            raise JobError("a job is not an object")
        known = {f.name for f in fields(cls)}
        try:
            job = cls(**{k: v for k, v in data.items() if k in known})
        except TypeError as e:
            raise JobError(str(e)) from None
        return job


def check_job(job: Job) -> None:
    """Raise ``JobError`` unless every field of ``job`` has a value it can run with."""
    def text(name, value, empty=True):
        if not isinstance(value, str) or len(value) > MAX_FIELD_CHARS or "\x00" in value or (not empty and not value):
            raise JobError(f"{name} must be text of at most {MAX_FIELD_CHARS} characters")

    def count(name, value):
        if not isinstance(value, int) or isinstance(value, bool) or not 0 <= value <= 1 << 40:
            raise JobError(f"{name} must be a whole number from 0")

    if not isinstance(job.id, str) or not HEX_ID.fullmatch(job.id):
        raise JobError("the job id must be 32 hexadecimal digits")
    text("the title", job.title)
    text("the output", job.output, empty=False)
    if not Path(job.output).is_absolute():
        raise JobError(f"the output {job.output!r} is not an absolute path")
    if job.format not in FORMATS:
        raise JobError(f"the format {job.format!r} is none of {', '.join(FORMATS)}")
    text("the voice", job.voice)
    text("the model", job.model)
    text("the error", job.error)
    text("the loudness", job.loudness)
    text("the dialogue voice", job.dialogue_voice)
    text("the levels", job.levels)
    if job.loudness:
        from engine.errors import UnsupportedError
        from engine.production.loudness import parse_target

        try:
            parse_target(job.loudness)
        except UnsupportedError as e:
            raise JobError(str(e)) from None
    if not isinstance(job.cast, list) or len(job.cast) > MAX_CHARACTERS or not all(
            isinstance(pair, list) and len(pair) == 2 and all(isinstance(n, str) and 0 < len(n) <= MAX_NAME_CHARS
                                                             and "\x00" not in n for n in pair) for pair in job.cast):
        raise JobError(f"the cast must be at most {MAX_CHARACTERS} [character, voice] pairs of names")
    if (job.source is None) == (job.snapshot is None):
        raise JobError("a job has either a source document or a snapshot")
    if job.source is not None:
        text("the source", job.source, empty=False)
    if job.snapshot is not None and (not isinstance(job.snapshot, str) or not HEX_ID.fullmatch(job.snapshot)):
        raise JobError("the snapshot id must be 32 hexadecimal digits")
    if not isinstance(job.per_chapter, bool):
        raise JobError("per_chapter must be true or false")
    if job.chapters is not None:
        if not isinstance(job.chapters, list) or not job.chapters or len(job.chapters) > 100_000:
            raise JobError("the chapter selection must be a non-empty list or null")
        for number in job.chapters:
            count("a chapter", number)
        job.chapters = sorted(set(job.chapters))
    if job.subtitles not in SUBTITLES:
        raise JobError(f"subtitles must be srt, vtt or null, not {job.subtitles!r}")
    if job.segment_chars is not None:
        try:
            check_target_chars(job.segment_chars)
        except ValueError as e:
            raise JobError(str(e)) from None
    if not isinstance(job.seed, int) or isinstance(job.seed, bool) or not 0 <= job.seed < MAX_SEED:
        raise JobError("the seed is out of range")
    if job.state not in STATES:
        raise JobError(f"the state {job.state!r} is none of {', '.join(STATES)}")
    count("done_segments", job.done_segments)
    count("total_segments", job.total_segments)
    count("chars", job.chars)
    if not isinstance(job.audio_s, (int, float)) or isinstance(job.audio_s, bool) or not (
            math.isfinite(job.audio_s) and job.audio_s >= 0):
        raise JobError("audio_s must be a number of seconds from 0")
    for name in ("targets", "written"):
        paths = getattr(job, name)
        if not isinstance(paths, list) or len(paths) > 100_000:
            raise JobError(f"{name} must be a list of paths")
        for path in paths:
            text(f"a path of {name}", path, empty=False)
    if not isinstance(job.created, (int, float)) or isinstance(job.created, bool) or not math.isfinite(job.created):
        raise JobError("created must be a time")


def job_cast(job: Job) -> Cast:
    """The cast a job speaks with (empty: none)."""
    return Cast(job.dialogue_voice or None, tuple((character, voice) for character, voice in job.cast))


def snapshot_book(snapshot: Snapshot) -> Book:
    """The book a snapshot speaks: by its chapters where it has them, else read as plain text."""
    if snapshot.chapters:
        return book_from_document(snapshot)
    book = book_from_text(snapshot.text, snapshot.title)
    book.author = book.author or " ".join(snapshot.author.split())  # the document's author, for the tags
    return book


def default_output(source: str | os.PathLike | None, title: str, fmt: str, per_chapter: bool,
                   data_folder: str | os.PathLike, music_folder: str | os.PathLike, part: str = "") -> Path:
    """Where a job's output goes unless the user says otherwise: beside its source document, named after it, or
    in ``music_folder``/Orator for a text that has no file; never inside ``data_folder`` (the app's own), so
    exports are where a person looks for them and never removed with the app's data. ``part`` follows the name
    when the job speaks a part of the text (" (selection)"), so it never takes the whole text's file name."""
    suffix = audio_format(fmt).suffix
    data_folder = Path(data_folder).resolve()
    folder, stem = None, None
    if source:
        source = Path(source).resolve()
        if not source.parent.is_relative_to(data_folder):
            folder, stem = source.parent, source.stem
    if folder is None:
        folder = Path(music_folder).resolve() / "Orator"
        if folder.is_relative_to(data_folder):
            folder = Path.home().resolve() / "Orator"
    name = _safe_stem(f"{stem if stem else title}{part}")
    return folder / name if per_chapter else folder / f"{name}{suffix}"


def _safe_stem(name: str) -> str:
    from engine.production.export_plan import chapter_file_name

    # chapter_file_name makes a title safe for every file system; its number is cut off again
    return chapter_file_name(1, 1, name or "Export", "").split(" - ", 1)[1]
