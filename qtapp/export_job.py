"""Render a text to a WAV or FLAC file, with optional sentence-timed subtitles.

The sentences are those reading aloud speaks (``qtapp.reading_plan``: voice marks, then the engine's
segments), planned as the export goes and given to the engine as they are; one engine call speaks a
run of sentences of one voice within one line, and a pause separates lines. Audio is streamed from
the engine straight into the file chunk by chunk, so a 500-page book never sits in memory.
Everything is written to hidden temporary files next to the target and renamed into place only when
the whole book is done; a cancel or an error removes them, so no half-written file ever appears at
the target path. The job is a QObject run on its own QThread (``start_export``).
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
from qtapp.engine_errors import StudioError, describe_error
from qtapp.reading_plan import Sentence, StrText, iter_sentences
from qtapp.subtitles import Cue, SrtWriter

FORMATS = {".wav": ("WAV", "PCM_16"), ".flac": ("FLAC", "PCM_16")}
EXPORT_CHUNK_FRAMES = 25  # 2 s of audio per write
CALL_SENTENCES = 64  # sentences per engine call at most, so a line as long as a book is planned a part at a time


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

    def __init__(self, text: str, voices: dict[str | None, Voice], path: str | os.PathLike,
                 engine_for: Callable[[Voice], Engine | None], start: int = 0, end: int | None = None,
                 subtitles: bool = True, sampling=None, paragraph_pause_s: float = 0.6,
                 max_frames: int | None = None, segment_chars: int | None = None):
        """Render ``text[start:end]``; ``voices`` maps each voice-mark name in it, and None (unmarked
        lines), to its Voice (``qtapp.voice_marks.mark_names`` lists the names)."""
        super().__init__()
        self.path = Path(path)
        if self.path.suffix.lower() not in FORMATS:
            raise ValueError(f"export to {', '.join(FORMATS)} only, not {self.path.suffix or 'no extension'}")
        self.text, self.start, self.end = text, start, end
        self.voices = voices
        self.subtitles = subtitles
        self._engine_for = engine_for
        self._sampling = sampling
        self._pause_s = paragraph_pause_s
        self._max_frames = max_frames  # per segment; None: the engine's budget
        self._segment_chars = segment_chars  # the segments' target (engine.text); None: the default
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
    def _sentences(self):
        return iter_sentences(StrText(self.text).pieces(self.start, self.end), self._segment_chars)

    def _calls(self):
        """(sentences of one engine call, whether a line break comes before them), in order."""
        call: list[Sentence] = []
        after_break = False
        for sentence in self._sentences():
            if call:
                breaks = "\n" in self.text[call[-1].end:sentence.start]
                if breaks or sentence.voice != call[0].voice or len(call) == CALL_SENTENCES:
                    yield call, after_break
                    call, after_break = [], breaks
            call.append(sentence)
        if call:
            yield call, after_break

    def _render(self, audio_tmp: Path, srt_tmp: Path | None) -> None:
        total, total_chars = 0, 0
        for sentence in self._sentences():  # counted first, so progress can say how far along it is
            total += 1
            total_chars += len(sentence.segment.text)
            if self._cancel.is_set():
                raise ExportCancelled
        if total == 0:
            raise StudioError("There is nothing to export.")
        done, done_chars, t0 = 0, 0, time.perf_counter()
        self.progress.emit(0, total, -1.0)
        container, subtype = FORMATS[self.path.suffix.lower()]
        with contextlib.ExitStack() as files:
            out = files.enter_context(sf.SoundFile(audio_tmp, "w", samplerate=SAMPLE_RATE, channels=1,
                                                   format=container, subtype=subtype))
            srt = SrtWriter(files.enter_context(open(srt_tmp, "w", encoding="utf-8"))) if srt_tmp else None
            written = 0
            for call, after_break in self._calls():
                if after_break and self._pause_s > 0:
                    pause = np.zeros(int(self._pause_s * SAMPLE_RATE), dtype=np.float32)
                    out.write(pause)
                    written += len(pause)
                for cue in self._speak(call, out, written):
                    if srt is not None:
                        srt.write(cue)
                    written = int(round(cue.end_s * SAMPLE_RATE))
                    done += 1
                    done_chars += len(cue.text)
                    rate = done_chars / (time.perf_counter() - t0)
                    self.progress.emit(done, total, (total_chars - done_chars) / rate if rate > 0 else -1.0)
        self.progress.emit(total, total, 0.0)

    def _speak(self, call: list[Sentence], out: sf.SoundFile, written: int):
        """Stream ``call``'s sentences into ``out``; yield a Cue (times in the whole file) per sentence."""
        voice = self.voices[call[0].voice]
        engine = self._engine_for(voice)
        if engine is None:
            raise StudioError("No model is loaded yet: wait for it to load, or pick one in Settings.")
        if engine.sample_rate != SAMPLE_RATE:
            raise RuntimeError(f"the engine speaks at {engine.sample_rate} Hz, expected {SAMPLE_RATE} Hz")
        cap = {} if self._max_frames is None else {"max_frames": self._max_frames}
        stream = engine.stream([s.segment for s in call], voice, chunk_frames=EXPORT_CHUNK_FRAMES,
                               first_chunk_frames=EXPORT_CHUNK_FRAMES, sampling=self._sampling,
                               cancel=self._cancel, **cap)
        current, cue_start = None, written
        try:
            for chunk in stream:
                if current is not None and chunk.segment != current:
                    yield Cue(cue_start / SAMPLE_RATE, written / SAMPLE_RATE, call[current].segment.text)
                    cue_start = written
                current = chunk.segment
                out.write(chunk.samples)
                written += len(chunk.samples)
        finally:
            stream.close()
        if self._cancel.is_set():
            raise ExportCancelled
        if current is not None:
            yield Cue(cue_start / SAMPLE_RATE, written / SAMPLE_RATE, call[current].segment.text)


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
