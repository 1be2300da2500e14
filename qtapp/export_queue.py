"""The studio's export queue: the jobs of ``engine.production.export_jobs`` run one at a time on a thread of their own,
while the user reads and edits.

``ExportRunner`` lives on the export thread and does the slow work: it reads a job's book, then speaks it through
``engine.production.book_export.BookExporter`` (the exporter of ``orator export``), one engine call per sentence, with
the segment cache, so a paused, interrupted or crashed job resumes where it stopped. ``ExportQueueController`` lives on
the GUI thread and owns the ``ExportQueue``: it adds, pauses, resumes, cancels, moves and removes jobs, resolves their
voices by name when they start (``resolve_voice``, as reading does) and hears the runner's signals.

The engines are the speech worker's (``SpeechWorker.engine_when_ready``): one engine per model, whose generation
lock lets one call speak at a time. Reading holds it for the whole run of sentences it is speaking, an export
for one sentence, so an export waits behind reading and reading waits at most one sentence behind an export.

Pause finishes the sentence being spoken (it is in the cache) and stops; cancel stops within an engine chunk and
removes the job's files, finished ones included; the temporary files being written are removed either way.
"""

from __future__ import annotations

import dataclasses
import threading
import time
from pathlib import Path

from PySide6.QtCore import QObject, QThread, QTimer, QUrl, Signal, Slot
from PySide6.QtGui import QDesktopServices

from engine.production.book_export import BookExporter, ExportCancelled
from engine.production.casting import cast_book
from engine.production.export_jobs import (
    CANCELLED,
    DONE,
    FAILED,
    PAUSED,
    QUEUED,
    RUNNING,
    Job,
    Snapshot,
    job_cast,
)
from engine.production.export_leftovers import remove_leftovers
from engine.production.export_plan import ExportOptions
from engine.production.export_queue import ExportQueue
from engine.production.loudness import parse_target, report
from engine.production.segment_cache import SegmentCache, default_cache_dir
from qtapp.engine_errors import StudioError, describe_error

SAVE_EVERY_S = 2.0  # progress is saved this often at most: a crash loses at most this much of the bar, no audio


class ExportPaused(Exception):
    """The job was paused: it stopped after the sentence it was speaking."""


class ExportRunner(QObject):
    """The export thread's worker: ``load`` a job's book, then ``export`` it (requested through signals)."""

    book_ready = Signal(str, object)  # job id, Book
    planned = Signal(str, object)  # job id, [file paths the plan writes]
    progress = Signal(str, object)  # job id, engine.production.book_export.Progress
    file_written = Signal(str, str)  # job id, a file finished (one per chapter, or the one file)
    ended = Signal(str, str, str)  # job id, DONE / PAUSED / CANCELLED / FAILED, the error in words

    _load_requested = Signal(object)
    _export_requested = Signal(object, object, object)

    def __init__(self, queue: ExportQueue, engine_for, cache_folder: Path, max_frames: int | None = None,
                 pronunciation=None, segment_chars: int | None = None):
        super().__init__()
        self.max_frames = max_frames  # per sentence; None: the engine's budget
        # the studio's rules (engine.pronunciation.Lexicon, or None); the window replaces it when rules are saved,
        # and each job reads it when it starts
        self.pronunciation = pronunciation
        self.segment_chars = segment_chars  # the segments' target (engine.core.text.segments); None: the default
        # engine.core.text.reading_policy.ReadingPolicy; None: the default; read as a job starts
        self.reading_policy = None
        self.queue = queue  # only its read-only ``book`` is called from this thread
        self.engine_for = engine_for  # (voice, cancel=event) -> engine; may block while a model loads
        self.cache_folder = cache_folder
        self.pause = threading.Event()
        self.cancel = threading.Event()
        self._load_requested.connect(self.load)
        self._export_requested.connect(self.export)

    @Slot(object)
    def load(self, job: Job) -> None:
        try:
            book = cast_book(self.queue.book(job), job_cast(job))
        except Exception as exc:  # noqa: BLE001 - every failure becomes the job's message
            self.ended.emit(job.id, FAILED, describe_error(exc))
            return
        self.book_ready.emit(job.id, book)

    @Slot(object, object, object)
    def export(self, job: Job, book, voices: dict) -> None:
        outcome, message = DONE, ""
        try:
            message = self._export(job, book, voices)
        except ExportPaused:
            outcome = PAUSED
        except ExportCancelled:
            outcome = CANCELLED
        except Exception as exc:  # noqa: BLE001
            outcome, message = FAILED, describe_error(exc)
        self.ended.emit(job.id, outcome, message)

    def _engine(self, voice):
        engine = self.engine_for(voice, cancel=self.cancel)
        if self.cancel.is_set():
            raise ExportCancelled
        if engine is None:
            raise StudioError("No model is loaded yet: wait for it to load, or pick one in Settings.")
        return engine

    def _export(self, job: Job, book, voices: dict) -> str:
        """Export ``job``; returns the loudness its files reached, in words."""
        target = parse_target(job.loudness) if job.loudness else None
        options = ExportOptions(format=job.format, per_chapter=job.per_chapter, subtitles=job.subtitles,
                                chapters=None if job.chapters is None else tuple(job.chapters),
                                max_frames=self.max_frames, loudness=target,
                                segment_chars=self.segment_chars if job.segment_chars is None else job.segment_chars)
        sampling = dataclasses.replace(self._engine(voices[None]).defaults, seed=job.seed)
        current = [None]

        def heard(progress) -> None:
            if current[0] is not None and progress.output != current[0]:
                self.file_written.emit(job.id, str(current[0]))
            current[0] = progress.output
            self.progress.emit(job.id, progress)
            if self.pause.is_set():  # the sentence just spoken is in the cache: stop here
                raise ExportPaused

        exporter = BookExporter(self._engine, sampling=sampling, cache=SegmentCache(self.cache_folder),
                                progress=heard, cancel=self.cancel, pronunciation=self.pronunciation,
                                reading_policy=self.reading_policy)
        plans = exporter.plan(book, job.output, options, voices)
        self.planned.emit(job.id, [str(plan.path) for plan in plans])
        if self.pause.is_set():
            raise ExportPaused
        for path in exporter.run(plans, book, options):
            if str(path) != str(current[0]):
                self.file_written.emit(job.id, str(path))
        if current[0] is not None:
            self.file_written.emit(job.id, str(current[0]))
        off = exporter.levels.off_target(target)
        more = f"; off target: {'; '.join(off[:3])}{' …' if len(off) > 3 else ''}" if off else ""
        return report(exporter.loudness, target) + more


class ExportQueueController(QObject):
    """The queue of the window: ``add`` a job, ``pause`` / ``resume`` / ``cancel`` / ``move`` / ``remove`` one;
    ``changed`` after any change to the jobs, ``message`` for the status bar, ``failed`` for the banner."""

    changed = Signal()
    added = Signal(str)  # a job's id, once it is queued
    message = Signal(str)
    failed = Signal(str)

    def __init__(self, data_folder: Path, engine_for, resolve_voice, ensure_model=None, cache_folder=None,
                 max_frames: int | None = None, pronunciation=None, segment_chars: int | None = None,
                 parent: QObject | None = None):
        super().__init__(parent)
        self.queue = ExportQueue(data_folder)
        self.resolve_voice = resolve_voice  # name or None -> Voice, on this thread
        self.ensure_model = ensure_model or (lambda voice: None)
        self.cache_folder = Path(cache_folder) if cache_folder else default_cache_dir()
        self.running: str | None = None  # the id of the job on the export thread
        self.progress: dict[str, object] = {}  # job id -> its latest Progress, this session
        self.chars_per_s: float | None = None  # measured speed of speech, for the time left of queued jobs
        self._saved_at = 0.0
        self._closed = False
        self._thread = QThread()
        self._thread.setObjectName("export")
        self.runner = ExportRunner(self.queue, engine_for, self.cache_folder, max_frames, pronunciation, segment_chars)
        self.runner.moveToThread(self._thread)
        self.runner.book_ready.connect(self._on_book)
        self.runner.planned.connect(self._on_planned)
        self.runner.progress.connect(self._on_progress)
        self.runner.file_written.connect(self._on_file_written)
        self.runner.ended.connect(self._on_ended)
        self._thread.start()
        # what was queued (or running) when the app last stopped goes on once the caller has connected to us
        QTimer.singleShot(0, self.start_next)

    @property
    def warnings(self) -> list[str]:
        return self.queue.warnings

    @property
    def jobs(self) -> list[Job]:
        return self.queue.jobs

    # ---- the user's requests ------------------------------------------------------------------------------
    def add(self, job: Job, snapshot: Snapshot | None = None) -> Job:
        """Queue ``job``; one without a segment target keeps the studio's current one (``runner.segment_chars``)."""
        if job.segment_chars is None:
            job.segment_chars = self.runner.segment_chars
        self.queue.add(job, snapshot)
        self.message.emit(f"Queued “{job.title}” for export.")
        self.added.emit(job.id)
        self.changed.emit()
        self.start_next()
        return job

    def start_next(self) -> None:
        """Start the first queued job when none runs."""
        if self.running is not None or self._closed:
            return
        job = self.queue.next_queued()
        if job is None:
            return
        self.queue.update(job, state=RUNNING, error="")
        self.running = job.id
        self.runner.pause.clear()
        self.runner.cancel.clear()
        self.changed.emit()
        self.runner._load_requested.emit(dataclasses.replace(job))

    def pause(self, job_id: str) -> None:
        job = self.queue.get(job_id)
        if job is None:
            return
        if job_id == self.running:
            self.runner.pause.set()  # it stops after the sentence it is speaking (_on_ended)
        elif job.state == QUEUED:
            self.queue.update(job, state=PAUSED)
            self.changed.emit()

    def resume(self, job_id: str) -> None:
        """Queue a paused, failed or cancelled job again; it goes on from the sentences already made."""
        job = self.queue.get(job_id)
        if job is None or job.state not in (PAUSED, FAILED, CANCELLED):
            return
        self.queue.update(job, state=QUEUED, error="")
        self.changed.emit()
        self.start_next()

    def cancel(self, job_id: str) -> None:
        job = self.queue.get(job_id)
        if job is None or job.state in (DONE, CANCELLED):
            return
        if job_id == self.running:
            self.runner.cancel.set()  # it stops within a chunk (_on_ended removes its files)
            return
        self._remove_files(job)
        self.queue.update(job, state=CANCELLED, written=[])
        self.message.emit(f"Cancelled the export of “{job.title}”; its files were removed.")
        self.changed.emit()

    def move(self, job_id: str, step: int) -> bool:
        moved = self.queue.move(job_id, step)
        if moved:
            self.changed.emit()
        return moved

    def remove(self, job_id: str) -> bool:
        """Take a job off the list (its finished files stay); a running one is cancelled first."""
        if job_id == self.running:
            self.message.emit("Cancel the running export before removing it.")
            return False
        job = self.queue.get(job_id)
        if job is not None and job.state != DONE:
            self._remove_files(job)
        removed = self.queue.remove(job_id) is not None
        self.progress.pop(job_id, None)
        if removed:
            self.changed.emit()
        return removed

    def output_folder(self, job_id: str) -> Path | None:
        job = self.queue.get(job_id)
        if job is None:
            return None
        return Path(job.output) if job.per_chapter else Path(job.output).parent

    def open_folder(self, job_id: str) -> bool:
        folder = self.output_folder(job_id)
        while folder is not None and not folder.is_dir() and folder != folder.parent:
            folder = folder.parent
        return folder is not None and QDesktopServices.openUrl(QUrl.fromLocalFile(str(folder)))

    # ---- time left ----------------------------------------------------------------------------------------
    def time_left(self, job_id: str) -> float | None:
        progress = self.progress.get(job_id)
        return None if progress is None else progress.eta_s

    def overall(self) -> tuple[float, float | None]:
        """(fraction done, seconds left or None) over the running job and those queued after it."""
        waiting = [j for j in self.queue.jobs if j.state == QUEUED]
        running = self.queue.get(self.running) if self.running else None
        progress = self.progress.get(self.running) if self.running else None
        done = progress.done_chars if progress is not None else 0
        total = (progress.total_chars if progress is not None else (running.chars if running else 0))
        total += sum(j.chars for j in waiting)
        fraction = done / total if total else (1.0 if running is None else 0.0)
        eta = progress.eta_s if progress is not None else None
        if waiting:
            later = sum(j.chars for j in waiting)
            eta = None if eta is None or not self.chars_per_s else eta + later / self.chars_per_s
        return fraction, (eta if running is not None or waiting else 0.0)

    # ---- the runner's signals -----------------------------------------------------------------------------
    def _on_book(self, job_id: str, book) -> None:
        job = self.queue.get(job_id)
        if job is None or job_id != self.running:
            return
        if self.runner.cancel.is_set() or self.runner.pause.is_set():
            self._on_ended(job_id, CANCELLED if self.runner.cancel.is_set() else PAUSED, "")
            return
        for warning in book.warnings:
            self.message.emit(f"{job.title}: {warning}")
        names = {None, *book.voices}
        voices = {name: self.resolve_voice(name if name is not None else (job.voice or None)) for name in names}
        for voice in voices.values():
            self.ensure_model(voice)
        self.runner._export_requested.emit(dataclasses.replace(job), book, voices)

    def _on_planned(self, job_id: str, targets: list) -> None:
        job = self.queue.get(job_id)
        if job is not None:
            self.queue.update(job, targets=list(targets))

    def _on_progress(self, job_id: str, progress) -> None:
        job = self.queue.get(job_id)
        if job is None:
            return
        self.progress[job_id] = progress
        remaining = progress.total_chars - progress.done_chars
        if progress.eta_s and remaining > 0:
            self.chars_per_s = remaining / progress.eta_s
        job.done_segments, job.total_segments = progress.done_segments, progress.total_segments
        job.audio_s, job.chars = progress.audio_s, progress.total_chars
        now = time.monotonic()
        if now - self._saved_at >= SAVE_EVERY_S:
            self._saved_at = now
            self.queue.save()
        self.changed.emit()

    def _on_file_written(self, job_id: str, path: str) -> None:
        job = self.queue.get(job_id)
        if job is not None and path not in job.written:
            self.queue.update(job, written=[*job.written, path])

    def _on_ended(self, job_id: str, outcome: str, message: str) -> None:
        if job_id != self.running:
            return
        self.running = None
        job = self.queue.get(job_id)
        if job is not None:
            if outcome == CANCELLED:
                self._remove_files(job)
                self.queue.update(job, state=CANCELLED, written=[])
                self.message.emit(f"Cancelled the export of “{job.title}”; no file was left.")
            elif outcome == FAILED:
                self.queue.update(job, state=FAILED, error=message)
                self.failed.emit(f"Export of “{job.title}” failed: {message}")
            elif outcome == PAUSED:
                self.queue.update(job, state=PAUSED)
                self.message.emit(f"Paused the export of “{job.title}”; Resume goes on where it stopped.")
            else:
                self.queue.update(job, state=DONE, done_segments=job.total_segments, levels=message[:4096])
                self.message.emit(f"Exported “{job.title}” to {job.output}: {message}.")
        self.changed.emit()
        self.start_next()

    def _remove_files(self, job: Job) -> None:
        """The job's finished files, and the temporary ones a killed run recorded; never anything else."""
        cache = SegmentCache(self.cache_folder)
        for target in job.targets or [job.output]:
            remove_leftovers(cache, target)
        for path in job.written:
            Path(path).unlink(missing_ok=True)

    # ---- closing ------------------------------------------------------------------------------------------
    def shutdown(self, timeout_ms: int = 10_000) -> None:
        """Stop the running job without cancelling it (it stays running in the file, so the next start resumes
        it), and end the export thread."""
        if self._closed:
            return
        self._closed = True
        self.runner.ended.disconnect(self._on_ended)
        self.runner.cancel.set()
        self._thread.quit()
        self._thread.wait(timeout_ms)
        self.queue.save()
