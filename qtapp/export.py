"""Render paragraphs of (text, voice) to a WAV or FLAC file, with optional sentence-timed subtitles.

Audio is streamed from the engine straight into the file chunk by chunk, so a 500-page book never
sits in memory. Everything is written to hidden temporary files next to the target and renamed
into place only when the whole book is done; a cancel or an error removes them, so no half-written
file ever appears at the target path. The job is a QObject run on its own QThread (``start_export``).
"""

from __future__ import annotations

import contextlib
import os
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import soundfile as sf
from PySide6.QtCore import QObject, Qt, QThread, Signal, Slot

from engine import Engine, Voice
from engine.audio.chunks import SAMPLE_RATE
from engine.text import split_segments
from qtapp.engine_errors import StudioError, describe_error
from qtapp.subtitles import Cue, SrtWriter

FORMATS = {".wav": ("WAV", "PCM_16"), ".flac": ("FLAC", "PCM_16")}
EXPORT_CHUNK_FRAMES = 25  # 2 s of audio per write


class ExportCancelled(Exception):
    """Raised inside the job when ``cancel()`` was called."""


def subtitle_path(audio_path: Path) -> Path:
    return audio_path.with_suffix(".srt")


def _temp_beside(path: Path) -> Path:
    fd, name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".part", dir=path.parent)
    os.close(fd)
    return Path(name)


class ExportJob(QObject):
    progress = Signal(int, int, float)  # segments done, segments in all, seconds left (-1: unknown)
    finished = Signal(str)  # path of the finished audio file
    error = Signal(str)
    cancelled = Signal()

    def __init__(self, paragraphs: list[tuple[str, Voice]], path: str | os.PathLike,
                 engine_for: Callable[[Voice], Engine | None], subtitles: bool = True,
                 sampling=None, paragraph_pause_s: float = 0.6, max_frames: int | None = None):
        super().__init__()
        self.path = Path(path)
        if self.path.suffix.lower() not in FORMATS:
            raise ValueError(f"export to {', '.join(FORMATS)} only, not {self.path.suffix or 'no extension'}")
        self.paragraphs = [(text, voice) for text, voice in paragraphs if text.strip()]
        self.subtitles = subtitles
        self._engine_for = engine_for
        self._sampling = sampling
        self._pause_s = paragraph_pause_s
        self._max_frames = max_frames  # per segment; None: the engine's budget
        self._cancel = threading.Event()

    def cancel(self) -> None:
        """Thread-safe: stop within one chunk and delete the partial files."""
        self._cancel.set()

    @Slot()
    def run(self) -> None:
        temps: list[Path] = []
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            audio_tmp = _temp_beside(self.path)
            temps.append(audio_tmp)
            srt_tmp = _temp_beside(subtitle_path(self.path)) if self.subtitles else None
            if srt_tmp is not None:
                temps.append(srt_tmp)
            self._render(audio_tmp, srt_tmp)
            os.replace(audio_tmp, self.path)
            if srt_tmp is not None:
                os.replace(srt_tmp, subtitle_path(self.path))
        except ExportCancelled:
            self.cancelled.emit()
        except Exception as exc:  # noqa: BLE001 - every failure becomes a message for the GUI
            self.error.emit(describe_error(exc))
        else:
            self.finished.emit(str(self.path))
        finally:
            for tmp in temps:
                tmp.unlink(missing_ok=True)

    # ---- internals -----------------------------------------------------------------------------
    def _render(self, audio_tmp: Path, srt_tmp: Path | None) -> None:
        plan = [(text, voice, split_segments(text)) for text, voice in self.paragraphs]
        total = sum(len(segments) for _, _, segments in plan)
        total_chars = sum(len(seg.text) for _, _, segments in plan for seg in segments)
        done, done_chars, t0 = 0, 0, time.perf_counter()
        self.progress.emit(0, total, -1.0)
        container, subtype = FORMATS[self.path.suffix.lower()]
        with contextlib.ExitStack() as files:
            out = files.enter_context(sf.SoundFile(audio_tmp, "w", samplerate=SAMPLE_RATE, channels=1,
                                                   format=container, subtype=subtype))
            srt = SrtWriter(files.enter_context(open(srt_tmp, "w", encoding="utf-8"))) if srt_tmp else None
            written = 0
            for index, (text, voice, _) in enumerate(plan):
                if index > 0 and self._pause_s > 0:
                    pause = np.zeros(int(self._pause_s * SAMPLE_RATE), dtype=np.float32)
                    out.write(pause)
                    written += len(pause)
                for cue in self._speak_paragraph(text, voice, out, written):
                    if srt is not None:
                        srt.write(cue)
                    written = int(round(cue.end_s * SAMPLE_RATE))
                    done += 1
                    done_chars += len(cue.text)
                    rate = done_chars / (time.perf_counter() - t0)
                    self.progress.emit(done, total, (total_chars - done_chars) / rate if rate > 0 else -1.0)
        self.progress.emit(total, total, 0.0)

    def _speak_paragraph(self, text: str, voice: Voice, out: sf.SoundFile, written: int):
        """Stream one paragraph into ``out``; yield a Cue (times in the whole file) per segment."""
        engine = self._engine_for(voice)
        if engine is None:
            raise StudioError("No model is loaded yet: wait for it to load, or pick one in Settings.")
        if engine.sample_rate != SAMPLE_RATE:
            raise RuntimeError(f"the engine speaks at {engine.sample_rate} Hz, expected {SAMPLE_RATE} Hz")
        cap = {} if self._max_frames is None else {"max_frames": self._max_frames}
        stream = engine.stream(text, voice, chunk_frames=EXPORT_CHUNK_FRAMES,
                               first_chunk_frames=EXPORT_CHUNK_FRAMES, sampling=self._sampling,
                               cancel=self._cancel, **cap)
        current, cue_start = None, written
        try:
            for chunk in stream:
                if current is not None and chunk.segment != current[0]:
                    yield Cue(cue_start / SAMPLE_RATE, written / SAMPLE_RATE, text[current[1]:current[2]])
                    cue_start = written
                current = (chunk.segment, *chunk.span)
                out.write(chunk.samples)
                written += len(chunk.samples)
        finally:
            stream.close()
        if self._cancel.is_set():
            raise ExportCancelled
        if current is not None:
            yield Cue(cue_start / SAMPLE_RATE, written / SAMPLE_RATE, text[current[1]:current[2]])


def start_export(job: ExportJob) -> QThread:
    """Run ``job`` on a new QThread that ends with the job; keep the returned thread referenced."""
    thread = QThread()
    thread.setObjectName("export")
    job.moveToThread(thread)
    thread.started.connect(job.run)
    for signal in (job.finished, job.error, job.cancelled):
        # direct: QThread.quit is thread-safe, and a queued quit would wait for the caller's event loop
        signal.connect(thread.quit, Qt.ConnectionType.DirectConnection)
    thread.start()
    return thread
