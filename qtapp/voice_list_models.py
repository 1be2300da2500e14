"""The Qt list models of the voice library (``engine.voices.library.VoiceLibrary``, the folder of voice files).

``VoiceListModel`` exposes the library to list views (display text, kind icon, tooltip); a file that cannot
be read is a row too, marked unreadable with its error, so the user can delete it. ``VoiceFilterModel``
filters the list by a search string. The panel that uses them is in ``qtapp.library_panel``.
"""

from __future__ import annotations

from PySide6.QtCore import QAbstractListModel, QModelIndex, QSortFilterProxyModel, Qt
from PySide6.QtWidgets import QApplication, QStyle

from engine.voices.library import VoiceLibrary
from engine.voices.library_entry import VoiceEntry

KIND_ICONS = {
    "preset": QStyle.StandardPixmap.SP_ComputerIcon,
    "design": QStyle.StandardPixmap.SP_FileDialogDetailedView,
    "clone": QStyle.StandardPixmap.SP_MediaVolume,
    None: QStyle.StandardPixmap.SP_MessageBoxWarning,
}
KIND_LABELS = {"preset": "preset speaker", "design": "designed", "clone": "cloned", None: "unreadable file"}


def kind_label(entry: VoiceEntry) -> str:
    return KIND_LABELS[entry.kind]


class VoiceListModel(QAbstractListModel):
    """One row per library voice; ``Qt.UserRole`` holds the name, ``KindRole`` the kind."""

    KindRole = Qt.ItemDataRole.UserRole + 1

    def __init__(self, library: VoiceLibrary, parent=None):
        super().__init__(parent)
        self.library = library
        self.default_name = ""
        self._entries: list[VoiceEntry] = []
        self.refresh()

    def refresh(self) -> None:
        self.beginResetModel()
        self._entries = self.library.entries()
        self.endResetModel()

    def set_default(self, name: str) -> None:
        self.default_name = name
        if self._entries:
            self.dataChanged.emit(self.index(0), self.index(len(self._entries) - 1))

    def rowCount(self, parent: QModelIndex | None = None) -> int:
        return 0 if parent is not None and parent.isValid() else len(self._entries)

    def entry(self, row: int) -> VoiceEntry:
        return self._entries[row]

    def unreadable_names(self) -> list[str]:
        return [e.name for e in self._entries if not e.readable]

    def row_of(self, name: str) -> int:
        return next((i for i, e in enumerate(self._entries) if e.name == name), -1)

    def data(self, index, role=Qt.ItemDataRole.DisplayRole):
        if not index.isValid():
            return None
        entry = self._entries[index.row()]
        if role == Qt.ItemDataRole.DisplayRole:
            star = "  ★" if entry.name == self.default_name else ""
            detail = f"{kind_label(entry)} · {entry.language}" if entry.readable else kind_label(entry)
            return f"{entry.name}{star}\n{detail}"
        if role == Qt.ItemDataRole.ToolTipRole:
            if not entry.readable:
                return f"{entry.name} cannot be used: {entry.error}\nDelete it, or replace the file."
            return f"{entry.name} ({kind_label(entry)}, {entry.language})\n{entry.summary}"
        if role == Qt.ItemDataRole.DecorationRole:
            return QApplication.style().standardIcon(KIND_ICONS[entry.kind])
        if role == Qt.ItemDataRole.UserRole:
            return entry.name
        if role == self.KindRole:
            return entry.kind
        return None


class VoiceFilterModel(QSortFilterProxyModel):
    """Case-insensitive search over names, kinds, languages and summaries."""

    def __init__(self, source: VoiceListModel, parent=None):
        super().__init__(parent)
        self.setSourceModel(source)
        self._needle = ""

    def set_search(self, text: str) -> None:
        self.beginFilterChange()  # Qt >= 6.9
        self._needle = text.strip().lower()
        self.endFilterChange(QSortFilterProxyModel.Direction.Rows)

    def filterAcceptsRow(self, row: int, parent) -> bool:
        if not self._needle:
            return True
        entry = self.sourceModel().entry(row)
        haystack = f"{entry.name} {kind_label(entry)} {entry.language or ''} {entry.summary}".lower()
        return all(word in haystack for word in self._needle.split())
