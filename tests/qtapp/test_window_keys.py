"""The window's keys wherever the focus is: a one-line field (Search voices…, Find) must not swallow a menu's
shortcut that it also binds (on X11 a QLineEdit takes Ctrl+E as the end of the line), while the keys of text
editing (undo, select all, …) still edit the field."""

from __future__ import annotations

import pytest
from PySide6.QtCore import QEvent, Qt
from PySide6.QtGui import QKeySequence
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QLineEdit


class X11LineEdit(QLineEdit):
    """A QLineEdit as X11's key theme makes it: it claims Ctrl+E (move to the end of the line) before any
    shortcut, as the offscreen platform of the tests does not."""

    def event(self, event) -> bool:
        if event.type() == QEvent.Type.ShortcutOverride and \
                QKeySequence(event.keyCombination()) == QKeySequence("Ctrl+E"):
            event.accept()
            return True
        return super().event(event)


@pytest.fixture
def x11_fields(monkeypatch):
    """The window's one-line fields made as on X11 (the platform the issue was met on)."""
    monkeypatch.setattr("qtapp.library_panel.QLineEdit", X11LineEdit)
    monkeypatch.setattr("qtapp.editor.QLineEdit", X11LineEdit)


def test_ctrl_e_exports_from_the_voice_search_and_the_find_field(qtbot, x11_fields, open_window):
    window = open_window(loaded=True)
    window.editor.setPlainText("Something to export.")
    window.activateWindow()
    window.find_bar.open_bar()
    for field in (window.library_panel.search, window.find_bar.field):
        assert isinstance(field, X11LineEdit)
        field.setFocus()
        qtbot.waitUntil(field.hasFocus, timeout=2000)
        QTest.keyClicks(field, "viv")
        QTest.keyClick(field, Qt.Key.Key_E, Qt.KeyboardModifier.ControlModifier)
        request = window.export_request
        assert request is not None and request.dialog.isVisible(), field.placeholderText()
        assert field.text().endswith("viv")
        request.dialog.reject()
        window.export_request = None


def test_the_edit_keys_still_edit_the_search_field(qtbot, open_window):
    window = open_window(loaded=True)
    window.editor.setPlainText("The editor's own text.")
    window.activateWindow()
    search = window.library_panel.search
    search.setFocus()
    qtbot.waitUntil(search.hasFocus, timeout=2000)
    QTest.keyClicks(search, "aiden")
    QTest.keyClick(search, Qt.Key.Key_A, Qt.KeyboardModifier.ControlModifier)  # select all: the field's text
    assert search.selectedText() == "aiden"
    QTest.keyClick(search, Qt.Key.Key_Z, Qt.KeyboardModifier.ControlModifier)  # undo: the field's typing
    assert search.text() != "aiden" and window.editor.toPlainText() == "The editor's own text."
