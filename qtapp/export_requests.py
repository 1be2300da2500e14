"""File ▸ Export audio…: from what the window shows to a queued job. The source is the open document's file
when the whole, unchanged document is exported, else a snapshot of the editor's text (or selection) with the
chapters the window knows, so editing on while the job waits changes nothing it says. The default output lies
beside the document, else in the user's Music folder (``engine.production.export_jobs.default_output``)."""

from __future__ import annotations

from pathlib import Path

from engine.errors import OratorError
from engine.production.book_structure import Book
from engine.production.export_jobs import Job, JobError, Snapshot, SnapshotChapter, default_output, snapshot_book
from engine.voices.library import data_dir
from qtapp.dialogs.export_dialog import ExportDialog

SELECTION_PART = " (selection)"  # after the name of a file that holds only the selected text
NEW_SNAPSHOT = "0" * 32  # stands for the snapshot until the queue writes it under an id of its own


def music_folder() -> Path:
    from platformdirs import user_music_dir

    return Path(user_music_dir())


def whole_text_source(window) -> tuple[str | None, Snapshot | None]:
    """(the document file, None) when the editor shows an unchanged document, else (None, a snapshot)."""
    path = window.document_path
    if path is not None and not window.is_modified and Path(path).is_file():
        return str(Path(path).resolve()), None
    text = window.editor.toPlainText()
    title = window.windowTitle().removesuffix(" — Orator") if path is not None else "Untitled"
    chapters = [SnapshotChapter(c.title, start, getattr(c, "level", 1))
                for c, start in zip(window.document_chapters, window.chapters.starts(), strict=False)]
    author = window.document_author if path is not None else ""
    return None, Snapshot(text, title or "Untitled", author, chapters=chapters)


def source_book(source: str | None, snapshot: Snapshot | None) -> Book | None:
    """The book the job will speak, for its chapter list; None when it cannot be read (the job will say why)."""
    try:
        if source is not None:
            from engine.production.book_sources import load_book

            return load_book(Path(source))
        return snapshot_book(snapshot)
    except (OratorError, OSError, ValueError):
        return None


class ExportRequest:
    """The dialog of one Export… and what it queues when accepted (``window.export_dialog`` while open)."""

    def __init__(self, window):
        self.window = window
        cursor = window.editor.textCursor()
        self.selection = (cursor.selectionStart(), cursor.selectionEnd()) if cursor.hasSelection() else None
        self.source, self.snapshot = whole_text_source(window)
        self.book = source_book(self.source, self.snapshot)
        title = self.book.title if self.book is not None else (self.snapshot.title if self.snapshot else "Export")
        self.title = title
        chapters = self.book.chapters if self.book is not None else []
        speakers = window.preset_speakers()
        voices = list(dict.fromkeys([*window.library.names(), *speakers]))
        voice = window.settings.default_voice or window.voices.default_speaker()
        self.dialog = ExportDialog(title, chapters, voices, voice, self.suggest, self.selection is not None, window)
        self.dialog.casting.set_cast(window.settings.dialogue_voice, window.settings.cast)  # as reading casts
        self.dialog.accepted.connect(self.queue)

    def suggest(self, fmt: str, per_chapter: bool, selection_only: bool) -> Path:
        document = self.window.document_path
        title = self.dialog.title_field.text() if hasattr(self, "dialog") else self.title
        return default_output(document, title, fmt, per_chapter, data_dir(), music_folder(),
                              part=SELECTION_PART if selection_only else "")

    def queue(self) -> Job | None:
        dialog, window = self.dialog, self.window
        source, snapshot = self.source, self.snapshot
        if dialog.selection_only.isChecked() and self.selection is not None:
            start, end = self.selection
            text = window.editor.toPlainText()[start:end]
            author = self.book.author if self.book is not None else ""  # a part of the book is still its author's
            source, snapshot = None, Snapshot(text, dialog.title_field.text() or "Selection", author)
        if snapshot is not None and not snapshot.text.strip():
            window.show_status("There is nothing to export.")
            return None
        try:
            job = Job(title=dialog.title_field.text().strip() or "Untitled", output=str(dialog.output()),
                      format=dialog.format_key, voice=dialog.voice.currentText().strip(),
                      model=window.settings.model_spec("preset").checkpoint, source=source,
                      snapshot=NEW_SNAPSHOT if snapshot is not None else None,
                      per_chapter=dialog.per_chapter.isChecked(), chapters=dialog.chosen_chapters(),
                      subtitles=dialog.subtitles_key, chars=0 if snapshot is not None else self._chars(),
                      loudness=dialog.loudness_key, dialogue_voice=dialog.casting.dialogue_voice(),
                      cast=dialog.casting.cast())
            window.exports.add(job, snapshot)
        except (JobError, OSError) as e:
            window.show_error(f"Could not queue the export: {e}")
            return None
        return job

    def _chars(self) -> int:
        return sum(len(p.text) for c in self.book.chapters for p in c.passages) if self.book is not None else 0


def open_export_dialog(window) -> ExportRequest:
    """Show the Export dialog, not modal; it returns at once, and accepting it queues the job (the text as it was
    when the dialog opened)."""
    request = ExportRequest(window)
    window.export_request = request
    request.dialog.setModal(False)  # reading and editing go on while it is open
    request.dialog.show()
    request.dialog.format.setFocus()
    return request
