"""Crash-safe editor text: written to the data dir shortly after each change and every few seconds
while changes keep coming, and put back into the editor at the next start."""

from __future__ import annotations

from PySide6.QtCore import QObject, QTimer

from engine.atomic import atomic_write_text
from qtapp.settings import Settings

QUIET_DELAY_MS = 1500  # save this long after the last keystroke


class Autosave(QObject):
    def __init__(self, editor, settings: Settings, parent: QObject | None = None):
        super().__init__(parent or editor)
        self.editor = editor
        self.path = settings.autosave_path
        self._dirty = False
        self._quiet = QTimer(self, singleShot=True, interval=QUIET_DELAY_MS)
        self._quiet.timeout.connect(self.save_now)
        self._periodic = QTimer(self, interval=int(settings.autosave_interval_s * 1000))
        self._periodic.timeout.connect(self.save_now)
        self._periodic.start()
        editor.textChanged.connect(self.mark_dirty)

    def mark_dirty(self) -> None:
        if self.editor.is_loading:
            return
        self._dirty = True
        self._quiet.start()

    def save_now(self) -> None:
        """Write the text if it changed since the last save (never a half-loaded document)."""
        if not self._dirty or self.editor.is_loading:
            return
        atomic_write_text(self.path, self.editor.toPlainText())
        self._dirty = False

    def restore(self) -> bool:
        """Put the saved text back into an empty editor; True if there was any."""
        try:
            text = self.path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            return False
        if not text:
            return False
        self.editor.load_text(text)
        return True
