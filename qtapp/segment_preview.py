"""File ▸ Preview segments…: what an export of the open text would speak, segment by segment, shown in the studio.
The rows are the lines ``python main.py export INPUT --list-segments`` prints (``engine.production.segment_list``): each
segment's chapter (numbered as the chapter panel and the export dialog number it), its voice, and its text as the
reading policy of Settings hands it to speech, before the pronunciation rules.

The book is read off the GUI thread (a large EPUB takes seconds), and the rows are made as the list is scrolled
(``SegmentModel`` fetches ``BATCH`` more when the view asks), so a book of thousands of segments opens at once and
costs only what has been shown. "From chapter" starts the list at a chapter without making the rows before it.
"""

from __future__ import annotations

import itertools
import threading
from collections.abc import Iterator

from PySide6.QtCore import QAbstractTableModel, QModelIndex, Qt, Signal
from PySide6.QtWidgets import (
    QAbstractItemView,
    QComboBox,
    QDialog,
    QDialogButtonBox,
    QFormLayout,
    QHeaderView,
    QLabel,
    QTableView,
    QVBoxLayout,
    QWidget,
)

from engine.production.segment_list import SegmentLine, book_segments

BATCH = 200  # rows made at a time: a few screenfuls
DEFAULT_VOICE = "default"  # shown where the JSON line says null: the export's default voice speaks
COLUMNS = ("Chapter", "Voice", "Text")
CHAPTER, VOICE, TEXT = range(len(COLUMNS))


class SegmentModel(QAbstractTableModel):
    """Rows of ``SegmentLine``s drawn from an iterator ``BATCH`` at a time, as the view scrolls to them."""

    def __init__(self, parent=None):
        super().__init__(parent)
        self.rows: list[SegmentLine] = []
        self._lines: Iterator[SegmentLine] = iter(())
        self.exhausted = True

    def set_lines(self, lines: Iterator[SegmentLine]) -> None:
        self.beginResetModel()
        self.rows, self._lines, self.exhausted = [], iter(lines), False
        self.endResetModel()
        self.fetchMore(QModelIndex())

    def rowCount(self, parent: QModelIndex = QModelIndex()) -> int:  # noqa: N802, B008 - Qt's name and default
        return 0 if parent.isValid() else len(self.rows)

    def columnCount(self, parent: QModelIndex = QModelIndex()) -> int:  # noqa: N802, B008
        return 0 if parent.isValid() else len(COLUMNS)

    def canFetchMore(self, parent: QModelIndex) -> bool:  # noqa: N802
        return not parent.isValid() and not self.exhausted

    def fetchMore(self, parent: QModelIndex) -> None:  # noqa: N802
        if parent.isValid() or self.exhausted:
            return
        batch = list(itertools.islice(self._lines, BATCH))
        if len(batch) < BATCH:
            self.exhausted = True
        if batch:
            self.beginInsertRows(QModelIndex(), len(self.rows), len(self.rows) + len(batch) - 1)
            self.rows.extend(batch)
            self.endInsertRows()

    def data(self, index: QModelIndex, role: int = Qt.ItemDataRole.DisplayRole):
        if not index.isValid():
            return None
        line = self.rows[index.row()]
        if role in (Qt.ItemDataRole.DisplayRole, Qt.ItemDataRole.ToolTipRole):
            return (f"{line.chapter}. {line.title}", line.voice or DEFAULT_VOICE, line.text)[index.column()]
        return None

    def headerData(self, section: int, orientation, role: int = Qt.ItemDataRole.DisplayRole):  # noqa: N802
        if role == Qt.ItemDataRole.DisplayRole:
            return COLUMNS[section] if orientation == Qt.Orientation.Horizontal else str(section + 1)
        return None


class SegmentPreview(QDialog):
    """The dialog; ``show_book(book)`` (or ``show_problem``) fills it once the book is read."""

    ready = Signal()  # the book is read and the first rows are shown
    _book_read = Signal(object, str)  # from the reading thread: the book (None where it cannot be read), a problem

    def __init__(self, title: str, policy=None, segment_chars: int | None = None, parent: QWidget | None = None):
        super().__init__(parent)
        self.setWindowTitle(f"Segments of “{title}”")
        self.resize(900, 560)
        self.policy, self.segment_chars = policy, segment_chars
        self.book = None
        self.model = SegmentModel(self)
        self.view = QTableView()
        self.view.setModel(self.model)
        self.view.setAccessibleName("Segments export would speak")
        self.view.setAccessibleDescription("One row a segment: its chapter, its voice, and what is said.")
        self.view.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.view.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.view.setWordWrap(False)
        self.view.verticalHeader().setDefaultSectionSize(self.view.fontMetrics().height() + 6)
        header = self.view.horizontalHeader()
        header.setSectionResizeMode(CHAPTER, QHeaderView.ResizeMode.Interactive)
        header.setSectionResizeMode(VOICE, QHeaderView.ResizeMode.Interactive)
        header.setStretchLastSection(True)
        self.view.setColumnWidth(CHAPTER, 220)
        self.view.setColumnWidth(VOICE, 90)
        self.chapter = QComboBox()
        self.chapter.setAccessibleName("Show segments from chapter")
        self.chapter.setEnabled(False)
        self.chapter.currentIndexChanged.connect(self._from_chapter)
        self.status = QLabel("Reading the text…")
        self.status.setAccessibleName("Segments shown")
        self.model.rowsInserted.connect(lambda *_: self._say_count())
        form = QFormLayout()
        chapter_label = QLabel("&From chapter:")
        chapter_label.setBuddy(self.chapter)
        form.addRow(chapter_label, self.chapter)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close)
        buttons.rejected.connect(self.reject)
        layout = QVBoxLayout(self)
        layout.addLayout(form)
        layout.addWidget(self.view, 1)
        layout.addWidget(self.status)
        layout.addWidget(buttons)
        self._book_read.connect(self._on_book_read)

    def read_in_background(self, read_book) -> threading.Thread:
        """Call ``read_book() -> (book or None, problem)`` on a thread of its own, then show its book."""
        def work() -> None:
            try:
                book, problem = read_book()
            except Exception as e:  # noqa: BLE001 - any failure to read is told in the dialog, never raised
                book, problem = None, str(e)
            try:
                self._book_read.emit(book, problem)
            except RuntimeError:
                pass  # the dialog was closed and deleted while the book was read: nobody is waiting for it

        thread = threading.Thread(target=work, name="segment-preview", daemon=True)
        thread.start()
        return thread

    def show_book(self, book) -> None:
        self.book = book
        self.chapter.blockSignals(True)
        self.chapter.clear()
        for number, chapter in enumerate(book.chapters, 1):
            self.chapter.addItem(f"{'  ' * (chapter.level - 1)}{number}. {' '.join(chapter.title.split())}")
        self.chapter.setEnabled(len(book.chapters) > 1)
        self.chapter.blockSignals(False)
        self._from_chapter(0)
        self.view.setFocus()
        if self.model.rowCount():
            self.view.selectRow(0)
        self.ready.emit()

    def show_problem(self, problem: str) -> None:
        self.status.setText(problem)
        self.ready.emit()

    def _on_book_read(self, book, problem: str) -> None:
        if book is None:
            self.show_problem(problem or "The text cannot be read for export.")
        else:
            self.show_book(book)

    def _from_chapter(self, index: int) -> None:
        if self.book is None or index < 0:
            return
        chapters = range(index, len(self.book.chapters))
        self.model.set_lines(book_segments(self.book, chapters, self.policy, self.segment_chars))
        self._say_count()

    def _say_count(self) -> None:
        shown = self.model.rowCount()
        if self.model.exhausted:
            self.status.setText(f"{shown} segment{'s' if shown != 1 else ''}")
        else:
            self.status.setText(f"{shown} segments so far; more are made as you scroll")


def open_segment_preview(window) -> SegmentPreview:
    """File ▸ Preview segments…: the segments of the whole text as an export of it would speak them now (the
    document's file when unchanged, else the editor's text, as the Export dialog takes it)."""
    from qtapp.export_requests import source_book, whole_text_source

    source, snapshot = whole_text_source(window)
    title = window.windowTitle().removesuffix(" — Orator") or "Untitled"
    if window.segment_preview is not None:
        window.segment_preview.close()  # one preview at a time, of the text as it is now
        window.segment_preview.deleteLater()
    preview = SegmentPreview(title, window.reader.reading_policy, window.reader.segment_chars, window)
    preview.setModal(False)  # reading and editing go on beside it
    window.segment_preview = preview
    preview.read_in_background(lambda: (source_book(source, snapshot), ""))
    preview.show()
    return preview
