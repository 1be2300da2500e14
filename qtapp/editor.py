"""The text editor: plain text with a reading highlight, font zoom, find bar, word counts and file drops.

Large texts are inserted piece by piece from the event loop (``load_text``), so opening a 20 MB
file keeps the window responsive; undo history starts after the load. ``text_source`` (a
``DocumentText``) lets a reading plan read the text from any position a line at a time, and
``mirror`` (a ``qtapp.line_mirror.LineMirror``) keeps a copy of it line by line, edit by edit, for
the word count and autosave: no keystroke makes the GUI thread copy or scan the whole document.
"""

from __future__ import annotations

from collections.abc import Iterator

from PySide6.QtCore import Qt, QTimer, Signal
from PySide6.QtGui import QColor, QFont, QKeySequence, QPalette, QTextCharFormat, QTextCursor, QTextDocument
from PySide6.QtWidgets import (
    QApplication,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPlainTextEdit,
    QStyle,
    QTextEdit,
    QToolButton,
    QWidget,
)

from qtapp.line_mirror import LineMirror, plain
from qtapp.reading_plan import line_pieces

LOAD_PIECE_CHARS = 256 * 1024  # characters inserted per event-loop turn while loading
COUNT_DELAY_MS = 300  # word counts are shown this long after the last edit
MIN_FONT, MAX_FONT = 8, 48
HIGHLIGHT_COLOR = QColor("#ffe58f")


def split_for_loading(text: str, piece_chars: int = LOAD_PIECE_CHARS) -> list[str]:
    """Cut ``text`` into pieces of about ``piece_chars``, at line ends (or spaces) where possible."""
    pieces, start = [], 0
    while start < len(text):
        end = min(start + piece_chars, len(text))
        if end < len(text):
            cut = text.rfind("\n", start, end)
            if cut <= start:
                cut = text.rfind(" ", start, end)
            end = cut + 1 if cut > start else end
        pieces.append(text[start:end])
        start = end
    return pieces


class Editor(QPlainTextEdit):
    counts_changed = Signal(int, int)  # words, characters
    position_activated = Signal(int)  # character position double-clicked while ``jump_on_double_click``
    files_dropped = Signal(list)  # local file paths dropped on the editor
    loading_progress = Signal(int, int)  # characters inserted, total
    loading_finished = Signal()

    def __init__(self, parent: QWidget | None = None, font_size: int = 13):
        super().__init__(parent)
        self.setAcceptDrops(True)
        self.setTabChangesFocus(True)  # Tab must lead keyboard users on to the voice list; spoken text needs no tabs
        self.setLineWrapMode(QPlainTextEdit.LineWrapMode.WidgetWidth)
        self.setPlaceholderText("Type or paste text here, or open a document (Ctrl+O) and press Play (F5).")
        font = QFont("Noto Serif")
        font.setStyleHint(QFont.StyleHint.Serif)
        self.setFont(font)
        self.set_font_size(font_size)
        self.document().setDocumentMargin(18)
        self._highlight: tuple[int, int] | None = None
        self._pending_pieces: list[str] = []
        self._load_total = self._load_done = 0
        self._load_modified = False
        self.edits = 0  # changes to the text other than a load's own inserts
        self._loading_insert = False
        self.document().contentsChange.connect(self._on_contents_change)
        self.mirror = LineMirror(self.document(), self)
        self.text_source = DocumentText(self)
        # while reading, a double-click reads on from there; otherwise it selects a word, as in any editor, and
        # starts nothing (the first two clicks of a triple click, selecting a line, must not start reading)
        self.jump_on_double_click = False
        self._jump_to: int | None = None
        self._jump_timer = QTimer(self, singleShot=True)
        self._jump_timer.timeout.connect(self._jump)
        self._count_timer = QTimer(self, singleShot=True, interval=COUNT_DELAY_MS)
        self._count_timer.timeout.connect(self._emit_counts)
        self.textChanged.connect(self._count_timer.start)

    # ---- font --------------------------------------------------------------------------------------
    @property
    def font_size(self) -> int:
        return self.font().pointSize()

    def set_font_size(self, size: int) -> None:
        font = self.font()
        font.setPointSize(max(MIN_FONT, min(MAX_FONT, size)))
        self.setFont(font)

    def zoom(self, steps: int) -> None:
        self.set_font_size(self.font_size + steps)

    # ---- loading -----------------------------------------------------------------------------------
    @property
    def is_loading(self) -> bool:
        return bool(self._pending_pieces)

    def load_text(self, text: str, modified: bool = False) -> None:
        """Replace the text; large texts go in piece by piece without blocking the event loop. ``modified``
        is the document's modified flag once loaded (True for text that is saved in no file)."""
        self._load_modified = modified
        self._pending_pieces = split_for_loading(text)
        self._load_total, self._load_done = len(text), 0
        self.clear_highlight()
        self.setUndoRedoEnabled(False)
        self.setPlainText("")
        if len(self._pending_pieces) <= 1:
            self._loading_insert = True
            self.setPlainText(text)
            self._loading_insert = False
            self._pending_pieces = []
            self._finish_loading()
            return
        self.setReadOnly(True)
        QTimer.singleShot(0, self._insert_next_piece)

    def _insert_next_piece(self) -> None:
        if not self._pending_pieces:
            return
        piece = self._pending_pieces.pop(0)
        cursor = QTextCursor(self.document())
        cursor.movePosition(QTextCursor.MoveOperation.End)
        self._loading_insert = True  # appended text leaves every position read so far as it was
        cursor.insertText(piece)
        self._loading_insert = False
        self._load_done += len(piece)
        self.loading_progress.emit(self._load_done, self._load_total)
        if self._pending_pieces:
            QTimer.singleShot(0, self._insert_next_piece)
        else:
            self.setReadOnly(False)
            self._finish_loading()

    def _finish_loading(self) -> None:
        self.setUndoRedoEnabled(True)
        self.moveCursor(QTextCursor.MoveOperation.Start)
        self.document().setModified(self._load_modified)
        self.loading_finished.emit()

    def _on_contents_change(self, position: int, removed: int, added: int) -> None:
        if (removed or added) and not self._loading_insert:
            self.edits += 1

    # ---- reading highlight -------------------------------------------------------------------------
    def highlight_span(self, start: int, end: int) -> None:
        """Mark characters [start, end) as being spoken and scroll them into view."""
        self._highlight = (start, end)
        selection = QTextEdit.ExtraSelection()
        fmt = QTextCharFormat()
        fmt.setBackground(HIGHLIGHT_COLOR)
        fmt.setForeground(QColor("#1f1f1f"))
        selection.format = fmt
        cursor = QTextCursor(self.document())
        cursor.setPosition(min(start, self.document().characterCount() - 1))
        cursor.setPosition(min(end, self.document().characterCount() - 1), QTextCursor.MoveMode.KeepAnchor)
        selection.cursor = cursor
        self.setExtraSelections([selection])
        if not self.viewport().rect().contains(self.cursorRect(cursor).center()):
            self.verticalScrollBar().setValue(max(0, cursor.block().firstLineNumber() - 3))

    def clear_highlight(self) -> None:
        self._highlight = None
        self.setExtraSelections([])

    @property
    def highlighted_span(self) -> tuple[int, int] | None:
        return self._highlight

    # ---- find --------------------------------------------------------------------------------------
    def find_text(self, needle: str, backward: bool = False) -> bool:
        """Select the next (or previous) occurrence of ``needle``, wrapping around; False if absent."""
        if not needle:
            return False
        flags = QTextDocument.FindFlag.FindBackward if backward else QTextDocument.FindFlag(0)
        if self.find(needle, flags):
            return True
        cursor = self.textCursor()
        cursor.movePosition(QTextCursor.MoveOperation.End if backward else QTextCursor.MoveOperation.Start)
        self.setTextCursor(cursor)
        return self.find(needle, flags)

    # ---- events ------------------------------------------------------------------------------------
    def mouseDoubleClickEvent(self, event) -> None:
        """Selects the word. While reading (``jump_on_double_click``) it also reads on from there, once no third
        click has come within the double-click interval (a triple click selects a line and jumps nowhere): the
        cursor moves there with no word selected, so Stop and then Play go on from there rather than reading the
        selected word alone."""
        position = self.cursorForPosition(event.position().toPoint()).position()
        super().mouseDoubleClickEvent(event)  # the word, and Qt's count towards a triple click
        if self.jump_on_double_click:
            self._jump_to = position
            self._jump_timer.start(QApplication.doubleClickInterval())

    def mousePressEvent(self, event) -> None:
        if self._jump_timer.isActive():  # the third click of a triple click: no jump
            self._jump_timer.stop()
            self._jump_to = None
        super().mousePressEvent(event)

    def _jump(self) -> None:
        position, self._jump_to = self._jump_to, None
        if position is None or not self.jump_on_double_click:  # reading stopped meanwhile: start nothing
            return
        cursor = self.textCursor()
        cursor.setPosition(min(position, self.document().characterCount() - 1))
        self.setTextCursor(cursor)
        self.position_activated.emit(cursor.position())

    def dragEnterEvent(self, event) -> None:
        if _local_files(event.mimeData()):
            event.acceptProposedAction()
        else:
            super().dragEnterEvent(event)

    def dragMoveEvent(self, event) -> None:
        if _local_files(event.mimeData()):
            event.acceptProposedAction()
        else:
            super().dragMoveEvent(event)

    def dropEvent(self, event) -> None:
        files = _local_files(event.mimeData())
        if files:
            event.acceptProposedAction()
            self.files_dropped.emit(files)
        else:
            super().dropEvent(event)

    def _emit_counts(self) -> None:
        self.counts_changed.emit(self.mirror.words, self.mirror.characters)


class DocumentText:
    """The editor's text as a ``qtapp.reading_plan.TextSource``, read block by block from its QTextDocument
    (GUI thread only). A source stops at the first edit after it was made: its offsets would be stale."""

    def __init__(self, editor: Editor):
        self.editor = editor

    def line_start(self, position: int) -> int:
        block = self.editor.document().findBlock(position)
        if not block.isValid():
            block = self.editor.document().lastBlock()
        before = plain(block.text()[:max(0, position - block.position())])
        return block.position() + before.rfind("\n") + 1

    def lines_above(self, line_start: int) -> Iterator[str]:
        block = self.editor.document().findBlock(line_start)
        if not block.isValid():
            return
        head = plain(block.text()[:max(0, line_start - block.position())])
        yield from reversed(head.split("\n")[:-1])  # the block's lines above (a block may hold line separators)
        block = block.previous()
        while block.isValid():
            yield from reversed(plain(block.text()).split("\n"))
            block = block.previous()

    def pieces(self, start: int, end: int | None = None) -> Iterator[tuple[int, str]]:
        editor, document = self.editor, self.editor.document()
        edits = editor.edits
        length = document.characterCount() - 1
        end = length if end is None else min(end, length)
        position = max(0, start)
        while position < end and editor.edits == edits:
            block = document.findBlock(position)
            text = plain(block.text()) + ("\n" if block.next().isValid() else "")
            line_end = min(block.position() + len(text), end)
            for piece in line_pieces(position, text[position - block.position():line_end - block.position()]):
                if editor.edits != edits:
                    return
                yield piece
            position = line_end


def _local_files(mime) -> list[str]:
    return [url.toLocalFile() for url in mime.urls() if url.isLocalFile()] if mime.hasUrls() else []


NOT_FOUND_TINT = QColor("#e74c3c")
NOT_FOUND_MIX = 0.3  # enough red to see at a glance, little enough that the base's lightness is kept


def not_found_colour(base: QColor) -> QColor:
    """``base`` mixed with red: light stays light and dark stays dark, so the field's text stays readable."""
    mix = lambda a, b: round(a + (b - a) * NOT_FOUND_MIX)  # noqa: E731
    return QColor(mix(base.red(), NOT_FOUND_TINT.red()), mix(base.green(), NOT_FOUND_TINT.green()),
                  mix(base.blue(), NOT_FOUND_TINT.blue()))


class FindBar(QWidget):
    """A slim bar under the editor: type to search, Enter for next, Shift+Enter for previous."""

    def __init__(self, editor: Editor, parent: QWidget | None = None):
        super().__init__(parent)
        self.editor = editor
        self.field = QLineEdit(placeholderText="Find in text…", clearButtonEnabled=True)
        self.status = QLabel()
        layout = QHBoxLayout(self)
        layout.setContentsMargins(8, 2, 8, 2)
        layout.addWidget(QLabel("Find:"))
        layout.addWidget(self.field, 1)
        style = self.style()
        for icon, tip, backward in ((QStyle.StandardPixmap.SP_ArrowUp, "Previous (Shift+Enter)", True),
                                    (QStyle.StandardPixmap.SP_ArrowDown, "Next (Enter)", False)):
            button = QToolButton(icon=style.standardIcon(icon), toolTip=tip, autoRaise=True)
            button.clicked.connect(lambda _=False, b=backward: self.find(backward=b))
            layout.addWidget(button)
        layout.addWidget(self.status)
        close = QToolButton(icon=style.standardIcon(QStyle.StandardPixmap.SP_TitleBarCloseButton),
                            toolTip="Close (Esc)", autoRaise=True)
        close.clicked.connect(self.close_bar)
        layout.addWidget(close)
        self.field.returnPressed.connect(self._on_return)
        self.field.textChanged.connect(lambda _: self.status.clear())
        self.hide()

    def open_bar(self) -> None:
        selected = self.editor.textCursor().selectedText()
        if selected and "\u2029" not in selected:
            self.field.setText(selected)
        self.show()
        self.field.setFocus()
        self.field.selectAll()

    def close_bar(self) -> None:
        self.hide()
        self.editor.setFocus()

    def find(self, backward: bool = False) -> bool:
        found = self.editor.find_text(self.field.text(), backward=backward)
        if found:
            self.field.setPalette(QPalette())  # an empty palette inherits the window's, light or dark
        else:  # the field's own base tinted red, so its text stays readable in a dark palette too
            palette = QPalette(self.palette())
            palette.setColor(QPalette.ColorRole.Base, not_found_colour(self.palette().color(QPalette.ColorRole.Base)))
            self.field.setPalette(palette)
        self.status.setText("" if found else "Not found")
        return found

    def _on_return(self) -> None:
        from PySide6.QtWidgets import QApplication

        self.find(backward=bool(QApplication.keyboardModifiers() & Qt.KeyboardModifier.ShiftModifier))

    def keyPressEvent(self, event) -> None:
        if event.matches(QKeySequence.StandardKey.Cancel):
            self.close_bar()
        else:
            super().keyPressEvent(event)
