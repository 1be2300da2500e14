"""The voice library: a folder of voice files (``NAME.voice``) and the Qt list model that shows it.

``VoiceLibrary`` is Qt-free: it names, adds, renames, deletes, imports and exports voices, always
writing through a temporary file and a rename so a crash never leaves a half-written voice.
``VoiceListModel`` exposes the library to list views (display text, kind icon, tooltip) and
``VoiceFilterModel`` filters it by a search string. The panel that uses them is in
``qtapp.library_panel``.
"""

from __future__ import annotations

import re
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from PySide6.QtCore import QAbstractListModel, QModelIndex, QSortFilterProxyModel, Qt
from PySide6.QtWidgets import QApplication, QStyle

from engine.atomic import atomic_write

VOICE_SUFFIX = ".voice"
FORBIDDEN_NAME_CHARS = re.compile(r'[\\/:*?"<>|\x00-\x1f]')
MAX_NAME_CHARS = 80


class LibraryError(Exception):
    """A library operation cannot be done; the message is fit to show the user."""


def _engine_save(voice, path: Path) -> None:
    voice.save(path)


def _engine_load(path: Path):
    from engine import Voice

    return Voice.load(path)


@dataclass(frozen=True)
class VoiceEntry:
    name: str
    kind: str  # "preset" | "design" | "clone"
    language: str
    summary: str  # speaker, description or transcript, for tooltips
    path: Path


def validate_name(name: str) -> str:
    """The stripped name, or LibraryError if it cannot be a file name."""
    name = (name or "").strip()
    if not name:
        raise LibraryError("A voice needs a name.")
    if FORBIDDEN_NAME_CHARS.search(name) or name.startswith("."):
        raise LibraryError(f"“{name}” cannot be used as a voice name (avoid / \\ : * ? \" < > | and a leading dot).")
    if len(name) > MAX_NAME_CHARS:
        raise LibraryError(f"A voice name can have at most {MAX_NAME_CHARS} characters.")
    return name


def describe(voice, name: str, path: Path) -> VoiceEntry:
    if voice.kind == "preset":
        summary = voice.speaker + (f" — {voice.instruct}" if voice.instruct else "")
    elif voice.kind == "design":
        summary = voice.instruct or ""
    else:
        summary = f"transcript: {voice.ref_text}" if voice.ref_text else "recording only (no transcript)"
    return VoiceEntry(name, voice.kind, voice.language, summary, path)


class VoiceLibrary:
    """Voices stored as ``<folder>/<name>.voice``; the file name is the voice's library name."""

    def __init__(self, folder: Path, save_voice: Callable = _engine_save, load_voice: Callable = _engine_load):
        self.folder = Path(folder)
        self.folder.mkdir(parents=True, exist_ok=True)
        self._save_voice = save_voice
        self._load_voice = load_voice
        self._cache: dict[Path, tuple[float, int, VoiceEntry]] = {}
        self.skipped: list[str] = []  # files that could not be read at the last listing

    def path_of(self, name: str) -> Path:
        return self.folder / f"{validate_name(name)}{VOICE_SUFFIX}"

    def __contains__(self, name: str) -> bool:
        try:
            return self.path_of(name).exists()
        except LibraryError:
            return False

    def entries(self) -> list[VoiceEntry]:
        """Every readable voice, sorted by name; unreadable files are listed in ``skipped``."""
        entries, self.skipped = [], []
        for path in sorted(self.folder.glob(f"*{VOICE_SUFFIX}"), key=lambda p: p.stem.lower()):
            if path.name.startswith("."):
                continue  # a temporary file of a write in progress
            stat = path.stat()
            cached = self._cache.get(path)
            if cached and cached[:2] == (stat.st_mtime, stat.st_size):
                entries.append(cached[2])
                continue
            try:
                entry = describe(self._load_voice(path), path.stem, path)
            except Exception:  # a corrupt or foreign file must not break the library
                self.skipped.append(path.name)
                continue
            self._cache[path] = (stat.st_mtime, stat.st_size, entry)
            entries.append(entry)
        return entries

    def names(self) -> list[str]:
        return [e.name for e in self.entries()]

    def get(self, name: str):
        path = self.path_of(name)
        if not path.exists():
            raise LibraryError(f"There is no voice called “{name}”.")
        try:
            return self._load_voice(path)
        except Exception as e:
            raise LibraryError(f"The voice file of “{name}” cannot be read: {e}") from e

    def unique_name(self, wanted: str) -> str:
        base = validate_name(wanted)
        name, n = base, 2
        while name in self:
            name, n = f"{base} ({n})", n + 1
        return name

    def add(self, voice, name: str, replace: bool = False) -> str:
        """Store ``voice`` under ``name`` (made unique unless ``replace``); returns the name used."""
        name = validate_name(name) if replace else self.unique_name(name)
        voice = voice.with_(name=name)
        atomic_write(self.path_of(name), lambda tmp: self._save_voice(voice, tmp))
        return name

    def rename(self, old: str, new: str) -> str:
        new = validate_name(new)
        if new == old:
            return new
        if new in self and new.lower() != old.lower():
            raise LibraryError(f"A voice called “{new}” already exists.")
        voice = self.get(old)
        atomic_write(self.path_of(new), lambda tmp: self._save_voice(voice.with_(name=new), tmp))
        if self.path_of(old) != self.path_of(new) and self.path_of(old).exists():
            self.path_of(old).unlink()
        return new

    def delete(self, name: str) -> None:
        path = self.path_of(name)
        if not path.exists():
            raise LibraryError(f"There is no voice called “{name}”.")
        path.unlink()
        self._cache.pop(path, None)

    def import_file(self, source: Path) -> str:
        """Copy a voice file into the library (checking that it loads); returns its library name."""
        source = Path(source)
        try:
            voice = self._load_voice(source)
        except Exception as e:
            raise LibraryError(f"“{source.name}” is not a voice file Orator can read: {e}") from e
        return self.add(voice, voice.name or source.stem)

    def export_file(self, name: str, destination: Path) -> None:
        source = self.path_of(name)
        if not source.exists():
            raise LibraryError(f"There is no voice called “{name}”.")
        atomic_write(Path(destination), lambda tmp: shutil.copyfile(source, tmp))


KIND_ICONS = {
    "preset": QStyle.StandardPixmap.SP_ComputerIcon,
    "design": QStyle.StandardPixmap.SP_FileDialogDetailedView,
    "clone": QStyle.StandardPixmap.SP_MediaVolume,
}
KIND_LABELS = {"preset": "preset speaker", "design": "designed", "clone": "cloned"}


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

    def row_of(self, name: str) -> int:
        return next((i for i, e in enumerate(self._entries) if e.name == name), -1)

    def data(self, index, role=Qt.ItemDataRole.DisplayRole):
        if not index.isValid():
            return None
        entry = self._entries[index.row()]
        if role == Qt.ItemDataRole.DisplayRole:
            star = "  ★" if entry.name == self.default_name else ""
            return f"{entry.name}{star}\n{KIND_LABELS[entry.kind]} · {entry.language}"
        if role == Qt.ItemDataRole.ToolTipRole:
            return f"{entry.name} ({KIND_LABELS[entry.kind]}, {entry.language})\n{entry.summary}"
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
        haystack = f"{entry.name} {KIND_LABELS[entry.kind]} {entry.language} {entry.summary}".lower()
        return all(word in haystack for word in self._needle.split())
