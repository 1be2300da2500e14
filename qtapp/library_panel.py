"""The voice library panel: search, list, and the actions on voices (add, preview, rename, delete,
import, export, make default, keep a designed voice).

The panel edits the library itself; what needs the engine (preview, keep) is asked for through
signals that the main window forwards to the speech worker.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from PySide6.QtCore import QItemSelectionModel, QSize, Qt, Signal
from PySide6.QtWidgets import (
    QFileDialog,
    QHBoxLayout,
    QInputDialog,
    QLabel,
    QLineEdit,
    QListView,
    QMenu,
    QMessageBox,
    QStyle,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from engine.voices.library import VOICE_SUFFIX, LibraryError, VoiceLibrary
from qtapp.dialogs.voice_dialogs import CloneVoiceDialog, DesignVoiceDialog, PresetVoiceDialog
from qtapp.model_download import FALLBACK_SPEAKERS
from qtapp.voice_list_models import VoiceFilterModel, VoiceListModel

VOICE_FILTER = f"Orator voice (*{VOICE_SUFFIX});;All files (*)"


class LibraryPanel(QWidget):
    preview_requested = Signal(str)  # library name
    keep_requested = Signal(str)  # library name of a designed voice
    default_changed = Signal(str)  # library name now used for unmarked paragraphs
    message = Signal(str)  # a status-bar line

    def __init__(self, library: VoiceLibrary, default_name: str = "", parent: QWidget | None = None,
                 preset_speakers: Callable[[], list[str]] = lambda: list(FALLBACK_SPEAKERS),
                 start_folder: Callable[[], Path] = Path.home):
        """``preset_speakers()`` lists the speakers the preset model in use offers (asked when a preset
        voice is added, so a model loaded since is seen); ``start_folder()`` is where importing and exporting a
        voice file start."""
        super().__init__(parent)
        self.library = library
        self.preset_speakers = preset_speakers
        self.start_folder = start_folder
        self.model = VoiceListModel(library, self)
        self.model.set_default(default_name)
        self.proxy = VoiceFilterModel(self.model, self)
        style = self.style()

        title = QLabel("<b>Voices</b>")
        add = QToolButton(text="Add", icon=style.standardIcon(QStyle.StandardPixmap.SP_FileDialogNewFolder),
                          toolButtonStyle=Qt.ToolButtonStyle.ToolButtonTextBesideIcon,
                          popupMode=QToolButton.ToolButtonPopupMode.InstantPopup, autoRaise=True)
        menu = QMenu(add)
        self.add_preset_action = menu.addAction("Preset speaker…", self.add_preset)
        self.add_design_action = menu.addAction("Designed voice…", self.add_design)
        self.add_clone_action = menu.addAction("Clone from a recording…", self.add_clone)
        menu.addSeparator()
        menu.addAction("Import voice file…", self.import_voice)
        add.setMenu(menu)
        header = QHBoxLayout()
        header.addWidget(title)
        header.addStretch(1)
        header.addWidget(add)

        self.search = QLineEdit(placeholderText="Search voices…", clearButtonEnabled=True)
        self.search.textChanged.connect(self.proxy.set_search)
        self.view = QListView()
        self.view.setModel(self.proxy)
        self.view.setIconSize(QSize(22, 22))
        self.view.setSpacing(2)
        self.view.setAlternatingRowColors(True)
        self.view.setEditTriggers(QListView.EditTrigger.NoEditTriggers)
        self.view.doubleClicked.connect(lambda _: self.make_default())
        self.view.selectionModel().selectionChanged.connect(lambda *_: self._update_buttons())
        self.view.setContextMenuPolicy(Qt.ContextMenuPolicy.ActionsContextMenu)
        self.empty_hint = QLabel("No voices yet. Use <b>Add</b> to create one from a preset speaker, "
                                 "a description or a recording.", wordWrap=True)
        self.empty_hint.setStyleSheet("color: palette(mid); padding: 6px;")

        def tool(text, icon, slot, tip):
            button = QToolButton(text=text, icon=style.standardIcon(icon), toolTip=tip, autoRaise=True,
                                 toolButtonStyle=Qt.ToolButtonStyle.ToolButtonIconOnly)
            button.clicked.connect(slot)
            action = self.view.addAction(text)
            action.triggered.connect(slot)
            return button

        self.preview_button = tool("Preview", QStyle.StandardPixmap.SP_MediaPlay, self.preview, "Preview this voice")
        self.default_button = tool("Use for unmarked text", QStyle.StandardPixmap.SP_DialogApplyButton,
                                   self.make_default, "Read unmarked paragraphs with this voice (double-click)")
        self.keep_button = tool("Keep this voice", QStyle.StandardPixmap.SP_DialogSaveButton, self.keep,
                                "Fix this designed voice as a clone of one rendition, so it stays the same")
        self.rename_button = tool("Rename…", QStyle.StandardPixmap.SP_FileDialogContentsView, self.rename,
                                  "Rename this voice")
        self.export_button = tool("Export…", QStyle.StandardPixmap.SP_DriveFDIcon, self.export_voice,
                                  "Save this voice to a file")
        self.delete_button = tool("Delete…", QStyle.StandardPixmap.SP_TrashIcon, self.delete, "Delete this voice")
        buttons = QHBoxLayout()
        for button in (self.preview_button, self.default_button, self.keep_button, self.rename_button,
                       self.export_button, self.delete_button):
            buttons.addWidget(button)
        buttons.addStretch(1)

        layout = QVBoxLayout(self)
        layout.setContentsMargins(6, 6, 6, 6)
        layout.addLayout(header)
        layout.addWidget(self.search)
        layout.addWidget(self.view, 1)
        layout.addWidget(self.empty_hint)
        layout.addLayout(buttons)
        self.refresh()

    # ---- state -------------------------------------------------------------------------------------
    def selected_name(self) -> str | None:
        indexes = self.view.selectionModel().selectedIndexes()
        return indexes[0].data(Qt.ItemDataRole.UserRole) if indexes else None

    def select(self, name: str) -> None:
        row = self.model.row_of(name)
        if row >= 0:
            index = self.proxy.mapFromSource(self.model.index(row))
            self.view.selectionModel().select(index, QItemSelectionModel.SelectionFlag.ClearAndSelect)
            self.view.setCurrentIndex(index)

    def refresh(self, select: str | None = None) -> None:
        keep = select or self.selected_name()
        self.model.refresh()
        if unreadable := self.model.unreadable_names():
            self.message.emit("Some voice files cannot be read (delete or replace them): " + ", ".join(unreadable))
        if keep:
            self.select(keep)
        self.empty_hint.setVisible(self.model.rowCount() == 0)
        self._update_buttons()

    def _update_buttons(self) -> None:
        name = self.selected_name()
        entry = self.model.entry(self.model.row_of(name)) if name else None
        for button in (self.export_button, self.delete_button):
            button.setEnabled(entry is not None)
        for button in (self.preview_button, self.default_button, self.rename_button):  # an unreadable file: no
            button.setEnabled(entry is not None and entry.readable)
        self.keep_button.setEnabled(entry is not None and entry.kind == "design")

    def _fail(self, error: Exception) -> None:
        QMessageBox.warning(self, "Voice library", str(error))

    # ---- adding ------------------------------------------------------------------------------------
    def add_voice(self, voice, name: str) -> str | None:
        try:
            name = self.library.add(voice, name)
        except (LibraryError, OSError) as e:
            self._fail(e)
            return None
        self.refresh(select=name)
        if not self.model.default_name:
            self.make_default()
        self.message.emit(f"Added voice “{name}”.")
        return name

    def _run_voice_dialog(self, dialog) -> str | None:
        if dialog.exec() and dialog.created_voice is not None:
            return self.add_voice(dialog.created_voice, dialog.name())
        return None

    def add_preset(self) -> str | None:
        return self._run_voice_dialog(PresetVoiceDialog(self.preset_speakers(), self))

    def add_design(self) -> str | None:
        return self._run_voice_dialog(DesignVoiceDialog(self))

    def add_clone(self) -> str | None:
        return self._run_voice_dialog(CloneVoiceDialog(self))

    def import_voice(self) -> None:
        path, _ = QFileDialog.getOpenFileName(self, "Import a voice", str(self.start_folder()), VOICE_FILTER)
        if path:
            try:
                name = self.library.import_file(Path(path))
            except (LibraryError, OSError) as e:
                self._fail(e)
                return
            self.refresh(select=name)
            self.message.emit(f"Imported voice “{name}”.")

    # ---- actions on the selected voice -------------------------------------------------------------
    def preview(self) -> None:
        if name := self.selected_name():
            self.preview_requested.emit(name)

    def keep(self) -> None:
        if name := self.selected_name():
            self.keep_requested.emit(name)

    def make_default(self) -> None:
        if name := self.selected_name():
            self.model.set_default(name)
            self.default_changed.emit(name)

    def rename(self) -> None:
        old = self.selected_name()
        if not old:
            return
        new, ok = QInputDialog.getText(self, "Rename voice", "New name:", text=old)
        if not ok or not new.strip() or new.strip() == old:
            return
        try:
            new = self.library.rename(old, new)
        except (LibraryError, OSError) as e:
            self._fail(e)
            return
        if self.model.default_name == old:
            self.model.set_default(new)
            self.default_changed.emit(new)
        self.refresh(select=new)

    def delete(self) -> None:
        name = self.selected_name()
        if not name:
            return
        answer = QMessageBox.question(self, "Delete voice", f"Delete the voice “{name}” from the library?")
        if answer != QMessageBox.StandardButton.Yes:
            return
        try:
            self.library.delete(name)
        except (LibraryError, OSError) as e:
            self._fail(e)
            return
        if self.model.default_name == name:
            self.model.set_default("")
            self.default_changed.emit("")
        self.refresh()
        self.message.emit(f"Deleted voice “{name}”.")

    def export_voice(self) -> None:
        name = self.selected_name()
        if not name:
            return
        path, _ = QFileDialog.getSaveFileName(self, "Export voice", str(self.start_folder() / f"{name}{VOICE_SUFFIX}"),
                                              VOICE_FILTER)
        if path:
            try:
                self.library.export_file(name, Path(path))
            except (LibraryError, OSError) as e:
                self._fail(e)
                return
            self.message.emit(f"Exported “{name}” to {path}.")
