"""Export audio from the main window: ask where, then run ``qtapp.export_job.ExportJob`` on its own
thread behind a progress dialog with an ETA and a Cancel button."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import QObject, Qt
from PySide6.QtWidgets import QProgressDialog

from qtapp.dialogs.export_dialog import ExportDialog
from qtapp.export_job import ExportJob, start_export
from qtapp.voice_marks import mark_names


def format_eta(seconds: float) -> str:
    if seconds < 0:
        return "estimating time left…"
    minutes, secs = divmod(int(round(seconds)), 60)
    return f"about {minutes} min {secs:02d} s left" if minutes else f"about {secs} s left"


class ExportController(QObject):
    def __init__(self, window):
        super().__init__(window)
        self.window = window
        self.job: ExportJob | None = None
        self.thread = None
        self.progress: QProgressDialog | None = None
        self._previous: tuple = ()

    @property
    def running(self) -> bool:
        return self.job is not None

    def start(self) -> None:
        window = self.window
        if self.running:
            window.show_status("An export is already running.")
            return
        cursor = window.editor.textCursor()
        base = window.document_path or (window.settings.root() / "speech")
        dialog = ExportDialog(base.with_suffix(".wav"), cursor.hasSelection(), window)
        if not dialog.exec():
            return
        text = window.editor.toPlainText()
        start, end = ((cursor.selectionStart(), cursor.selectionEnd()) if dialog.selection_only.isChecked()
                      else (0, len(text)))
        self.export_to(dialog.path(), text, start, end, dialog.subtitles.isChecked())

    def export_to(self, path: Path, text: str, start: int, end: int, subtitles: bool) -> None:
        """Start rendering ``text[start:end]`` to ``path`` (progress dialog, cancel, messages)."""
        window = self.window
        if not text[start:end].strip():
            window.show_status("There is nothing to export.")
            return
        window.reader.stop()
        voices = {name: window.resolve_voice(name) for name in {None, *mark_names(text, start, end)}}
        for voice in voices.values():
            window.ensure_model(voice)
        try:
            self.job = ExportJob(text, voices, path, window.worker.engine_when_ready, start, end,
                                 subtitles=subtitles, segment_chars=window.settings.segment_chars)
        except ValueError as e:
            window.show_error(str(e))
            return
        self.progress = QProgressDialog(f"Rendering {Path(path).name}…", "Cancel", 0, 0, window)
        self.progress.setWindowTitle("Export audio")
        self.progress.setWindowModality(Qt.WindowModality.WindowModal)
        self.progress.setMinimumDuration(0)
        self.progress.setMinimumWidth(420)
        self.progress.canceled.connect(self.cancel)
        self.job.progress.connect(self._on_progress)
        self.job.finished.connect(self._on_finished)
        self.job.error.connect(self._on_error)
        self.job.cancelled.connect(self._on_cancelled)
        self.thread = start_export(self.job)
        self.progress.show()

    def cancel(self) -> None:
        if self.job is not None:
            self.job.cancel()

    def _on_progress(self, done: int, total: int, eta_s: float) -> None:
        progress = self.progress  # setValue on a modal dialog runs the event loop, where the export may finish
        if progress is not None:
            progress.setMaximum(total)
            progress.setValue(done)
            progress.setLabelText(f"Sentence {done} of {total} — {format_eta(eta_s)}")

    def shutdown(self) -> None:
        """Cancel a running export and wait for its thread (the window is closing)."""
        for thread in (self.thread, *self._previous[1:]):
            if thread is not None:
                self.cancel()
                thread.quit()  # thread-safe; the loop ends once the job's run() returns
                thread.wait(10_000)

    def _close(self) -> None:
        if self.progress is not None:
            self.progress.canceled.disconnect(self.cancel)
            self.progress.close()
        # kept until the next export: the thread is still ending (its quit() is queued behind this slot)
        self._previous = (self.job, self.thread)
        self.job = self.thread = self.progress = None

    def _on_finished(self, path: str) -> None:
        self._close()
        self.window.show_status(f"Exported {path}.")

    def _on_error(self, message: str) -> None:
        self._close()
        self.window.show_error(f"Export failed: {message}")

    def _on_cancelled(self) -> None:
        self._close()
        self.window.show_status("Export cancelled; no file was written.")
