"""Opening documents off the GUI thread: ``DocumentLoader`` reads a large file on a thread of its own.

``load_document`` (``engine.documents``) parses a 20 MB HTML file for seconds; on the GUI thread the window
would freeze meanwhile. ``DocumentLoader.start(path)`` runs it on a daemon thread and hands the result back
on the GUI thread (``loaded(path, Document)`` or ``failed(path, message)``); ``cancel()`` drops the load
that runs: the parser cannot be interrupted, so it finishes unseen and its result is thrown away. Files
smaller than ``BACKGROUND_BYTES`` open at once (``in_background``): they parse in well under a tenth of a
second, and a thread would only delay them. ``LoadingIndicator`` is the status bar's "Opening …" with a busy
bar and a Cancel button.
"""

from __future__ import annotations

import threading
from pathlib import Path

from PySide6.QtCore import QObject, Signal
from PySide6.QtWidgets import QHBoxLayout, QLabel, QProgressBar, QToolButton, QWidget

from engine.documents import DocumentError, load_document

# From this size on a document is read in the background: below it even HTML, the slowest reader per byte, opens
# before a wait shows, and a larger file must never freeze the window
BACKGROUND_BYTES = 256 * 1024


def in_background(path: Path) -> bool:
    """Whether ``path`` is large enough to be read on a thread; a file that cannot be inspected is not (its
    error comes at once)."""
    try:
        return path.stat().st_size >= BACKGROUND_BYTES
    except OSError:
        return False


class DocumentLoader(QObject):
    """See the module docstring. ``busy`` tells whether a load runs; one runs at a time."""

    loaded = Signal(object, object)  # the path, its Document
    failed = Signal(object, str)  # the path, why (a DocumentError's message)
    _done = Signal(int, object, object, str)  # load number, path, Document or None, error message

    def __init__(self, parent: QObject | None = None):
        super().__init__(parent)
        self._running: int | None = None  # the number of the load whose result is wanted
        self._count = 0
        self._done.connect(self._on_done)  # queued: emitted on the reading thread, received on this one

    @property
    def busy(self) -> bool:
        return self._running is not None

    def start(self, path: Path) -> None:
        if self.busy:
            raise RuntimeError("a document is already loading")
        self._count += 1
        self._running = number = self._count
        threading.Thread(target=self._read, args=(number, Path(path)), name="document-loader", daemon=True).start()

    def cancel(self) -> None:
        """Forget the running load: nothing it finds is shown."""
        self._running = None

    def _read(self, number: int, path: Path) -> None:
        try:
            document, message = load_document(path), ""
        except DocumentError as e:
            document, message = None, str(e)
        except Exception as e:  # noqa: BLE001 - a failure must reach the window, not die with the thread
            document, message = None, f"Cannot open “{path.name}”: {type(e).__name__}: {e}"
        try:
            self._done.emit(number, path, document, message)
        except RuntimeError:  # the window closed meanwhile and took the loader with it: nobody waits
            pass

    def _on_done(self, number: int, path: Path, document, message: str) -> None:
        if number != self._running:  # cancelled (or replaced): thrown away
            return
        self._running = None
        if document is None:
            self.failed.emit(path, message)
        else:
            self.loaded.emit(path, document)


class LoadingIndicator(QWidget):
    """"Opening NAME…", a busy bar and Cancel, shown while a document loads in the background."""

    cancel_requested = Signal()

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.label = QLabel()
        self.bar = QProgressBar(minimum=0, maximum=0, maximumWidth=120)  # no known end: a busy bar
        self.bar.setAccessibleName("Opening the document")
        self.cancel_button = QToolButton(text="Cancel", toolTip="Stop opening this document")
        self.cancel_button.clicked.connect(self.cancel_requested)
        layout = QHBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.label)
        layout.addWidget(self.bar)
        layout.addWidget(self.cancel_button)
        self.hide()

    def opening(self, path: Path) -> None:
        self.label.setText(f"Opening {path.name}…")
        self.show()
