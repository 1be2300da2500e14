"""Menus, toolbar and keyboard shortcuts of the main window, in one place.

``build_actions(window)`` creates every QAction, puts them in the menu bar and the toolbar, and
returns a ``WindowActions`` holding the ones the window enables and disables. ``help_html(window)`` is
the text of Help ▸ Keyboard shortcuts and voice marks, built from the actions themselves so it never
names a shortcut that is not there.
"""

from __future__ import annotations

import html
from dataclasses import dataclass
from pathlib import Path

from PySide6.QtCore import QEvent, QObject, QSize, Qt
from PySide6.QtGui import QAction, QKeySequence
from PySide6.QtWidgets import QDoubleSpinBox, QFileDialog, QLabel, QLineEdit, QMenu, QMessageBox, QStyle, QToolBar

from engine.documents import OPEN_FILTER
from qtapp.dialogs.first_run import FirstRunDialog
from qtapp.dialogs.pronunciation_dialog import PronunciationDialog
from qtapp.dialogs.settings_dialog import SettingsDialog
from qtapp.export_requests import open_export_dialog
from qtapp.segment_preview import open_segment_preview

SHORTCUTS = {
    "play": "F5",
    "pause": "F6",
    "stop": "F8",
    "previous": "Alt+Left",
    "next": "Alt+Right",
    "slower": "Ctrl+Alt+-",
    "faster": "Ctrl+Alt+=",
    "next_chapter": "Ctrl+Shift+Down",
    "previous_chapter": "Ctrl+Shift+Up",
    "chapter_list": "Ctrl+Shift+C",
}
# the keys of text editing, which stay a one-line field's own even where a window action has them too
FIELD_KEYS = (QKeySequence.StandardKey.Undo, QKeySequence.StandardKey.Redo, QKeySequence.StandardKey.Cut,
              QKeySequence.StandardKey.Copy, QKeySequence.StandardKey.Paste, QKeySequence.StandardKey.SelectAll)


class WindowKeysFirst(QObject):
    """An event filter for the window's one-line fields: a window action's shortcut reaches the action while such a
    field has the focus. On X11 a QLineEdit claims Emacs-like keys (Ctrl+E: the end of the line), so without this
    Ctrl+E in "Search voices…" did nothing; the keys of text editing (``FIELD_KEYS``) stay the field's."""

    def __init__(self, window):
        super().__init__(window)
        self.window = window

    def eventFilter(self, watched, event) -> bool:  # noqa: N802 - Qt's name
        if event.type() == QEvent.Type.ShortcutOverride and self._window_key(event):
            event.ignore()  # not the field's: the shortcut goes to the window's action
            return True
        return False

    def _window_key(self, event) -> bool:
        if any(event.matches(key) for key in FIELD_KEYS):
            return False
        pressed = QKeySequence(event.keyCombination())
        return any(action.isEnabled() and action.shortcutContext() != Qt.ShortcutContext.WidgetShortcut
                   and any(key.matches(pressed) == QKeySequence.SequenceMatch.ExactMatch for key in action.shortcuts())
                   for action in self.window.actions())


def keep_window_keys(window, field: QLineEdit) -> None:
    """Let ``window``'s shortcuts through ``field`` (``WindowKeysFirst``); one filter per window serves every field."""
    keys = window.findChild(WindowKeysFirst) or WindowKeysFirst(window)
    field.installEventFilter(keys)


@dataclass
class WindowActions:
    play: QAction
    pause: QAction
    stop: QAction
    previous: QAction
    next: QAction
    speed: QDoubleSpinBox
    recent_menu: QMenu
    chapter_steps: list[QAction]  # next and previous chapter
    window: object

    def enable_chapter_steps(self) -> None:
        for action in self.chapter_steps:
            action.setEnabled(bool(self.window.document_chapters))

    def rebuild_recent_menu(self) -> None:
        self.recent_menu.clear()
        for path in self.window.settings.recent_files:
            action = self.recent_menu.addAction(Path(path).name)
            action.setToolTip(path)
            action.triggered.connect(lambda _=False, p=path: self.window.open_path(Path(p)))
        self.recent_menu.setEnabled(bool(self.window.settings.recent_files))


def build_actions(window) -> WindowActions:
    style = window.style()
    icon = lambda name: style.standardIcon(getattr(QStyle.StandardPixmap, name))

    def action(text, slot, shortcut=None, icon_name=None, tip=None) -> QAction:
        act = QAction(text, window)
        if icon_name:
            act.setIcon(icon(icon_name))
        if shortcut is not None:
            act.setShortcut(QKeySequence(shortcut))
            act.setShortcutContext(Qt.ShortcutContext.WindowShortcut)
        act.setToolTip(f"{tip or text} ({QKeySequence(shortcut).toString()})" if shortcut else (tip or text))
        act.triggered.connect(slot)
        window.addAction(act)
        return act

    editor, reader = window.editor, window.reader
    menu_bar = window.menuBar()

    # ---- File --------------------------------------------------------------------------------------
    file_menu = menu_bar.addMenu("&File")
    file_menu.addAction(action("&New", window.documents.new_document, QKeySequence.StandardKey.New, "SP_FileIcon"))
    file_menu.addAction(action("&Open…", lambda: _open_dialog(window), QKeySequence.StandardKey.Open,
                               "SP_DialogOpenButton"))
    recent_menu = file_menu.addMenu("Open &Recent")
    file_menu.addSeparator()
    file_menu.addAction(action("&Save", window.documents.save, QKeySequence.StandardKey.Save, "SP_DialogSaveButton",
                               "Save the text as plain text"))
    file_menu.addAction(action("Save &As…", window.documents.save_as, "Ctrl+Shift+S"))
    file_menu.addSeparator()
    file_menu.addAction(action("&Export audio…", lambda: open_export_dialog(window), "Ctrl+E",
                               "SP_DialogSaveButton", "Queue the text for export to an audio file; it is made "
                               "in the background"))
    file_menu.addAction(action("Preview se&gments…", lambda: open_segment_preview(window), None, None,
                               "What an export would speak, segment by segment, with its chapter and voice"))
    queue_view = window.export_dock.toggleViewAction()
    queue_view.setText("Export &queue")
    queue_view.setShortcut("Ctrl+Shift+E")
    file_menu.addAction(queue_view)
    file_menu.addAction(action("Open subtitles for &voiceover…", lambda: _voiceover_dialog(window), None, None,
                               "Speak a subtitle file (.srt, .vtt) line by line on its cues, with takes to choose"))
    voiceover_view = window.voiceover_dock.toggleViewAction()
    voiceover_view.setText("Voice&over view")
    file_menu.addAction(voiceover_view)
    file_menu.addSeparator()
    file_menu.addAction(action("&Quit", window.close, QKeySequence.StandardKey.Quit))

    # ---- Edit --------------------------------------------------------------------------------------
    edit_menu = menu_bar.addMenu("&Edit")
    undo = action("&Undo", editor.undo, QKeySequence.StandardKey.Undo, "SP_ArrowBack")
    redo = action("&Redo", editor.redo, QKeySequence.StandardKey.Redo, "SP_ArrowForward")
    undo.setEnabled(False)
    redo.setEnabled(False)
    editor.undoAvailable.connect(undo.setEnabled)
    editor.redoAvailable.connect(redo.setEnabled)
    edit_menu.addActions([undo, redo])
    edit_menu.addSeparator()
    for text, slot, key in (("Cu&t", editor.cut, QKeySequence.StandardKey.Cut),
                            ("&Copy", editor.copy, QKeySequence.StandardKey.Copy),
                            ("&Paste", editor.paste, QKeySequence.StandardKey.Paste),
                            ("Select &All", editor.selectAll, QKeySequence.StandardKey.SelectAll)):
        act = action(text, slot, key)
        act.setShortcutContext(Qt.ShortcutContext.WidgetShortcut)  # the focused widget handles the keys
        edit_menu.addAction(act)
    edit_menu.addSeparator()
    edit_menu.addAction(action("&Find…", window.find_bar.open_bar, QKeySequence.StandardKey.Find,
                               "SP_FileDialogContentsView"))
    edit_menu.addAction(action("Find &Next", lambda: window.find_bar.find(), QKeySequence.StandardKey.FindNext))
    edit_menu.addAction(action("Find Pre&vious", lambda: window.find_bar.find(backward=True),
                               QKeySequence.StandardKey.FindPrevious))

    # ---- View --------------------------------------------------------------------------------------
    view_menu = menu_bar.addMenu("&View")
    view_menu.addAction(action("Zoom &In", lambda: editor.zoom(+1), QKeySequence.StandardKey.ZoomIn))
    view_menu.addAction(action("Zoom &Out", lambda: editor.zoom(-1), QKeySequence.StandardKey.ZoomOut))
    view_menu.addAction(action("&Reset Zoom", lambda: editor.set_font_size(window.settings.font_size), "Ctrl+0"))

    # ---- Read --------------------------------------------------------------------------------------
    read_menu = menu_bar.addMenu("&Read")
    play = action("Play", window.read_aloud.play, SHORTCUTS["play"], "SP_MediaPlay",
                  "Read aloud from the cursor or the selection")
    pause = action("Pause", reader.pause, SHORTCUTS["pause"], "SP_MediaPause")
    stop = action("Stop", reader.stop, SHORTCUTS["stop"], "SP_MediaStop")
    previous = action("Previous sentence", reader.previous_sentence, SHORTCUTS["previous"],
                      "SP_MediaSkipBackward")
    next_ = action("Next sentence", reader.next_sentence, SHORTCUTS["next"], "SP_MediaSkipForward")
    read_menu.addActions([play, pause, stop])
    read_menu.addSeparator()
    read_menu.addActions([previous, next_])
    speed = QDoubleSpinBox(minimum=0.5, maximum=2.0, singleStep=0.1, decimals=1, suffix="×",
                           value=window.settings.speed)
    speed.setAccessibleName("Reading speed")
    speed.setToolTip("Reading speed, same pitch (while reading, the sentence being read starts again at it)")
    speed.valueChanged.connect(lambda value: _set_speed(window, value))
    read_menu.addSeparator()
    read_menu.addAction(action("Faster", lambda: speed.stepUp(), SHORTCUTS["faster"]))
    read_menu.addAction(action("Slower", lambda: speed.stepDown(), SHORTCUTS["slower"]))

    # ---- Chapters: the list is a panel (qtapp.chapter_panel); a book's hundreds of chapters overflow a menu --
    chapters_menu = menu_bar.addMenu("&Chapters")
    chapter_steps = [action("Next chapter", window.chapters.next_chapter, SHORTCUTS["next_chapter"], "SP_ArrowDown"),
                     action("Previous chapter", window.chapters.previous_chapter, SHORTCUTS["previous_chapter"],
                            "SP_ArrowUp")]
    chapters_menu.addActions(chapter_steps)
    chapters_menu.addSeparator()
    chapters_menu.addAction(action("Chapter &list", window.chapter_dock.show_and_focus, SHORTCUTS["chapter_list"],
                                   tip="Show the chapter list and search it; again to close it"))

    # ---- Voices and settings -----------------------------------------------------------------------
    panel = window.library_panel
    voices_menu = menu_bar.addMenu("&Voices")
    voices_menu.addAction(panel.add_preset_action)
    voices_menu.addAction(panel.add_design_action)
    voices_menu.addAction(panel.add_clone_action)
    voices_menu.addSeparator()
    voices_menu.addAction(action("Import voice file…", panel.import_voice))
    tools_menu = menu_bar.addMenu("&Tools")
    tools_menu.addAction(action("&Pronunciation…", lambda: pronunciation_dialog(window), "Ctrl+Shift+P",
                                tip="Rules for how words are said"))
    settings_menu = menu_bar.addMenu("&Settings")
    settings_menu.addAction(action("&Models && settings…", lambda: _settings_dialog(window), "Ctrl+,",
                                   "SP_FileDialogDetailedView"))

    # ---- Help --------------------------------------------------------------------------------------
    help_menu = menu_bar.addMenu("&Help")
    help_menu.addAction(action("Keyboard shortcuts and &voice marks", lambda: _show_help(window),
                               QKeySequence.StandardKey.HelpContents))
    help_menu.addAction(action("&Download models…", lambda: _welcome_dialog(window),
                               tip="The Welcome dialog: download the models, or use a model folder you have"))

    # ---- toolbar -----------------------------------------------------------------------------------
    toolbar = QToolBar("Reading", movable=False)
    toolbar.setIconSize(QSize(22, 22))
    toolbar.setToolButtonStyle(Qt.ToolButtonStyle.ToolButtonTextBesideIcon)
    window.addToolBar(toolbar)
    toolbar.addActions([play, pause, stop])
    toolbar.addSeparator()
    toolbar.addActions([previous, next_])
    toolbar.addSeparator()
    speed_label = QLabel(" Reading speed ")
    speed_label.setBuddy(speed)
    toolbar.addWidget(speed_label)
    toolbar.addWidget(speed)

    for field in window.findChildren(QLineEdit):  # Search voices…, Find, the speed box's text
        keep_window_keys(window, field)

    actions = WindowActions(play, pause, stop, previous, next_, speed, recent_menu, chapter_steps, window)
    actions.rebuild_recent_menu()
    actions.enable_chapter_steps()
    return actions


READING_HELP = (
    "<h3>How text is read</h3>"
    "<p>The short sentences of one line are spoken together, up to 200 characters (Models &amp; settings, "
    "Speak together), so "
    "\"Quick! Close the door!\" keeps the voice of one thought; they are highlighted together too. A line "
    "break always starts anew, and a section number such as 6.1 is read with its heading. A designed voice "
    "keeps the voice of its first sentence for the rest of the reading. If the model ever fails to end a "
    "passage (it runs on, or repeats itself), the passage is cut and the status bar says so.</p>"
)

VOICE_MARKS_HELP = (
    "<h3>Voice marks</h3>"
    "<p>A line that starts with <code>[voice: NAME]</code> is read by the voice NAME, and so is every line after "
    "it up to the next blank line or the next mark; the mark itself is not read aloud. Text after a blank line "
    "is read by the default voice again (double-click a voice in the list to make it the default). Export "
    "follows the same rule, so a book sounds as it reads.</p>"
    "<pre>[voice: Mara] I have it. Go and see to the lamp,\n"
    "and take the dog with you.\n"
    "[voice: Tom] And you?\n\n"
    "The narrator goes on here.</pre>"
    "<p>Why to the blank line and not the mark's line alone: books and text files wrap a paragraph over several "
    "lines, and a mark on its first line must voice all of it. Names are matched without regard to case; a "
    "name the library does not hold is read by the default voice, with a note in the status bar.</p>"
    "<h3>Export queue</h3>"
    "<p>File ▸ Export audio… queues the text (or the selection, or some of its chapters) for export and returns "
    "at once; the Export queue panel shows each job's progress and the time left, and pauses, resumes, "
    "cancels, reorders and removes jobs. Exports run in the background while you read and edit, and go on "
    "where they stopped after Orator is closed or crashes.</p>"
)


PRONUNCIATION_HELP = (
    "<h3>Pronunciation</h3>"
    "<p><i>Tools ▸ Pronunciation…</i> holds rules for how words are said: find a whole word (or a regular "
    "expression, whose groups the replacement may use as <code>\\1</code>), say something else instead, with or "
    "without matching case, for every voice or one voice. Rules apply from the top down, to what is spoken only: "
    "the text, its highlighting and subtitles stay as written. Orator starts with a few (e.g., i.e., etc., vs.); "
    "edit, switch off or remove them. <i>Try</i> shows what a sentence is said as. The rules are kept in "
    "<code>pronunciation.json</code> in the data folder, and exports and the command line use them too.</p>"
)


MODELS_HELP = (
    "<h3>Models</h3>"
    "<p><i>Help ▸ Download models…</i> opens the Welcome dialog again: download a model, or use a model folder "
    "you have. A model that is not on this computer is downloaded when first needed; the status bar shows its "
    "progress, with <i>Stop download</i>, and says so when a load fails.</p>"
)


def help_html(window) -> str:
    """The shortcuts of every action of ``window`` that has one, then how voice marks and pronunciation work."""
    rows = []
    for act in window.actions():
        keys = act.shortcut().toString(QKeySequence.SequenceFormat.NativeText)
        if keys:
            rows.append(f"<tr><td>{html.escape(_menu_text(act.text()))}</td><td><b>{keys}</b></td></tr>")
    return ("<h3>Keyboard shortcuts</h3><table cellspacing='4'>" + "".join(rows) + "</table>"
            "<p>Tab moves between the text, the voice list and the other controls. "
            "While reading, double-click a sentence to read on from there.</p>" + READING_HELP + VOICE_MARKS_HELP
            + PRONUNCIATION_HELP + MODELS_HELP)


def _menu_text(text: str) -> str:
    """A menu text as shown: "&&" is a literal "&", any other "&" marks the mnemonic."""
    return "&".join(part.replace("&", "") for part in text.split("&&"))


def _show_help(window) -> None:
    QMessageBox.information(window, "Keyboard shortcuts and voice marks", help_html(window))


def _open_dialog(window) -> None:
    path, _ = QFileDialog.getOpenFileName(window, "Open a document", str(window.settings.start_folder()), OPEN_FILTER)
    if path:
        window.open_path(Path(path))


def _voiceover_dialog(window) -> None:
    path, _ = QFileDialog.getOpenFileName(window, "Open subtitles for a voiceover", "", "Subtitles (*.srt *.vtt)")
    if path and window.voiceover_panel.open_subtitles(Path(path)):
        window.voiceover_dock.show()


def _set_speed(window, value: float) -> None:
    window.settings.speed = round(value, 2)
    window.settings.save()
    window.worker.speed = window.settings.speed
    window.reader.restart_sentence()  # what the player holds was made at the old speed


def pronunciation_dialog(window) -> None:
    """Edit the rules; saved and used at once when the dialog is saved."""
    names = list(dict.fromkeys([*window.library.names(), *window.preset_speakers()]))
    dialog = PronunciationDialog(window.pronunciation, names, window)
    if dialog.exec():
        window.set_pronunciation(dialog.lexicon())


def _settings_dialog(window) -> None:
    voices = list(dict.fromkeys([*window.library.names(), *window.preset_speakers()]))
    dialog = SettingsDialog(window.settings, window, in_use=window.worker.engine_in_use(), voices=voices,
                            plan=window.worker.plan_in_use())
    if dialog.exec():
        changed = dialog.apply()
        window.settings.save()
        # from the next reading and the next export job on
        window.reader.segment_chars = window.exports.runner.segment_chars = window.settings.segment_chars
        window.reader.reading_policy = window.exports.runner.reading_policy = window.settings.reading_policy()
        window.reader.cast = window.settings.reading_cast()
        if changed:
            window.voices.reload_models()


def _welcome_dialog(window) -> None:
    """The first-run dialog again; models it downloaded or took from a folder are loaded at once."""
    before = dict(window.settings.checkpoints)
    FirstRunDialog(window.settings, parent=window).exec()
    if window.settings.checkpoints != before:
        window.voices.reload_models()
