"""The voice library: files on disk, names, rename/delete/import/export, the list model and panel,
and the dialogs that create voices."""

import numpy as np
import pytest
import soundfile
from PySide6.QtCore import Qt
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QFileDialog, QInputDialog, QMessageBox

from engine import Voice
from engine.voices.library import VoiceLibrary
from engine.voices.library_errors import LibraryError
from engine.voices.library_folder import LOCK_FILE
from engine.voices.library_names import checked_name
from qtapp.dialogs.voice_dialogs import CloneVoiceDialog, DesignVoiceDialog, PresetVoiceDialog
from qtapp.library_panel import LibraryPanel
from qtapp.settings import Settings


@pytest.fixture
def library():
    return VoiceLibrary(Settings().library_dir)


def tone(seconds=2.0, rate=16000):
    t = np.arange(int(seconds * rate)) / rate
    return (0.3 * np.sin(2 * np.pi * 220 * t)).astype(np.float32), rate


def test_add_list_get_and_restart(library, isolated_data_dir):
    assert library.add(Voice.preset("ryan", "english", "calm"), "Narrator") == "Narrator"
    assert library.add(Voice.design("a bright young voice"), "Narrator") == "Narrator (2)"
    library.add(Voice.clone(tone(), ref_text="A test tone."), "Tone")
    reopened = VoiceLibrary(Settings().library_dir)  # as after a restart
    entries = {e.name: e for e in reopened.entries()}
    assert set(entries) == {"Narrator", "Narrator (2)", "Tone"}
    assert entries["Narrator"].kind == "preset" and "calm" in entries["Narrator"].summary
    assert entries["Narrator (2)"].kind == "design"
    clone = reopened.load("Tone")
    assert clone.kind == "clone" and clone.ref_text == "A test tone." and clone.name == "Tone"
    hidden = [p.name for p in (isolated_data_dir / "voices").iterdir() if p.name.startswith(".")]
    assert hidden == [LOCK_FILE]  # no temporary file left; the folder's lock file stays


def test_rename_delete_and_errors(library):
    library.add(Voice.preset("vivian"), "Viv")
    library.add(Voice.preset("serena"), "Serena")
    assert library.rename("Viv", "Vivian") == "Vivian"
    assert library.names() == ["Serena", "Vivian"]
    assert library.load("Vivian").name == "Vivian"
    with pytest.raises(LibraryError, match="already exists"):
        library.rename("Vivian", "Serena")
    library.delete("Serena")
    assert library.names() == ["Vivian"]
    with pytest.raises(LibraryError, match="no voice called"):
        library.load("Serena")
    for bad in ("", "  ", "a/b", ".hidden", "x" * 100):
        with pytest.raises(LibraryError):
            checked_name(bad)


def test_import_export_and_corrupt_files(library, tmp_path):
    library.add(Voice.preset("eric", "chinese"), "Eric")
    exported = tmp_path / "out" / "eric.voice"
    library.export_file("Eric", exported)
    library.delete("Eric")
    assert library.import_file(exported) == "Eric"
    assert library.load("Eric").speaker == "eric"
    junk = tmp_path / "junk.voice"
    junk.write_bytes(b"not a voice")
    with pytest.raises(LibraryError, match="not a voice file"):
        library.import_file(junk)
    (library.folder / "Broken.voice").write_bytes(b"garbage")
    assert library.names() == ["Broken", "Eric"]
    broken = library.entries()[0]
    assert not broken.readable and "not a readable voice file" in broken.error


@pytest.fixture
def panel(qtbot, library):
    library.add(Voice.preset("aiden"), "Aiden")
    library.add(Voice.design("an old sailor with a rough voice"), "Sailor")
    library.add(Voice.preset("sohee", "korean"), "Sohee")
    widget = LibraryPanel(library, default_name="Aiden")
    qtbot.addWidget(widget)
    return widget


def visible_names(panel):
    return [panel.proxy.index(r, 0).data(Qt.ItemDataRole.UserRole) for r in range(panel.proxy.rowCount())]


def test_search_filters_by_name_kind_and_language(panel):
    assert visible_names(panel) == ["Aiden", "Sailor", "Sohee"]
    panel.search.setText("korean")
    assert visible_names(panel) == ["Sohee"]
    panel.search.setText("designed sailor")
    assert visible_names(panel) == ["Sailor"]
    panel.search.setText("")
    assert len(visible_names(panel)) == 3


def test_keep_only_for_designed_voices_and_signals(panel, qtbot):
    panel.select("Aiden")
    assert not panel.keep_button.isEnabled() and panel.preview_button.isEnabled()
    with qtbot.waitSignal(panel.preview_requested) as preview:
        panel.preview_button.click()
    assert preview.args == ["Aiden"]
    panel.select("Sailor")
    assert panel.keep_button.isEnabled()
    with qtbot.waitSignal(panel.keep_requested) as keep:
        panel.keep_button.click()
    assert keep.args == ["Sailor"]
    with qtbot.waitSignal(panel.default_changed) as default:
        panel.default_button.click()
    assert default.args == ["Sailor"] and "★" in panel.proxy.index(1, 0).data()


def test_delete_asks_first(panel, monkeypatch):
    panel.select("Sohee")
    monkeypatch.setattr(QMessageBox, "question", lambda *a, **k: QMessageBox.StandardButton.No)
    panel.delete()
    assert "Sohee" in panel.library.names()
    monkeypatch.setattr(QMessageBox, "question", lambda *a, **k: QMessageBox.StandardButton.Yes)
    panel.delete()
    assert panel.library.names() == ["Aiden", "Sailor"]


def test_rename_keeps_the_default(panel, monkeypatch, qtbot):
    panel.select("Aiden")
    monkeypatch.setattr(QInputDialog, "getText", lambda *a, **k: ("Aiden Prime", True))
    with qtbot.waitSignal(panel.default_changed) as default:
        panel.rename()
    assert default.args == ["Aiden Prime"]
    assert panel.selected_name() == "Aiden Prime"
    assert panel.library.names() == ["Aiden Prime", "Sailor", "Sohee"]


def test_preset_dialog_builds_a_preset(qtbot):
    dialog = PresetVoiceDialog(["aiden", "uncle_fu"])
    qtbot.addWidget(dialog)
    assert [dialog.speaker.itemText(i) for i in range(dialog.speaker.count())] == ["aiden", "uncle_fu"]
    dialog.speaker.setCurrentText("uncle_fu")
    dialog.language.setCurrentText("chinese")
    dialog.instruct.setText("slow and warm")
    dialog.accept()
    voice = dialog.created_voice
    assert (voice.kind, voice.speaker, voice.language, voice.instruct, voice.name) == (
        "preset", "uncle_fu", "chinese", "slow and warm", "Uncle Fu")


def test_choosing_a_speaker_keeps_the_name_the_user_typed(qtbot):
    dialog = PresetVoiceDialog(["aiden", "uncle_fu", "vivian"])
    qtbot.addWidget(dialog)
    dialog.speaker.setCurrentText("uncle_fu")
    assert dialog.name() == "Uncle Fu"  # a suggestion while nothing is typed
    dialog.name_field.selectAll()
    QTest.keyClicks(dialog.name_field, "Narrator")
    dialog.speaker.setCurrentText("vivian")
    assert dialog.name() == "Narrator"
    dialog.name_field.clear()  # an emptied field takes suggestions again
    dialog.speaker.setCurrentText("aiden")
    assert dialog.name() == "Aiden"
    dialog.accept()
    assert (dialog.created_voice.speaker, dialog.created_voice.name) == ("aiden", "Aiden")


def test_add_preset_offers_the_speakers_of_the_model_in_use(qtbot, library, monkeypatch):
    offered = [["first", "second"]]
    panel = LibraryPanel(library, preset_speakers=lambda: offered[0])
    qtbot.addWidget(panel)
    seen = []

    def exec_(dialog):
        seen.append([dialog.speaker.itemText(i) for i in range(dialog.speaker.count())])
        dialog.speaker.setCurrentText(seen[-1][-1])
        dialog.accept()
        return True

    monkeypatch.setattr(PresetVoiceDialog, "exec", exec_)
    assert panel.add_preset() == "Second"
    offered[0] = ["third"]  # a model loaded since: the next dialog asks again
    assert panel.add_preset() == "Third"
    assert seen == [["first", "second"], ["third"]]
    assert library.load("Second").speaker == "second"


def test_design_dialog_needs_a_description(qtbot, monkeypatch):
    warnings = []
    monkeypatch.setattr(QMessageBox, "warning", lambda *a: warnings.append(a[-1]))
    dialog = DesignVoiceDialog()
    qtbot.addWidget(dialog)
    dialog.name_field.setText("Calm")
    dialog.accept()
    assert dialog.created_voice is None and warnings  # stays open with a message
    dialog.description.setPlainText("a calm, low male voice")
    dialog.accept()
    assert dialog.created_voice.instruct == "a calm, low male voice"


def test_clone_dialog_trims_the_recording(qtbot, tmp_path, monkeypatch):
    samples, rate = tone(4.0)
    path = tmp_path / "me.wav"
    soundfile.write(path, samples, rate)
    dialog = CloneVoiceDialog()
    qtbot.addWidget(dialog)
    dialog.set_audio_file(path)
    assert dialog.name() == "me" and dialog.trim_end.value() == pytest.approx(4.0)
    dialog.trim_start.setValue(1.0)
    dialog.trim_end.setValue(3.0)
    kept, kept_rate = dialog.trimmed_audio()
    assert kept_rate == 24000 and len(kept) == 2 * 24000  # read at the rate clones take
    dialog.transcript.setPlainText("Hello there.")
    dialog.accept()
    voice = dialog.created_voice
    assert voice.kind == "clone" and voice.ref_text == "Hello there."
    assert len(voice.ref_audio) == pytest.approx(2 * 24000, abs=10)  # resampled to 24 kHz
    warnings = []
    monkeypatch.setattr(QMessageBox, "warning", lambda *a: warnings.append(a[-1]))
    dialog.trim_end.setValue(1.2)
    dialog.created_voice = None
    dialog.accept()
    assert dialog.created_voice is None and "half a second" in warnings[0]


def test_clone_dialog_refuses_a_flac_bomb_and_a_1_hz_file(qtbot, tmp_path, monkeypatch):
    bomb = tmp_path / "bomb.flac"
    block = np.full((1 << 16, 8), 0.5, dtype=np.float32)
    with soundfile.SoundFile(bomb, "w", 48000, 8, subtype="PCM_16", format="FLAC") as f:
        for _ in range(48000 * 700 // len(block)):  # 700 s of 8 channels: 1 GB of float32, 0.3 MB on disk
            f.write(block)
    slow = tmp_path / "slow.wav"
    soundfile.write(slow, np.zeros(8000, dtype=np.float32), 8000)
    slow.write_bytes(slow.read_bytes()[:24] + (1).to_bytes(4, "little") + slow.read_bytes()[28:])  # 1 Hz
    dialog = CloneVoiceDialog()
    qtbot.addWidget(dialog)
    warnings = []
    monkeypatch.setattr(QMessageBox, "warning", lambda *a: warnings.append(a[-1]))
    for path in (bomb, slow):
        monkeypatch.setattr(QFileDialog, "getOpenFileName", lambda *a, p=path: (str(p), ""))
        dialog._browse()
    assert "bomb.flac (48000 Hz, 8 ch) lasts 699" in warnings[0] and "the limit is 600 s" in warnings[0]
    assert "sample rate of 1 Hz" in warnings[1]
    assert dialog._audio is None


def test_an_unreadable_file_is_a_row_that_can_be_deleted(qtbot, library, monkeypatch):
    library.add(Voice.preset("aiden"), "Aiden")
    (library.folder / "Broken.voice").write_bytes(b"garbage")
    widget = LibraryPanel(library)
    qtbot.addWidget(widget)
    messages = []
    widget.message.connect(messages.append)
    widget.refresh()
    assert visible_names(widget) == ["Aiden", "Broken"]
    assert "Broken" in messages[-1] and "cannot be read" in messages[-1]
    row = widget.proxy.index(1, 0)
    assert "unreadable" in row.data() and "not a readable voice file" in row.data(Qt.ItemDataRole.ToolTipRole)
    widget.select("Broken")
    assert widget.delete_button.isEnabled() and not widget.preview_button.isEnabled()
    assert not widget.rename_button.isEnabled() and not widget.default_button.isEnabled()
    monkeypatch.setattr(QMessageBox, "question", lambda *a, **k: QMessageBox.StandardButton.Yes)
    widget.delete()
    assert visible_names(widget) == ["Aiden"] and not (library.folder / "Broken.voice").exists()


def test_tab_leaves_the_design_description(qtbot):
    dialog = DesignVoiceDialog()
    qtbot.addWidget(dialog)
    dialog.show()
    dialog.activateWindow()
    dialog.description.setFocus()
    qtbot.waitUntil(dialog.description.hasFocus, timeout=2000)
    QTest.keyClick(dialog.description, Qt.Key.Key_Tab)
    assert dialog.description.toPlainText() == "" and not dialog.description.hasFocus()
