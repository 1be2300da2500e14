"""The Export dialog's casting and loudness: quoted dialogue in the dialogue voice, a named character in theirs,
the narration in the default voice, each span its own segment; the files brought to the audiobook preset; and the
loudness the files reached shown on the job's row, in its tooltip and in the status bar."""

from __future__ import annotations

import math
import re

import numpy as np
import soundfile
from PySide6.QtCore import Qt
from PySide6.QtTest import QTest

from engine import Voice
from engine.production.export_jobs import DONE
from qtapp.export_panel import PROGRESS
from qtapp.export_requests import open_export_dialog

SCENE = 'Chapter 1\n\n"You came," said Jane, "at last." The fire was low.\n\n"Sit down," said Tom.\n'


def test_a_cast_export_speaks_each_span_in_its_voice_and_reports_its_loudness(qtbot, open_window, tmp_path):
    window = open_window(loaded=True)
    window.editor.setPlainText(SCENE)
    request = open_export_dialog(window)
    dialog = request.dialog
    dialog.format.setCurrentIndex(dialog.format.findData("flac"))
    dialog.path_field.setText(str(tmp_path / "scene.flac"))
    dialog.voice.setCurrentText("vivian")
    for widget in (dialog.loudness, dialog.casting.dialogue, dialog.casting.characters):
        assert widget.accessibleName()
    dialog.loudness.setCurrentIndex(dialog.loudness.findData("audiobook"))
    dialog.casting.dialogue.setCurrentText("aiden")
    dialog.casting.characters.setText("Jane=ryan")
    QTest.keyClick(dialog, Qt.Key.Key_Return)
    assert not dialog.isVisible()
    [job] = window.exports.jobs
    assert (job.loudness, job.dialogue_voice, job.cast) == ("audiobook", "aiden", [["Jane", "ryan"]])
    qtbot.waitUntil(lambda: window.exports.queue.get(job.id).state == DONE, timeout=20_000)

    said = {}
    for name in ("aiden", "ryan", "vivian"):
        for text, voice in window.worker.engine_for(Voice.preset(name)).spoken:
            said[text] = voice.speaker
    assert said == {"Chapter 1": "vivian", '"You came,"': "ryan", "said Jane,": "vivian", '"at last."': "ryan",
                    "The fire was low.": "vivian", '"Sit down,"': "aiden", "said Tom.": "vivian"}

    audio, rate = soundfile.read(tmp_path / "scene.flac", dtype="float64")
    rms = 10 * math.log10(np.mean(audio ** 2))
    assert -23.0 <= rms <= -18.0 and np.max(np.abs(audio)) <= 10 ** (-3 / 20)
    done = window.exports.queue.get(job.id)
    reported = re.match(r"loudness RMS (-?\d+\.\d) dB, ", done.levels)
    assert reported and abs(float(reported.group(1)) - rms) <= 0.1, done.levels
    assert "(target RMS -23 to -18 dB, -3 dBTP)" in done.levels
    row = window.export_panel.list.topLevelItem(0)
    assert done.levels in row.text(PROGRESS) and done.levels in row.toolTip(PROGRESS)
    assert done.levels in window.statusBar().currentMessage()


def test_a_cast_that_does_not_read_keeps_the_dialog_open(qtbot, open_window, tmp_path):
    window = open_window(loaded=True)
    window.editor.setPlainText(SCENE)
    dialog = open_export_dialog(window).dialog
    dialog.path_field.setText(str(tmp_path / "scene.m4b"))
    dialog.casting.characters.setText("Jane")
    QTest.keyClick(dialog, Qt.Key.Key_Return)
    assert dialog.isVisible() and "Characters: cast 'Jane': write CHARACTER=VOICE" in dialog.error_label.text()
    assert window.exports.jobs == []
    dialog.reject()
