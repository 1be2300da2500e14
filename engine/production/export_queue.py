"""The export queue's jobs kept in order in ``export-queue.json`` in the app's data folder (``ExportQueue``), written
atomically (``engine.atomic_files``) on every change, with the snapshots of queued text in a folder beside it.

Loading is forgiving: a file that is not JSON is set aside as ``export-queue.json.damaged`` and the queue starts
empty; a job that does not read back is dropped; either way ``warnings`` says what was lost, so the studio can tell
the user and go on. A job that was running when the app quit or died comes back queued: it runs again, and the
segments it had finished come from the segment cache. The jobs themselves: ``engine.production.export_jobs``.
"""

from __future__ import annotations

import json
import os
import uuid
from dataclasses import asdict
from pathlib import Path

from engine import json_limits
from engine.atomic_files import atomic_write_text
from engine.production.book_structure import Book
from engine.production.export_jobs import (
    HEX_ID,
    QUEUED,
    RUNNING,
    Job,
    JobError,
    Snapshot,
    SnapshotChapter,
    check_job,
    snapshot_book,
)

QUEUE_FILE = "export-queue.json"
SNAPSHOT_FOLDER = "export-snapshots"
FILE_VERSION = 1
MAX_JOBS = 1000  # a queue file with more is hand-made or damaged: the first ones are kept
MAX_QUEUE_FILE_BYTES = 64 << 20  # MAX_JOBS jobs of the longest fields
MAX_SNAPSHOT_BYTES = 1 << 30  # the text of the largest document the studio opens, with its JSON escapes


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
        if not HEX_ID.fullmatch(snapshot_id):  # never a path out of the folder
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
            if path.stem not in keep and HEX_ID.fullmatch(path.stem):
                path.unlink(missing_ok=True)
