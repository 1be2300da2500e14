"""Moving through the open document's chapters: the main window's ``ChapterNavigation``.

Each chapter of ``window.document_chapters`` is anchored in the editor by a text cursor, so edits before a
chapter move its start with it. Chapters ▸ Next / Previous and the Chapters dock go to a chapter's start (reading
goes on from there while reading); the dock marks the chapter holding the sentence being read, else the cursor.
"""

from __future__ import annotations

from PySide6.QtCore import QObject
from PySide6.QtGui import QTextCursor

from qtapp.reading import IDLE


class ChapterNavigation(QObject):
    """The chapters of ``window`` (a ``MainWindow``: its editor, reader, chapter dock, actions and status bar)."""

    def __init__(self, window):
        super().__init__(window)
        self.window = window
        self.marks: list[QTextCursor] = []  # chapter starts; cursors, so edits before them move them

    def connect_signals(self) -> None:
        panel, editor = self.window.chapter_dock.panel, self.window.editor
        panel.chapter_chosen.connect(self.go_to)
        panel.done.connect(editor.setFocus)
        editor.cursorPositionChanged.connect(self.show_current)

    def starts(self) -> list[int]:
        """Where each of ``document_chapters`` starts in the editor now (edits before a chapter move it)."""
        return [mark.position() for mark in self.marks]

    def go_to(self, index: int) -> None:
        """Put the cursor at the start of chapter ``index``; while reading, reading goes on from there."""
        if not 0 <= index < len(self.marks):
            return
        window, editor = self.window, self.window.editor
        position = self.marks[index].position()
        cursor = editor.textCursor()
        cursor.setPosition(position)
        editor.setTextCursor(cursor)
        editor.centerCursor()
        window.show_status(f"Chapter: {window.document_chapters[index].title}")
        if window.reader.state != IDLE:
            window.reader.jump_to(editor.text_source, position)

    def current(self) -> int | None:
        """The chapter holding the place in the text (the sentence being read, else the cursor): the last one
        starting at or before it; None before the first chapter or in a text without chapters."""
        here = self._place_in_text()
        return next((i for i in range(len(self.marks) - 1, -1, -1) if self.marks[i].position() <= here), None)

    def _place_in_text(self) -> int:
        editor = self.window.editor
        span = editor.highlighted_span if self.window.reader.state != IDLE else None
        return span[0] if span is not None else editor.textCursor().position()

    def show_current(self) -> None:
        """Mark the current chapter in the Chapters dock."""
        if self.marks:
            self.window.chapter_dock.panel.set_current(self.current())

    def next_chapter(self) -> None:
        self._step(+1)

    def previous_chapter(self) -> None:
        self._step(-1)

    def _step(self, step: int) -> None:
        """To the first chapter after the place in the text (the sentence being read, else the cursor) or,
        backward, the last one before it, so Previous inside a chapter first goes back to its start."""
        starts = self.starts()
        if not starts:
            self.window.show_status("This text has no chapters.")
            return
        here = self._place_in_text()
        if step > 0:
            index = next((i for i, start in enumerate(starts) if start > here), None)
        else:
            index = next((i for i in range(len(starts) - 1, -1, -1) if starts[i] < here), None)
        if index is None:
            self.window.show_status("No further chapter." if step > 0 else "No earlier chapter.")
            return
        self.go_to(index)

    def mark_all(self) -> None:
        """Anchor the loaded document's chapters in the editor and list them in the chapter panel."""
        window = self.window
        document = window.editor.document()
        last = max(document.characterCount() - 1, 0)
        self.marks = []
        for chapter in window.document_chapters:
            mark = QTextCursor(document)
            mark.setPosition(min(chapter.start, last))
            self.marks.append(mark)
        window.window_actions.enable_chapter_steps()
        window.chapter_dock.show_chapters(window.document_chapters)
        self.show_current()

    def clear(self) -> None:
        """Forget the chapters (a new, empty text)."""
        self.marks = []
