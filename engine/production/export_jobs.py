"""The export queue's jobs and their file: what to export, where, and how far each job has got. Qt-free.

A ``Job`` names its source (a document file, or a ``Snapshot`` of the text or selection saved into the queue's
folder when it was queued, so editing on does not change what is exported), its voice by name (resolved from the
voice library when it runs), format, output, per-chapter flag, chapter selection and seed, and its state and
progress, its loudness target and cast (``engine.production.casting``), and once done the loudness its files reached.
``ExportQueue`` keeps the jobs in order in ``export-queue.json`` in the app's data folder, written
atomically (``engine.atomic_files``) on every change. Loading is forgiving: a file that is not JSON is set aside as
``export-queue.json.damaged`` and the queue starts empty; a job that does not read back is dropped; either way
``warnings`` says what was lost, so the studio can tell the user and go on. A job that was running when the app
quit or died comes back queued: it runs again, and the segments it had finished come from the segment cache.

The seed is drawn once when a job is made and kept with it, so a resumed job says each sentence as the
interrupted run did, and the file it writes is the one an uninterrupted run would have written.
"""

from __future__ import annotations

import json
import math
import os
import random
import re
import time
import uuid
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path

from engine import json_limits
from engine.atomic_files import atomic_write_text
from engine.core.sampling import MAX_SEED
from engine.core.text.segments import check_target_chars
from engine.production.audio_formats import FORMATS, audio_format
from engine.production.book_structure import Book, book_from_document, book_from_text
from engine.production.casting import MAX_CHARACTERS, MAX_NAME_CHARS, Cast

QUEUE_FILE = "export-queue.json"
SNAPSHOT_FOLDER = "export-snapshots"
FILE_VERSION = 1
QUEUED, RUNNING, PAUSED, DONE, FAILED, CANCELLED = "queued", "running", "paused", "done", "failed", "cancelled"
STATES = (QUEUED, RUNNING, PAUSED, DONE, FAILED, CANCELLED)
FINISHED = (DONE, FAILED, CANCELLED)
SUBTITLES = (None, "srt", "vtt")
MAX_JOBS = 1000  # a queue file with more is hand-made or damaged: the first ones are kept
MAX_FIELD_CHARS = 4096  # of a title, voice, model, path or message read back
MAX_QUEUE_FILE_BYTES = 64 << 20  # MAX_JOBS jobs of the longest fields
MAX_SNAPSHOT_BYTES = 1 << 30  # the text of the largest document the studio opens, with its JSON escapes
_ID = re.compile(r"[0-9a-f]{32}")


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
    # began;
    # None: the default target
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

    if not isinstance(job.id, str) or not _ID.fullmatch(job.id):
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
    if job.snapshot is not None and (not isinstance(job.snapshot, str) or not _ID.fullmatch(job.snapshot)):
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


class ExportQueue:
    """The jobs in the order they run, kept in ``folder`` (the app's data folder)."""

    def __init__(self, folder: str | os.PathLike):
        self.folder = Path(folder)
        self.jobs: list[Job] = []
        self.warnings: list[str] = []  # what could not be read back, in words for the user
        self._load()

    @property
    def path(self) -> Path:
        return self.folder / QUEUE_FILE

    @property
    def snapshot_folder(self) -> Path:
        return self.folder / SNAPSHOT_FOLDER

    # ---- jobs ---------------------------------------------------------------------------------------------
    def get(self, job_id: str) -> Job | None:
        return next((job for job in self.jobs if job.id == job_id), None)

    def add(self, job: Job, snapshot: Snapshot | None = None) -> Job:
        """Append ``job`` (with its snapshot, written first, when it has one) and save."""
        check_job(job)
        if self.get(job.id) is not None:
            raise JobError(f"a job {job.id} is already queued")
        if snapshot is not None:
            job.snapshot, job.source = uuid.uuid4().hex, None  # a fresh one: never another job's
            self._write_snapshot(job.snapshot, snapshot)
            job.chars = job.chars or len(snapshot.text)
        check_job(job)
        self.jobs.append(job)
        self.save()
        return job

    def move(self, job_id: str, step: int) -> bool:
        """Move a job ``step`` places (negative: earlier); False when it cannot go further."""
        job = self.get(job_id)
        if job is None:
            return False
        at = self.jobs.index(job)
        to = max(0, min(len(self.jobs) - 1, at + step))
        if to == at:
            return False
        self.jobs.insert(to, self.jobs.pop(at))
        self.save()
        return True

    def remove(self, job_id: str) -> Job | None:
        """Drop a job from the queue and its snapshot from the folder (its output stays, if it has any)."""
        job = self.get(job_id)
        if job is None:
            return None
        self.jobs.remove(job)
        if job.snapshot is not None:
            self._snapshot_path(job.snapshot).unlink(missing_ok=True)
        self.save()
        return job

    def next_queued(self) -> Job | None:
        return next((job for job in self.jobs if job.state == QUEUED), None)

    def update(self, job: Job, **changes) -> None:
        """Change a job's fields and save (a change that would not read back is refused, unsaved)."""
        before = asdict(job)
        for name, value in changes.items():
            setattr(job, name, value)
        try:
            check_job(job)
        except JobError:
            for name, value in before.items():
                setattr(job, name, value)
            raise
        self.save()

    # ---- sources ------------------------------------------------------------------------------------------
    def book(self, job: Job) -> Book:
        """What ``job`` speaks (``TextError`` when its source is gone or has nothing to speak)."""
        from engine.errors import TextError

        if job.source is not None:
            from engine.production.book_sources import load_book

            return load_book(Path(job.source))
        snapshot = self.read_snapshot(job.snapshot)
        if snapshot is None:
            raise TextError(f"the text queued for “{job.title}” is no longer in {self.snapshot_folder}")
        return snapshot_book(snapshot)

    def read_snapshot(self, snapshot_id: str) -> Snapshot | None:
        try:
            data = json_limits.load_file(self._snapshot_path(snapshot_id), max_bytes=MAX_SNAPSHOT_BYTES)
            chapters = [SnapshotChapter(str(c["title"]), int(c["start"]), int(c.get("level", 1)))
                        for c in data.get("chapters", [])]
            text = data["text"]
            if not isinstance(text, str):
                return None
            chapters = [c for c in chapters if 0 <= c.start <= len(text)]
            return Snapshot(text, str(data.get("title", "")), str(data.get("author", "")), chapters)
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            return None

    def _snapshot_path(self, snapshot_id: str) -> Path:
        if not _ID.fullmatch(snapshot_id):  # never a path out of the folder
            raise JobError("the snapshot id must be 32 hexadecimal digits")
        return self.snapshot_folder / f"{snapshot_id}.json"

    def _write_snapshot(self, snapshot_id: str, snapshot: Snapshot) -> None:
        data = {"text": snapshot.text, "title": snapshot.title, "author": snapshot.author,
                "chapters": [asdict(c) for c in snapshot.chapters]}
        atomic_write_text(self._snapshot_path(snapshot_id), json.dumps(data, ensure_ascii=False))

    # ---- the file -----------------------------------------------------------------------------------------
    def save(self) -> None:
        data = {"version": FILE_VERSION, "jobs": [asdict(job) for job in self.jobs]}
        atomic_write_text(self.path, json.dumps(data, ensure_ascii=False, indent=1))

    def _load(self) -> None:
        try:
            raw = self.path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return
        except (OSError, UnicodeDecodeError) as e:
            self._set_aside(f"The export queue could not be read ({e}); it starts empty.")
            return
        try:
            data = json_limits.loads(raw, max_bytes=MAX_QUEUE_FILE_BYTES)
        except ValueError:
            self._set_aside("The export queue's file was damaged; it starts empty.")
            return
        entries = data.get("jobs") if isinstance(data, dict) else None
        if not isinstance(entries, list):
            self._set_aside("The export queue's file holds no list of jobs; it starts empty.")
            return
        dropped = max(0, len(entries) - MAX_JOBS)
        for entry in entries[:MAX_JOBS]:
            try:
                job = Job.from_dict(entry)
            except JobError:
                dropped += 1
                continue
            if self.get(job.id) is not None:
                dropped += 1
                continue
            if job.state == RUNNING:  # the app stopped while it ran: it resumes from the segment cache
                job.state = QUEUED
            self.jobs.append(job)
        if dropped:
            jobs, were = ("jobs", "were") if dropped > 1 else ("job", "was")
            self.warnings.append(f"{dropped} export {jobs} in the queue could not be read and {were} dropped.")
        self._drop_orphan_snapshots()

    def _set_aside(self, message: str) -> None:
        """Keep the unreadable file for whoever wants to look at it, and start empty."""
        try:
            os.replace(self.path, self.path.with_name(QUEUE_FILE + ".damaged"))
            message += f" The old file is kept as {QUEUE_FILE}.damaged."
        except OSError:
            pass
        self.warnings.append(message)

    def _drop_orphan_snapshots(self) -> None:
        """Snapshots no job names: left by a crash between writing one and saving the queue."""
        keep = {job.snapshot for job in self.jobs}
        try:
            entries = list(self.snapshot_folder.glob("*.json"))
        except OSError:
            return
        for path in entries:
            if path.stem not in keep and _ID.fullmatch(path.stem):
                path.unlink(missing_ok=True)


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
    from engine.production.book_export import chapter_file_name

    # chapter_file_name makes a title safe for every file system; its number is cut off again
    return chapter_file_name(1, 1, name or "Export", "").split(" - ", 1)[1]
