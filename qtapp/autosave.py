"""Crash-safe editor text: written to the data dir shortly after each change and every few seconds
while changes keep coming, and put back into the editor at the next start.

The GUI thread only copies the editor's list of lines (``qtapp.line_mirror``); a writer thread joins,
encodes and writes them a batch at a time (atomically, ``engine.atomic_files``), so saving a 20 MB text
never holds the GUI thread (or, through the interpreter lock, keeps it waiting) for more than a
batch. Saves run one after another in the order they were asked for.

Only unsaved text is kept: while the editor's text equals what was opened or saved (the document is
not modified) the autosave file is emptied, so a document's content never replaces typed text there
and a restored text is always one that no file holds.
"""

from __future__ import annotations

import logging
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

from PySide6.QtCore import QObject, QTimer

from engine.atomic_files import atomic_write
from qtapp.settings import Settings

log = logging.getLogger("orator.studio")

QUIET_DELAY_MS = 1500  # save this long after the last keystroke
WRITE_BATCH_LINES = 1024  # lines joined and written per step of the writer thread


def write_lines(path: Path, lines: list[str]) -> None:
    """Write ``"\\n".join(lines)`` to ``path`` atomically, a batch of lines at a time."""
    def write(tmp: Path) -> None:
        with open(tmp, "w", encoding="utf-8", newline="") as f:
            for at in range(0, len(lines), WRITE_BATCH_LINES):
                f.write(("\n" if at else "") + "\n".join(lines[at:at + WRITE_BATCH_LINES]))

    atomic_write(path, write)


class Autosave(QObject):
    def __init__(self, editor, settings: Settings, parent: QObject | None = None):
        super().__init__(parent or editor)
        self.editor = editor
        self.path = settings.autosave_path
        self._dirty = False
        self._writer = ThreadPoolExecutor(max_workers=1, thread_name_prefix="autosave")
        self._last: Future | None = None
        self._quiet = QTimer(self, singleShot=True, interval=QUIET_DELAY_MS)
        self._quiet.timeout.connect(self.save_now)
        self._periodic = QTimer(self, interval=int(settings.autosave_interval_s * 1000))
        self._periodic.timeout.connect(self.save_now)
        self._periodic.start()
        editor.textChanged.connect(self.mark_dirty)
        editor.document().modificationChanged.connect(self.mark_dirty)

    def mark_dirty(self) -> None:
        if self.editor.is_loading:
            return
        self._dirty = True
        self._quiet.start()

    def save_now(self, wait: bool = False) -> Future | None:
        """Write the text if it changed since the last save (never a half-loaded document), on the writer
        thread; returns the latest save, which ``wait`` waits for (closing)."""
        if self._dirty and not self.editor.is_loading:
            self._dirty = False
            # text that a file holds is not copied here, so it can never replace unsaved text
            lines = self.editor.mirror.snapshot() if self.editor.document().isModified() else []
            self._last = self._writer.submit(write_lines, self.path, lines)
            self._last.add_done_callback(self._on_written)
        if wait and self._last is not None:
            self._last.exception()  # waits; a failure was logged by _on_written
        return self._last

    def close(self) -> None:
        """Save what is unsaved, wait for it, and end the writer thread."""
        self.save_now(wait=True)
        self._writer.shutdown(wait=True)

    def _on_written(self, future: Future) -> None:
        """On the writer thread: a failed save is logged and left to the next one."""
        if future.exception() is not None:
            log.warning("autosave to %s failed: %s", self.path, future.exception())
            self._dirty = True

    def restore(self) -> bool:
        """Put the saved text back into an empty editor; True if there was any."""
        try:
            text = self.path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            return False
        if not text:
            return False
        self.editor.load_text(text, modified=True)
        return True
