"""Tools ▸ Pronunciation…: editing rules in the dialog (mouse-free), trying them, saving them to the data folder,
and their effect on what the worker says and what an export writes; a corrupt file does not stop the studio."""

from __future__ import annotations

import json

import pytest
from PySide6.QtCore import Qt
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QApplication

from engine import Voice
from engine.production.export_jobs import DONE, Job, Snapshot
from engine.pronunciation import Lexicon, Rule, default_lexicon, load_lexicon, save_lexicon
from qtapp.dialogs.pronunciation_dialog import ALL_VOICES, FIND, ON, REGEX, SAY, VOICE, PronunciationDialog
from qtapp.reading import IDLE
from qtapp.settings import Settings


@pytest.fixture
def dialog(qtbot):
    def make(lexicon=None, names=("Ann", "ryan")):
        shown = PronunciationDialog(default_lexicon() if lexicon is None else lexicon, list(names))
        qtbot.addWidget(shown)
        shown.show()
        shown.activateWindow()  # mnemonics (Alt+A ...) reach the active window only
        qtbot.waitUntil(shown.isActiveWindow, timeout=2000)
        return shown
    return make


def set_text(dialog, row, column, text):
    dialog.table.item(row, column).setText(text)


def test_the_shipped_rules_are_listed_and_tried(dialog):
    shown = dialog()
    assert [spec["pattern"] for spec in shown.specs()] == [rule.pattern for rule in default_lexicon().rules]
    shown.try_field.setText("Fruit, e.g. apples.")
    assert shown.try_result.text() == "Fruit, for example apples."
    assert shown.lexicon() == default_lexicon()


def test_adding_editing_moving_and_removing_rules_from_the_keyboard(dialog, qtbot):
    shown = dialog(Lexicon((Rule("apples", "pears"),)))
    table = shown.table
    table.setFocus()
    table.setCurrentCell(0, FIND)
    QTest.keyClick(table, Qt.Key.Key_Insert)  # a new rule below the current one, its pattern being edited
    assert table.rowCount() == 2 and table.currentRow() == 1
    qtbot.waitUntil(lambda: table.state() == table.State.EditingState, timeout=2000)

    QTest.keyClicks(QApplication.focusWidget(), "pears")
    QTest.keyClick(QApplication.focusWidget(), Qt.Key.Key_Return)  # the item view commits it from its event loop
    qtbot.waitUntil(lambda: shown.specs()[1]["pattern"] == "pears", timeout=2000)
    table.setCurrentCell(1, SAY)
    QTest.keyClick(table, Qt.Key.Key_F2)
    QTest.keyClicks(QApplication.focusWidget(), "plums")
    QTest.keyClick(QApplication.focusWidget(), Qt.Key.Key_Return)
    qtbot.waitUntil(lambda: table.state() != table.State.EditingState, timeout=2000)
    shown.try_field.setText("Two apples.")
    assert shown.try_result.text() == "Two plums."  # in order: apples -> pears -> plums
    table.setFocus()
    QTest.keyClick(table, Qt.Key.Key_Up, Qt.KeyboardModifier.ControlModifier)  # move the pears rule up
    assert [s["pattern"] for s in shown.specs()] == ["pears", "apples"] and table.currentRow() == 0
    assert shown.try_result.text() == "Two pears."
    table.setCurrentCell(1, ON)
    QTest.keyClick(table, Qt.Key.Key_Space)  # switches the apples rule off
    assert shown.specs()[1]["enabled"] is False and shown.try_result.text() == "Two apples."
    QTest.keyClick(table, Qt.Key.Key_Delete)  # and removes it
    assert [s["pattern"] for s in shown.specs()] == ["pears"]
    QTest.keyClick(table, Qt.Key.Key_Down, Qt.KeyboardModifier.ControlModifier)  # the last rule: nowhere to go
    assert [s["pattern"] for s in shown.specs()] == ["pears"]
    assert not shown.down_button.isEnabled() and not shown.up_button.isEnabled()


def test_a_regex_rule_with_groups_and_a_voice(dialog):
    shown = dialog(Lexicon())
    shown.add_rule()
    set_text(shown, 0, FIND, r"(\d+)\s?km")
    set_text(shown, 0, SAY, r"\1 kilometres")
    shown.table.item(0, REGEX).setCheckState(Qt.CheckState.Checked)
    set_text(shown, 0, VOICE, "Ann")
    shown.try_field.setText("It is 5km.")
    assert shown.try_result.text() == "It is 5km."  # every voice: the rule is Ann's only
    shown.try_voice.setCurrentText("Ann")
    assert shown.try_result.text() == "It is 5 kilometres."
    assert shown.lexicon().rules == (Rule(r"(\d+)\s?km", r"\1 kilometres", regex=True, voice="Ann"),)
    shown.try_voice.setCurrentText(ALL_VOICES)


def test_a_bad_rule_is_named_and_cannot_be_saved(dialog, qtbot):
    shown = dialog(Lexicon((Rule("a", "b"),)))
    shown.add_rule()
    set_text(shown, 1, FIND, "(unclosed")
    shown.table.item(1, REGEX).setCheckState(Qt.CheckState.Checked)
    assert "rule 2" in shown.error_label.text() and "regular expression" in shown.error_label.text()
    shown.table.setCurrentCell(0, FIND)
    shown.accept()
    assert shown.isVisible() and shown.result() == 0
    assert (shown.table.currentRow(), shown.table.currentColumn()) == (1, FIND)  # the cell at fault
    set_text(shown, 1, FIND, "(closed)")
    assert shown.error_label.text() == ""
    shown.accept()
    assert not shown.isVisible() and shown.result() == 1


def test_hostile_input_in_the_try_field_is_bounded(dialog):
    shown = dialog(Lexicon((Rule(r"(?:a+){10}b", "x", regex=True),)))
    shown.try_field.setText("a" * 5000)
    assert len(shown.try_field.text()) == 1000
    assert "took too long" in shown.try_result.text()


def test_saved_rules_are_used_by_the_worker_and_by_exports(open_window, qtbot, fake_sd, tmp_path):
    window = open_window(loaded=True)
    lexicon = Lexicon((Rule("apples", "pears"),))
    assert window.set_pronunciation(lexicon)
    assert load_lexicon(window.settings.pronunciation_path) == lexicon
    assert window.worker.pronunciation is lexicon
    engine = window.worker.engine_for(Voice.preset("ryan"))
    window.editor.setPlainText("Two apples. Three apples.")
    window.read_aloud.play()

    def heard():
        fake_sd.pump(0.05)
        return window.reader.state == IDLE
    qtbot.waitUntil(heard, timeout=5000)
    assert [text.strip() for text, _ in engine.spoken] == ["Two pears. Three pears."]
    engine.spoken.clear()
    out = tmp_path / "out.wav"
    job = window.exports.add(Job(title="T", output=str(out), format="wav", voice="ryan", source=None,
                                 snapshot="0" * 32, subtitles="srt"), Snapshot("Two apples.", "T"))
    qtbot.waitUntil(lambda: window.exports.queue.get(job.id).state == DONE, timeout=10_000)
    assert [text for text, _ in engine.spoken] == ["Two pears."]
    assert "Two apples." in out.with_suffix(".srt").read_text(encoding="utf-8")  # subtitles as written


def test_the_menu_opens_the_dialog_and_saving_applies_it(open_window, monkeypatch):
    from qtapp import actions

    window = open_window(loaded=True)
    seen = []

    def exec_(self):
        seen.append(self)
        self.add_rule()
        set_text(self, self.table.currentRow(), FIND, "colour")
        set_text(self, self.table.currentRow(), SAY, "color")
        return 1

    monkeypatch.setattr(PronunciationDialog, "exec", exec_)
    [action] = [a for a in window.actions() if a.text() == "&Pronunciation…"]
    action.trigger()
    assert seen and window.pronunciation.apply("The colour.") == "The color."
    assert load_lexicon(window.settings.pronunciation_path) == window.pronunciation
    assert "Pronunciation" in actions.help_html(window)


def test_a_corrupt_rules_file_does_not_stop_the_studio(open_window, isolated_data_dir):
    path = Settings.load().pronunciation_path
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text('{"format": "orator-pronunciation", "version": 1, "rules": [{"pattern": ""}]',
                    encoding="utf-8")
    window = open_window(loaded=True)
    assert window.pronunciation == default_lexicon()
    assert "pronunciation rules could not be read" in window.banner.label.text()
    assert path.read_text(encoding="utf-8").startswith('{"format"')  # left as it was until rules are saved
    save_lexicon(Lexicon(), path)
    assert json.loads(path.read_text(encoding="utf-8"))["rules"] == []


def test_the_studio_starts_with_100000_deep_settings_and_rules_files_and_says_so(open_window, isolated_data_dir):
    path = Settings.load().pronunciation_path
    path.parent.mkdir(parents=True, exist_ok=True)
    deep = "[" * 100_000 + "]" * 100_000
    path.write_text(deep, encoding="utf-8")
    (isolated_data_dir / "settings.json").write_text(deep, encoding="utf-8")
    window = open_window(loaded=True)
    assert window.pronunciation == default_lexicon() and window.settings == Settings()
    shown = window.banner.label.text()
    assert "settings could not be read (the document is nested 100000 levels deep" in shown
    assert "pronunciation rules could not be read" in shown and "nested 100000 levels deep" in shown
