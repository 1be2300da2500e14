"""Every label with a mnemonic ("&Write to:") has a buddy: without one Qt shows the "&" as it is and Alt+letter
goes nowhere."""

from __future__ import annotations

import re

import pytest
from PySide6.QtCore import Qt
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QLabel

from qtapp.export_requests import open_export_dialog

MNEMONIC = re.compile(r"(?<!&)&(?!&)\w")


def labels_without_buddy(dialog) -> list[str]:
    return [label.text() for label in dialog.findChildren(QLabel)
            if label.textFormat() != Qt.TextFormat.RichText and MNEMONIC.search(label.text()) and label.buddy() is None]


def test_the_export_dialog_shows_no_literal_ampersand(qtbot, open_window):
    window = open_window(loaded=True)
    window.editor.setPlainText("A text to export.")
    dialog = open_export_dialog(window).dialog
    assert labels_without_buddy(dialog) == []
    write = next(label for label in dialog.findChildren(QLabel) if "Write to" in label.text())
    assert write.buddy() is dialog.path_field
    dialog.activateWindow()
    qtbot.waitUntil(dialog.isActiveWindow, timeout=2000)
    QTest.keyClick(dialog, Qt.Key.Key_W, Qt.KeyboardModifier.AltModifier)
    assert dialog.focusWidget() is dialog.path_field
    dialog.reject()


@pytest.mark.parametrize("make", ["settings", "preset", "design", "clone"])
def test_other_dialogs_have_no_label_without_its_buddy(qtbot, open_window, make):
    from qtapp.dialogs.settings_dialog import SettingsDialog
    from qtapp.dialogs.voice_dialogs import CloneVoiceDialog, DesignVoiceDialog, PresetVoiceDialog

    window = open_window(show=False)
    dialog = {"settings": lambda: SettingsDialog(window.settings, window),
              "preset": lambda: PresetVoiceDialog(["aiden"], window),
              "design": lambda: DesignVoiceDialog(window),
              "clone": lambda: CloneVoiceDialog(window)}[make]()
    assert labels_without_buddy(dialog) == []
