"""The export dialog's choice of chapters: the book's chapters as a tree of check boxes, nested as the chapter panel
nests them (``engine.documents.outline.parents``), with All, None and a range typed as ``orator export --chapters``
takes it ("1,3-5").

Checking or unchecking a part does the same to every chapter under it; a chapter checked alone leaves its part as
it was (the part's own words, its heading, are exported only while the part is checked). The range chooses as
``--chapters`` chooses (``engine.production.chapter_ranges.chapter_selection``: a part brings its chapters), so a range
means the
same chapters in the dialog and on the command line.
"""

from __future__ import annotations

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QAbstractItemView,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPushButton,
    QTreeWidget,
    QTreeWidgetItem,
    QVBoxLayout,
    QWidget,
)

from engine.documents.outline import parents, with_descendants
from engine.production.chapter_ranges import chapter_selection

MAX_RANGE_CHARS = 1000
INDEX_ROLE = Qt.ItemDataRole.UserRole + 1  # the chapter's index in the book
CHECKED, UNCHECKED = Qt.CheckState.Checked, Qt.CheckState.Unchecked


class ChapterChoice(QWidget):
    changed = Signal()  # what is checked changed (by hand, a button or the range)

    def __init__(self, chapters, parent: QWidget | None = None):
        """``chapters``: objects with ``title`` and ``level`` (a ``Book``'s), all checked at first."""
        super().__init__(parent)
        self.levels = [max(int(getattr(c, "level", 1) or 1), 1) for c in chapters]
        self.tree = QTreeWidget(headerHidden=True, uniformRowHeights=True)
        self.tree.setAccessibleName("Chapters to export")
        self.tree.setAccessibleDescription("Check the chapters to export; Space checks or unchecks one, and a part "
                                           "with every chapter in it.")
        self.tree.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.items: list[QTreeWidgetItem] = []
        for index, (chapter, up) in enumerate(zip(chapters, parents(self.levels), strict=True)):
            item = QTreeWidgetItem([f"{index + 1}. {' '.join(chapter.title.split())}"])
            item.setToolTip(0, chapter.title)
            item.setFlags(item.flags() | Qt.ItemFlag.ItemIsUserCheckable)
            item.setCheckState(0, CHECKED)
            item.setData(0, INDEX_ROLE, index)
            if up is None:
                self.tree.addTopLevelItem(item)
            else:
                self.items[up].addChild(item)
            self.items.append(item)
        self.tree.setRootIsDecorated(any(item.childCount() for item in self.items))
        self.tree.expandAll()
        self.tree.itemChanged.connect(self._toggled)
        self.all_button = self._button("A&ll", "Check all chapters", lambda: self.check(range(self.count())))
        self.none_button = self._button("&None", "Uncheck all chapters", lambda: self.check(()))
        self.range_field = QLineEdit(placeholderText="e.g. 1,3-5")
        self.range_field.setAccessibleName("Chapters to export, by number")
        self.range_field.setToolTip("Check exactly these chapters: numbers and ranges, e.g. 1,3-5; a part brings "
                                    "its chapters")
        self.range_field.setMaxLength(MAX_RANGE_CHARS)
        self.range_field.textEdited.connect(self._range_edited)
        self.range_label = QLabel("&Range:")
        self.range_label.setBuddy(self.range_field)
        row = QHBoxLayout()
        for widget in (self.all_button, self.none_button, self.range_label):
            row.addWidget(widget)
        row.addWidget(self.range_field, 1)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.tree, 1)
        layout.addLayout(row)

    def _button(self, text: str, name: str, slot) -> QPushButton:
        button = QPushButton(text)
        button.setAccessibleName(name)
        button.setAutoDefault(False)  # Enter in the dialog adds the job, never presses these
        button.clicked.connect(slot)
        return button

    # ---- what is chosen -----------------------------------------------------------------------------------
    def count(self) -> int:
        return len(self.items)

    def checked(self) -> list[int]:
        return [i for i, item in enumerate(self.items) if item.checkState(0) == CHECKED]

    def chosen(self) -> list[int] | None:
        """0-based chapters checked; None when all are."""
        checked = self.checked()
        return None if len(checked) == self.count() else checked

    def problem(self) -> str | None:
        """Why the chapters chosen cannot be exported (a range that does not parse, none checked), or None."""
        if self.range_field.text().strip():
            try:
                chapter_selection(self.range_field.text(), self.levels)
            except ValueError as e:
                return f"Chapters: {e}."
        if self.count() and not self.checked():
            return "No chapter is checked: check at least one chapter (or All) to export."
        return None

    def check(self, chosen, by_range: bool = False) -> None:
        """Check exactly the chapters ``chosen`` (0-based); the range field, no longer what is checked, empties
        unless it is what chose them (``by_range``)."""
        chosen = set(chosen)
        self._set_states({i: CHECKED if i in chosen else UNCHECKED for i in range(self.count())})
        if not by_range:
            self.range_field.clear()
        self.changed.emit()

    # ---- internals ------------------------------------------------------------------------------------------
    def _set_states(self, states: dict[int, Qt.CheckState]) -> None:
        self.tree.blockSignals(True)  # one change signal for the whole list afterwards, not one per item
        try:
            for index, state in states.items():
                if self.items[index].checkState(0) != state:
                    self.items[index].setCheckState(0, state)
        finally:
            self.tree.blockSignals(False)
        self.tree.viewport().update()

    def _toggled(self, item: QTreeWidgetItem, _column: int) -> None:
        """A chapter checked or unchecked by hand: the chapters under it follow; the range no longer says it."""
        if item.childCount():
            state = item.checkState(0)
            self._set_states({i: state for i in with_descendants([item.data(0, INDEX_ROLE)], self.levels)})
        self.range_field.clear()
        self.changed.emit()

    def _range_edited(self, text: str) -> None:
        """Check the chapters the range names as it is typed; a range that does not parse yet changes nothing."""
        if text.strip():
            try:
                self.check(chapter_selection(text, self.levels), by_range=True)
                return
            except ValueError:
                pass
        self.changed.emit()
