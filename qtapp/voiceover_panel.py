"""The studio's Voiceover view: a subtitle file's cues (time, voice, text, takes, fit), each line spoken, played,
spoken again as a new take, compared with its earlier takes and one kept; then the track exported.

The cues, voices and takes are an ``engine.production.voiceover.project.VoiceoverProject`` in a folder beside the
subtitles (``film.srt`` -> ``film.voiceover/``), so they survive a restart, as ``voiceover --project`` keeps them. The
GUI thread owns the project; ``VoiceoverRunner`` speaks and exports on a thread of its own with the engines of the
speech worker (``engine_for``, which may wait while a model loads), and hands each take back by signal. Fit is the
timeline's (``engine.production.voiceover.timeline``): what a line kept now would need, sped up, pushed or overrunning.
"""

from __future__ import annotations

import dataclasses
import threading
from pathlib import Path

import numpy as np
from PySide6.QtCore import QObject, QThread, Signal, Slot
from PySide6.QtWidgets import (
    QComboBox,
    QHBoxLayout,
    QLabel,
    QPushButton,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from engine.core.chunks import SAMPLE_RATE
from engine.production.subtitles import srt_timestamp
from engine.production.voiceover import SAMPLE_RATES
from engine.production.voiceover.timeline import DEFAULT_MAX_TEMPO, lay_out, seconds_text
from qtapp.dialogs.casting_section import loudness_box
from qtapp.engine_errors import describe_error

COLUMNS = ("Cue", "Time", "Voice", "Text", "Takes", "Fit")


def project_folder(subtitles: Path) -> Path:
    """Where the project of a subtitle file is kept: beside it, named after it."""
    return subtitles.with_name(f"{subtitles.stem}.voiceover")


class VoiceoverRunner(QObject):
    """Lives on the voiceover thread: speaks takes and exports tracks, one request at a time."""

    take_ready = Signal(int, object, object)  # cue number, samples (float32, 24 kHz, trimmed), seed
    exported = Signal(object, object)  # [paths written], [report lines]
    failed = Signal(str)
    idle = Signal()  # the request is done (or failed, or was cancelled)

    _speak_requested = Signal(object)
    _export_requested = Signal(object)

    def __init__(self, engine_for, max_frames: int | None = None, pronunciation=None):
        super().__init__()
        self.engine_for = engine_for  # (voice, cancel=event) -> engine or None
        self.max_frames = max_frames
        # the studio's rules, as its reading and exports speak with them (an immutable Lexicon, swapped whole)
        self.pronunciation = pronunciation
        self.cancel = threading.Event()
        self._speak_requested.connect(self.speak)
        self._export_requested.connect(self.export)

    @Slot(object)
    def speak(self, lines: list) -> None:
        """``lines``: (cue number, text, Voice), each spoken with a new seed."""
        from engine.core.speech_plan import draw_seed
        from engine.production.voiceover.render import speak_line

        try:
            for number, text, voice in lines:
                engine = self.engine_for(voice, cancel=self.cancel)
                if engine is None or self.cancel.is_set():
                    break
                seed = draw_seed(None)
                sampling = dataclasses.replace(engine.defaults, seed=seed)
                samples = speak_line(engine, text, voice, sampling, self.max_frames, self.pronunciation)
                self.take_ready.emit(number, samples, seed)
        except Exception as exc:  # noqa: BLE001 - every failure becomes a message for the view
            self.failed.emit(describe_error(exc))
        self.idle.emit()

    @Slot(object)
    def export(self, request: tuple) -> None:
        from engine.production.voiceover.render import assemble, write_voiceover

        cues, lines, out, target, sample_rate, kind = request
        try:
            voiceover = assemble(cues, lines, sample_rate, DEFAULT_MAX_TEMPO, target)
            self.exported.emit(write_voiceover(voiceover, cues, out, kind), voiceover.report())
        except Exception as exc:  # noqa: BLE001 - every failure becomes a message for the view
            self.failed.emit(describe_error(exc))
        self.idle.emit()


class VoiceoverPanel(QWidget):
    message = Signal(str)
    changed = Signal()  # the project, its takes or the busy state changed

    def __init__(self, engine_for, resolve_voice, player=None, parent: QWidget | None = None, pronunciation=None):
        super().__init__(parent)
        self.resolve_voice = resolve_voice  # voice name or None -> Voice
        self.player = player
        self.project = None
        self.subtitles_path: Path | None = None
        self.busy = False
        self._pending_export: tuple | None = None  # (out, loudness, sample rate, failures then): after speaking
        self._failures = 0  # failures reported by the runner so far
        self.table = QTableWidget(0, len(COLUMNS))
        self.table.setHorizontalHeaderLabels(COLUMNS)
        self.table.setSelectionBehavior(QTableWidget.SelectionBehavior.SelectRows)
        self.table.setSelectionMode(QTableWidget.SelectionMode.SingleSelection)
        self.table.setEditTriggers(QTableWidget.EditTrigger.NoEditTriggers)
        self.table.horizontalHeader().setStretchLastSection(True)
        self.table.setAccessibleName("Voiceover cues")
        self.takes = QComboBox()
        self.takes.setAccessibleName("Takes of the selected cue")
        self.status = QLabel("Open a subtitle file (.srt, .vtt) to make a voiceover.")
        self.speak_button = QPushButton("Speak missing lines")
        self.retake_button = QPushButton("New take")
        self.keep_button = QPushButton("Keep this take")
        self.play_button = QPushButton("Play")
        self.export_button = QPushButton("Export track…")
        # the track's loudness (the voiceover's default: web and podcast, -16 LUFS) and rate (48 kHz for video)
        self.loudness = loudness_box()
        self.loudness.setCurrentIndex(self.loudness.findData("podcast"))
        self.sample_rate = QComboBox()
        self.sample_rate.setAccessibleName("Sample rate of the track")
        for rate in SAMPLE_RATES:
            self.sample_rate.addItem(f"{rate / 1000:g} kHz" + {SAMPLE_RATE: " (the model's)", 48000: " (video)"}
                                     .get(rate, ""), rate)
        self.sample_rate.setCurrentIndex(self.sample_rate.findData(SAMPLE_RATE))
        buttons = QHBoxLayout()
        for widget in (self.speak_button, self.retake_button, self.takes, self.play_button, self.keep_button,
                       self.export_button):
            buttons.addWidget(widget)
        buttons.addStretch(1)
        track = QHBoxLayout()
        for label, widget in (("Loudness:", self.loudness), ("Rate:", self.sample_rate)):
            track.addWidget(QLabel(label))
            track.addWidget(widget)
        track.addStretch(1)
        layout = QVBoxLayout(self)
        layout.addWidget(self.status)
        layout.addWidget(self.table, 1)
        layout.addLayout(buttons)
        layout.addLayout(track)
        self.speak_button.clicked.connect(self.speak_missing)
        self.retake_button.clicked.connect(lambda: self.new_take())
        self.keep_button.clicked.connect(self._keep_chosen)
        self.play_button.clicked.connect(self._play_chosen)
        self.export_button.clicked.connect(self._export_dialog)
        self.table.itemSelectionChanged.connect(self._fill_takes)

        self._thread = QThread()
        self._thread.setObjectName("voiceover")
        self.runner = VoiceoverRunner(engine_for, pronunciation=pronunciation)
        self.runner.moveToThread(self._thread)
        self.runner.take_ready.connect(self._on_take)
        self.runner.exported.connect(self._on_exported)
        self.runner.failed.connect(self._on_failed)
        self.runner.idle.connect(self._on_idle)
        self._thread.start()
        self._refresh()

    # ---- opening ------------------------------------------------------------------------------------------
    def open_subtitles(self, path: str | Path) -> bool:
        """Open the project of ``path`` (made on first use; its subtitles brought up to date); False, with a
        message, for a file that cannot be voiced."""
        from engine.errors import OratorError
        from engine.production.voiceover.cues import read_subtitles
        from engine.production.voiceover.project import MANIFEST, VoiceoverProject

        path = Path(path)
        if self.busy:  # the takes being spoken belong to the project open now
            self.message.emit("Wait for the lines being spoken before opening other subtitles.")
            return False
        try:
            subtitles = read_subtitles(path)
            folder = project_folder(path)
            if (folder / MANIFEST).exists():
                project = VoiceoverProject.open(folder)
                project.update_subtitles(subtitles.text, subtitles.kind)
            else:
                project = VoiceoverProject.create(folder, subtitles.text, subtitles.kind)
        except OratorError as e:
            self.message.emit(str(e))
            return False
        self.project, self.subtitles_path = project, path
        for warning in subtitles.warnings:
            self.message.emit(f"{path.name}: {warning}")
        self._refresh()
        return True

    # ---- takes ---------------------------------------------------------------------------------------------
    def speak_missing(self) -> None:
        if self.project is not None:
            self._speak([c.number for c in self.project.cues if self.project.state(c.number).kept is None])

    def new_take(self, number: int | None = None) -> None:
        number = self.selected_cue() if number is None else number
        if number is not None:
            self._speak([number])

    def keep(self, number: int, take_id: int) -> None:
        self.project.keep(number, take_id)
        self._refresh()

    def play(self, number: int, take_id: int | None = None) -> None:
        if self.player is None:
            self.message.emit("No audio output is available to play the take.")
            return
        self.player.stop()
        self.player.write(self.project.audio(number, take_id), 0)
        self.player.end_of_stream()

    def export(self, out: str | Path, loudness: str = "-16", sample_rate: int = SAMPLE_RATE) -> bool:
        """Export the track from the kept takes; the cues without one are spoken first, as their kept takes, and
        the track follows once they are. False, with a message, when it cannot start."""
        from engine.errors import OratorError
        from engine.production.loudness import parse_target

        if self.project is None or self.busy:
            return False
        try:
            target = None if loudness == "off" else parse_target(loudness)
        except OratorError as e:
            self.message.emit(str(e))
            return False
        missing = [c.number for c in self.project.cues if self.project.state(c.number).kept is None]
        if missing:
            self.message.emit(f"Speaking the cues without a kept take before the export: "
                              f"{', '.join(map(str, missing))}")
            self._pending_export = (Path(out), loudness, sample_rate, self._failures)
            self._speak(missing)
            return True
        try:
            lines = [self.project.audio(c.number) for c in self.project.cues]
        except OratorError as e:
            self.message.emit(str(e))
            return False
        self._set_busy(True)
        self.runner._export_requested.emit((list(self.project.cues), lines, Path(out), target, sample_rate,
                                            self.project.kind))
        return True

    def selected_cue(self) -> int | None:
        rows = self.table.selectionModel().selectedRows() if self.table.selectionModel() else []
        if not rows or self.project is None:
            return None
        return self.project.cues[rows[0].row()].number

    def shutdown(self, timeout_ms: int = 10_000) -> None:
        self.runner.cancel.set()
        self._thread.quit()
        self._thread.wait(timeout_ms)

    # ---- internals -----------------------------------------------------------------------------------------
    def _speak(self, numbers: list[int]) -> None:
        if self.project is None or self.busy or not numbers:
            return
        lines = []
        for number in numbers:
            cue = next(c for c in self.project.cues if c.number == number)
            lines.append((number, cue.text, self.resolve_voice(self.project.voice_of(number))))
        self.runner.cancel.clear()
        self._set_busy(True)
        self.runner._speak_requested.emit(lines)

    @Slot(int, object, object)
    def _on_take(self, number: int, samples: np.ndarray, seed: int) -> None:
        from engine.errors import OratorError

        try:
            take = self.project.add_take(number, samples, seed)
        except OratorError as e:
            self.message.emit(str(e))
            return
        self.message.emit(f"Cue {number}: take {take.id}")
        self._refresh()

    @Slot(object, object)
    def _on_exported(self, paths: list, report: list) -> None:
        self.message.emit("; ".join([f"Wrote {paths[0]}", *report]) if paths else "; ".join(report))

    @Slot(str)
    def _on_failed(self, text: str) -> None:
        self._failures += 1
        self.message.emit(text)

    @Slot()
    def _on_idle(self) -> None:
        self._set_busy(False)
        pending, self._pending_export = self._pending_export, None
        if pending is None:
            return
        out, loudness, sample_rate, failures = pending
        missing = [c.number for c in self.project.cues if self.project.state(c.number).kept is None]
        # a line that failed or was cancelled is not spoken again here: the export would loop on it
        if missing or self._failures != failures or self.runner.cancel.is_set():
            self.message.emit(f"The track was not exported: cues {', '.join(map(str, missing))} have no kept take."
                              if missing else "The track was not exported.")
            return
        self.export(out, loudness, sample_rate)

    def _set_busy(self, busy: bool) -> None:
        self.busy = busy
        self._refresh()

    def _keep_chosen(self) -> None:
        number, take_id = self.selected_cue(), self.takes.currentData()
        if number is not None and take_id is not None:
            self.keep(number, take_id)

    def _play_chosen(self) -> None:
        number = self.selected_cue()
        if number is not None and self.project.state(number).takes:
            self.play(number, self.takes.currentData())

    def _export_dialog(self) -> None:
        from PySide6.QtWidgets import QFileDialog

        if self.subtitles_path is None:
            return
        start = str(self.subtitles_path.with_suffix(".wav"))
        path, _ = QFileDialog.getSaveFileName(self, "Export the voiceover track", start,
                                              "Audio (*.wav *.flac *.mp3 *.m4a)")
        if path:
            self.export(path, self.loudness.currentData() or "off", self.sample_rate.currentData())

    def _fill_takes(self) -> None:
        self.takes.clear()
        number = self.selected_cue()
        if number is None:
            return
        state = self.project.state(number)
        for take in state.takes:
            kept = " (kept)" if take.id == state.kept else ""
            self.takes.addItem(f"Take {take.id}{kept}", take.id)
        if state.kept is not None:
            self.takes.setCurrentIndex(self.takes.findData(state.kept))

    def _refresh(self) -> None:
        project = self.project
        for button in (self.speak_button, self.retake_button, self.keep_button, self.play_button,
                       self.export_button):
            button.setEnabled(project is not None and not self.busy)
        if project is None:
            return
        selected = self.selected_cue()
        fits = self._fits()
        self.table.setRowCount(len(project.cues))
        for row, cue in enumerate(project.cues):
            state = project.state(cue.number)
            cells = (str(cue.number), f"{srt_timestamp(cue.start_s)} → {srt_timestamp(cue.end_s)}",
                     project.voice_of(cue.number) or "default", cue.text, str(len(state.takes)), fits[cue.number])
            for column, text in enumerate(cells):
                self.table.setItem(row, column, QTableWidgetItem(text))
            if cue.number == selected:
                self.table.selectRow(row)
        kept = sum(1 for c in project.cues if project.state(c.number).kept is not None)
        busy = " · speaking…" if self.busy else ""
        self.status.setText(f"{self.subtitles_path.name}: {len(project.cues)} cues, {kept} with a kept take{busy}")
        self._fill_takes()
        self.changed.emit()

    def _fits(self) -> dict[int, str]:
        """Per cue, how its kept take fits its time: "fits", "sped up 1.10x", "late 0.30 s", "over 0.5 s"."""
        project = self.project
        lengths = [project.kept_length(c.number) for c in project.cues]
        placed = lay_out([(c.number, round(c.start_s * SAMPLE_RATE), round(c.end_s * SAMPLE_RATE))
                          for c in project.cues], lengths, SAMPLE_RATE, DEFAULT_MAX_TEMPO)
        out = {}
        for p, length in zip(placed, lengths, strict=True):
            said = []
            if p.pushed_by is not None:
                said.append(f"late {seconds_text(p.delay, SAMPLE_RATE)}")
            if p.tempo != 1.0:
                said.append(f"sped up {p.tempo:.2f}x")
            if p.overrun:
                said.append(f"over {seconds_text(p.overrun, SAMPLE_RATE)}")
            out[p.number] = "—" if not length else ", ".join(said) or "fits"
        return out

