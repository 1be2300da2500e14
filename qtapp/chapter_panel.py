"""The chapter panel: the open document's chapters in a side dock, as a tree (parts holding their chapters where
the chapters carry levels, a flat list otherwise) under a search field that filters the titles as you type.

Enter or a double-click on a chapter asks the window to go there (``ChapterPanel.chapter_chosen``); Enter in the
search field goes to the highlighted match; Escape hands the focus back (``done``). The chapter holding the
reading place is shown in bold and, while the list does not have the focus, selected and scrolled to, so the
list follows the reading without taking the keys from a user browsing it. A menu cannot do this for a book of
hundreds of chapters: it fills the screen with columns and cannot be searched.
"""

from __future__ import annotations

from PySide6.QtCore import QModelIndex, QSortFilterProxyModel, Qt, Signal
from PySide6.QtGui import QFont, QKeySequence, QStandardItem, QStandardItemModel
from PySide6.QtWidgets import (
    QAbstractItemView,
    QApplication,
    QDockWidget,
    QLabel,
    QLineEdit,
    QTreeView,
    QVBoxLayout,
    QWidget,
)

from engine.documents.outline import parents

INDEX_ROLE = Qt.ItemDataRole.UserRole + 1  # the chapter's index in the document's list
MAX_SEARCH_CHARS = 200  # no title is searched for with more; each keystroke filters every title once
CURRENT_NOTE = "reading here"


class TitleFilter(QSortFilterProxyModel):
    """Keeps the chapters whose shown text ("12. Title") holds the search text, regardless of case, and (Qt's
    recursive filtering) the parts that hold such a chapter."""

    def __init__(self, parent=None):
        super().__init__(parent)
        self.needle = ""
        self.setRecursiveFilteringEnabled(True)

    def set_needle(self, text: str) -> None:
        self.beginFilterChange()
        self.needle = text.strip().casefold()
        self.endFilterChange(QSortFilterProxyModel.Direction.Rows)

    def matches(self, text: str) -> bool:
        return self.needle in text.casefold()

    def filterAcceptsRow(self, row: int, parent: QModelIndex) -> bool:  # noqa: N802 - Qt's name
        return self.matches(self.sourceModel().index(row, 0, parent).data() or "")


class ChapterPanel(QWidget):
    chapter_chosen = Signal(int)  # the index of the chapter to go to
    done = Signal()  # Escape: the user is done with the list

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.search = QLineEdit(placeholderText="Search chapters…", clearButtonEnabled=True)
        self.search.setAccessibleName("Search chapters")
        self.search.setMaxLength(MAX_SEARCH_CHARS)
        self.model = QStandardItemModel(self)
        self.filter = TitleFilter(self)
        self.filter.setSourceModel(self.model)
        self.tree = QTreeView(headerHidden=True, uniformRowHeights=True)
        self.tree.setAccessibleName("Chapters")
        self.tree.setModel(self.filter)
        self.tree.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.tree.setTextElideMode(Qt.TextElideMode.ElideRight)
        self.count_label = QLabel()
        layout = QVBoxLayout(self)
        layout.setContentsMargins(4, 4, 4, 4)
        layout.addWidget(self.search)
        layout.addWidget(self.tree, 1)
        layout.addWidget(self.count_label)
        self.items: list[QStandardItem] = []
        self.current: int | None = None
        self.search.textChanged.connect(self._filter)
        self.search.returnPressed.connect(self._choose_current)
        self.search.installEventFilter(self)
        self.tree.installEventFilter(self)
        self.tree.activated.connect(self._choose)  # Enter, and a double-click (a click where the style says so)
        self.set_chapters([])

    # ---- what it shows --------------------------------------------------------------------------------------
    def set_chapters(self, chapters) -> None:
        """List ``chapters`` (objects with ``title`` and ``level``: ``engine.documents.outline``'s list, which export
        numbers alike), nested as the export dialog nests them; a search typed stays."""
        self.model.clear()
        self.items = []
        self.current = None
        levels = [max(int(getattr(chapter, "level", 1) or 1), 1) for chapter in chapters]
        for index, (chapter, up) in enumerate(zip(chapters, parents(levels), strict=True)):
            item = QStandardItem(f"{index + 1}. {' '.join(chapter.title.split())}")
            item.setData(index, INDEX_ROLE)
            item.setToolTip(chapter.title)
            item.setEditable(False)
            (self.items[up] if up is not None else self.model.invisibleRootItem()).appendRow(item)
            self.items.append(item)
        self.tree.setRootIsDecorated(any(item.hasChildren() for item in self.items))
        self._filter(self.search.text())

    def set_current(self, index: int | None) -> None:
        """Show chapter ``index`` as the one being read (None: no chapter holds the place)."""
        if index is not None and not 0 <= index < len(self.items):
            index = None
        if index == self.current:
            return
        if self.current is not None:
            self._mark(self.items[self.current], False)
        self.current = index
        if index is not None:
            self._mark(self.items[index], True)
            self._follow()

    def shown_indexes(self) -> list[int]:
        """The chapters the search leaves listed that match it, in book order."""
        return [i for i, item in enumerate(self.items) if self.filter.matches(item.text())]

    def focus_list(self) -> None:
        """Give the keys to the search field, with the current chapter highlighted below it."""
        self._follow(force=True)
        self.search.setFocus()
        self.search.selectAll()

    # ---- internals --------------------------------------------------------------------------------------
    def _mark(self, item: QStandardItem, current: bool) -> None:
        font = QFont(item.font())
        font.setBold(current)
        item.setFont(font)
        item.setData(CURRENT_NOTE if current else None, Qt.ItemDataRole.AccessibleDescriptionRole)

    def _follow(self, force: bool = False) -> None:
        """Select and show the current chapter, unless the user is moving in the list."""
        if self.current is None or (self.tree.hasFocus() and not force):
            return
        index = self.filter.mapFromSource(self.items[self.current].index())
        if index.isValid():
            self.tree.setCurrentIndex(index)
            self.tree.scrollTo(index)

    def _filter(self, text: str) -> None:
        self.filter.set_needle(text)
        self.tree.expandAll()
        shown = len(self.shown_indexes())
        total = len(self.items)
        if not total:
            self.count_label.setText("No chapters in this text")
        elif self.filter.needle:
            self.count_label.setText(f"{shown} of {total} chapters match")
            first = next((i for i in self.shown_indexes()), None)
            if first is not None:
                self.tree.setCurrentIndex(self.filter.mapFromSource(self.items[first].index()))
        else:
            self.count_label.setText(f"{total} chapter{'s' if total != 1 else ''}")
            self._follow(force=True)

    def _choose(self, index: QModelIndex) -> None:
        chapter = index.data(INDEX_ROLE)
        if chapter is not None:
            self.chapter_chosen.emit(int(chapter))

    def _choose_current(self) -> None:
        index = self.tree.currentIndex()
        if index.isValid() and self.filter.matches(index.data() or ""):
            self._choose(index)

    def eventFilter(self, watched, event) -> bool:  # noqa: N802 - Qt's name
        if event.type() != event.Type.KeyPress:
            return False
        if event.key() == Qt.Key.Key_Escape:
            self.done.emit()
            return True
        if watched is self.search and event.key() in (Qt.Key.Key_Down, Qt.Key.Key_Up, Qt.Key.Key_PageDown,
                                                       Qt.Key.Key_PageUp):
            self.tree.setFocus()  # the arrows browse the list from the search field, as in a file dialog's
            if not self.tree.currentIndex().isValid() and self.filter.rowCount():
                self.tree.setCurrentIndex(self.filter.index(0, 0))
            return True
        return False


class ChapterDock(QDockWidget):
    """The dock holding the panel. It opens by itself when a document with chapters is shown, unless the user
    closed it (then only Chapters ▸ Chapter list opens it again), and hides for a text with no chapters."""

    SHORTCUT = QKeySequence("Ctrl+Shift+C")

    def __init__(self, parent: QWidget | None = None):
        super().__init__("Chapters", parent)
        self.setObjectName("chapters")
        self.setAccessibleName("Chapters")
        self.panel = ChapterPanel()
        self.setWidget(self.panel)
        self.closed_by_user = False
        self.hide()

    def show_chapters(self, chapters) -> None:
        self.panel.set_chapters(chapters)
        if not chapters:
            self.hide()
        elif not self.closed_by_user:
            self.show()

    def show_and_focus(self) -> None:
        """Chapters ▸ Chapter list: open the panel and give it the keys; where it has them already, close it."""
        if self.isVisible() and self.isAncestorOf(QApplication.focusWidget()):
            self.close()
            return
        self.closed_by_user = False
        self.show()
        self.raise_()
        self.panel.focus_list()

    def closeEvent(self, event) -> None:  # noqa: N802 - Qt's name
        self.closed_by_user = True
        self.panel.done.emit()
        super().closeEvent(event)
