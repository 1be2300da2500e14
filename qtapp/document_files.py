"""Opening, starting and saving the main window's text: ``DocumentFiles``.

A small document opens at once, a large one on ``window.loader``'s thread while the window stays usable
(``qtapp.document_loader``); either replaces the text only once unsaved changes are saved or discarded. Save
writes a plain text back where it came from; an imported document (EPUB, HTML, …) is never written over, its text
is saved as a new .txt. What is open (``document_path``, ``save_path``, ``document_chapters``,
``document_author``) is kept on the window, where exports and menus read it.
"""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import QObject
from PySide6.QtWidgets import QFileDialog, QMessageBox

from engine.documents import DocumentError, load_document
from engine.documents.outline import chapter_outline
from qtapp.autosave import write_lines
from qtapp.document_loader import in_background

SAVE_IN_PLACE_SUFFIXES = (".txt", ".text")  # other formats lose markup or structure when written back as text
SAVE_FILTER = "Plain text (*.txt);;All files (*)"


class DocumentFiles(QObject):
    """The documents of ``window`` (a ``MainWindow``: its editor, loader, settings, reader, chapters, actions)."""

    def __init__(self, window):
        super().__init__(window)
        self.window = window

    def connect_signals(self) -> None:
        window = self.window
        editor = window.editor
        editor.files_dropped.connect(self.open_dropped)
        editor.loading_progress.connect(
            lambda done, total: window.show_status(f"Loading… {100 * done // max(total, 1)} %"))
        editor.loading_finished.connect(self.on_loading_finished)
        window.loader.loaded.connect(self.on_document_read)
        window.loader.failed.connect(self.on_document_failed)
        window.loading_indicator.cancel_requested.connect(self.cancel_opening)

    def confirm_discard(self, doing: str) -> bool:
        """Before replacing the text: True if there is nothing unsaved, or the user saved it or chose to
        discard it; False if the user cancelled (or saving failed), and the text must stay."""
        if not self.window.is_modified:
            return True
        buttons = (QMessageBox.StandardButton.Save | QMessageBox.StandardButton.Discard
                   | QMessageBox.StandardButton.Cancel)
        answer = QMessageBox.question(self.window, "Unsaved text",
                                      f"The text has changes that are not saved. Save them before {doing}?",
                                      buttons, QMessageBox.StandardButton.Save)
        if answer == QMessageBox.StandardButton.Save:
            return self.save()
        return answer == QMessageBox.StandardButton.Discard

    # ---- opening -----------------------------------------------------------------------------------
    def open_path(self, path: Path) -> bool:
        """Open ``path``: a small file at once (True if it is shown), a large one on ``window.loader``'s thread
        (True: it is loading; the window stays usable and the text comes in when read)."""
        window = self.window
        path = Path(path)
        if window.editor.is_loading or window.loader.busy:
            window.show_status("Still loading the previous document…")
            return False
        if in_background(path):
            window.loader.start(path)
            window.loading_indicator.opening(path)
            return True
        try:
            document = load_document(path)
        except DocumentError as e:
            window.show_error(str(e))
            return False
        return self.show_document(path, document)

    def cancel_opening(self) -> None:
        window = self.window
        if window.loader.busy:
            window.loader.cancel()
            window.loading_indicator.hide()
            window.show_status("Not opened; your text is as it was.")

    def on_document_read(self, path: Path, document) -> None:
        self.window.loading_indicator.hide()
        self.show_document(path, document)

    def on_document_failed(self, path: Path, message: str) -> None:
        self.window.loading_indicator.hide()
        self.window.show_error(message)

    def show_document(self, path: Path, document) -> bool:
        """Put a read ``document`` in the editor, once unsaved changes are saved or discarded."""
        window = self.window
        editor = window.editor
        if not self.confirm_discard(f"opening “{Path(path).name}”"):
            window.show_status("Not opened; your text is as it was.")
            return False
        window.reader.stop()
        window.banner.hide()
        window.document_path = Path(path)
        suffix = window.document_path.suffix.lower()
        window.save_path = window.document_path if suffix in SAVE_IN_PLACE_SUFFIXES else None
        window.document_chapters = chapter_outline(document)  # the chapters export numbers alike
        window.document_author = getattr(document, "author", "") or ""
        window.settings.add_recent_file(path)
        window.settings.save()
        window.window_actions.rebuild_recent_menu()
        window.setWindowTitle(f"{document.title} — Orator")
        editor.load_text(document.text)
        edits = editor.edits  # the document's blocks hold until the text is edited
        length = len(document.text)
        window.reader.block_kinds = lambda: document.kind_at if editor.edits == edits \
            and editor.document().characterCount() - 1 == length else None
        for warning in document.warnings:
            window.show_error(warning)
        return True

    def open_dropped(self, paths: list[str]) -> bool:
        """Open the first dropped file; the others are named in the status bar, since one document opens at
        a time."""
        if not paths:
            return False
        opened = self.open_path(Path(paths[0]))
        if opened and len(paths) > 1:
            others = len(paths) - 1
            self.window.statusBar().showMessage(
                f"Only one document opens at a time: opened “{Path(paths[0]).name}”; "
                f"{others} other file{'s were' if others > 1 else ' was'} not opened.", 15000)
        return opened

    def on_loading_finished(self) -> None:
        """The text is in the editor: anchor its chapters, and put the cursor where reading of it stopped."""
        window = self.window
        editor, path = window.editor, window.document_path
        window.chapters.mark_all()
        window.show_status(f"Opened {path.name}." if path else "Ready.")
        window.autosave.mark_dirty()
        resume = window.settings.resume_position(path) if path else None
        if resume is not None:
            cursor = editor.textCursor()
            cursor.setPosition(min(resume, editor.document().characterCount() - 1))
            editor.setTextCursor(cursor)
            editor.centerCursor()
            window.show_status(f"Opened {path.name}; Play goes on where you stopped.")

    # ---- new text and saving -----------------------------------------------------------------------
    def new_document(self) -> bool:
        """An empty editor for a new text, after asking about unsaved changes."""
        window = self.window
        if window.editor.is_loading or window.loader.busy or not self.confirm_discard("starting a new text"):
            return False
        window.reader.stop()
        window.read_aloud.remember_position()
        window.document_path = window.save_path = None
        window.document_chapters = []
        window.document_author = ""
        window.chapters.clear()
        window.reader.block_kinds = lambda: None
        window.setWindowTitle("Orator")
        window.editor.load_text("")
        window.show_status("New text.")
        return True

    def save(self) -> bool:
        """Write the text where Save writes (a plain text opened or saved before), else ask for a path."""
        if self.window.save_path is None:
            return self.save_as()
        return self._write_text(self.window.save_path)

    def save_as(self) -> bool:
        """Ask for a path and write the text there as UTF-8 plain text; an imported document is never the
        target, since writing text over it would destroy the book."""
        window = self.window
        if window.document_path is not None:
            start = str(window.document_path.with_suffix(".txt"))
        else:
            start = str(window.settings.start_folder() / "Untitled.txt")
        name, _ = QFileDialog.getSaveFileName(window, "Save the text as", start, SAVE_FILTER)
        if not name:
            return False
        path = Path(name)
        if not path.suffix:
            path = path.with_suffix(".txt")
        opened = window.document_path
        imported = opened is not None and opened.suffix.lower() not in SAVE_IN_PLACE_SUFFIXES
        if imported and path.resolve() == opened.resolve():
            window.show_error(f"“{path.name}” is the imported document; save the text under another name.")
            return False
        return self._write_text(path)

    def _write_text(self, path: Path) -> bool:
        window = self.window
        if window.editor.is_loading:
            window.show_status("Still loading; save again once the text is in.")
            return False
        try:
            write_lines(path, window.editor.mirror.snapshot())
        except OSError as e:
            window.show_error(f"Could not save “{path.name}”: {e.strerror or e}")
            return False
        window.save_path = window.document_path = path
        window.editor.document().setModified(False)
        window.settings.add_recent_file(path)
        window.settings.save()
        window.window_actions.rebuild_recent_menu()
        window.setWindowTitle(f"{path.stem} — Orator")
        window.show_status(f"Saved {path.name}.")
        return True
