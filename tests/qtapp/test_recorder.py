"""MicRecorder and the clone dialog's Record/Stop with a fake ``sounddevice`` input stream."""

from __future__ import annotations

import numpy as np
import pytest
from PySide6.QtWidgets import QMessageBox

from qtapp.dialogs.voice_dialogs import CloneVoiceDialog
from qtapp.recorder import MAX_RECORD_S, RECORD_RATE, MicRecorder
from tests.qtapp.fake_stream import FakeStream

BLOCK = 480


class FakeMicrophone:
    """Stands in for ``sounddevice``: ``InputStream`` plus ``speak(signal)`` to feed its callback."""

    def __init__(self):
        self.streams: list[FakeStream] = []

    def InputStream(self, **kwargs):  # noqa: N802 - mirrors sounddevice's class name
        stream = FakeStream(**kwargs)
        self.streams.append(stream)
        return stream

    def speak(self, signal: np.ndarray) -> None:
        stream = self.streams[-1]
        for start in range(0, len(signal), BLOCK):
            block = signal[start:start + BLOCK].reshape(-1, 1).copy()  # [frames, 1] like PortAudio
            stream.callback(block, len(block), None, None)


def tone(seconds: float, frequency: float = 220.0, amplitude: float = 0.5) -> np.ndarray:
    t = np.arange(int(seconds * RECORD_RATE)) / RECORD_RATE
    return (amplitude * np.sin(2 * np.pi * frequency * t)).astype(np.float32)


def test_recorder_opens_one_mono_stream_and_returns_what_it_heard():
    mic = FakeMicrophone()
    recorder = MicRecorder(mic)
    recorder.start()
    stream = mic.streams[0]
    assert stream.started and stream.kwargs["channels"] == 1 and stream.kwargs["samplerate"] == RECORD_RATE
    signal = tone(1.3)
    mic.speak(signal)
    assert recorder.seconds == pytest.approx(1.3)
    assert recorder.level() == pytest.approx(0.5, abs=0.01)
    np.testing.assert_array_equal(recorder.stop(), signal)
    assert stream.closed and not recorder.recording


def test_recorder_stops_filling_at_its_cap():
    mic = FakeMicrophone()
    recorder = MicRecorder(mic, max_seconds=0.5)
    recorder.start()
    signal = tone(0.8)
    mic.speak(signal)
    assert recorder.full
    np.testing.assert_array_equal(recorder.stop(), signal[:RECORD_RATE // 2])


def test_dialog_records_into_the_trim_and_clone_flow(qtbot):
    mic = FakeMicrophone()
    dialog = CloneVoiceDialog(sd_module=mic)
    qtbot.addWidget(dialog)
    dialog.record_button.click()
    assert dialog.recording and dialog.record_button.text() == "Stop"
    signal = tone(2.0)
    mic.speak(signal)
    qtbot.waitUntil(lambda: dialog.level_meter.value() == 50, timeout=2000)
    assert "2.0 s" in dialog.file_field.text()
    dialog.record_button.click()
    assert not dialog.recording and dialog.record_button.text() == "Record"
    assert dialog.trim_end.value() == pytest.approx(2.0)
    kept, rate = dialog.trimmed_audio()
    assert rate == RECORD_RATE
    np.testing.assert_array_equal(kept, signal)
    dialog.name_field.setText("Me")
    dialog.transcript.setPlainText("Hello there.")
    dialog.accept()
    voice = dialog.created_voice
    assert voice.kind == "clone" and voice.ref_text == "Hello there."
    assert len(voice.ref_audio) == pytest.approx(2 * 24000, abs=10)  # resampled to 24 kHz


def test_dialog_stops_by_itself_at_the_cap(qtbot):
    mic = FakeMicrophone()
    dialog = CloneVoiceDialog(sd_module=mic)
    qtbot.addWidget(dialog)
    dialog.start_recording()
    mic.speak(np.full(int((MAX_RECORD_S + 1) * RECORD_RATE), 0.1, dtype=np.float32))
    qtbot.waitUntil(lambda: not dialog.recording, timeout=2000)
    assert mic.streams[0].closed
    assert dialog.trim_end.value() == pytest.approx(MAX_RECORD_S)


def test_no_input_device_is_reported(qtbot, monkeypatch):
    class NoMicrophone:
        def InputStream(self, **kwargs):  # noqa: N802
            raise RuntimeError("Error querying device -1")

    warnings = []
    monkeypatch.setattr(QMessageBox, "warning", lambda *a: warnings.append(a[-1]))
    dialog = CloneVoiceDialog(sd_module=NoMicrophone())
    qtbot.addWidget(dialog)
    dialog.record_button.click()
    assert not dialog.recording and dialog.record_button.text() == "Record"
    assert "Error querying device" in warnings[0]


def test_closing_while_recording_releases_the_microphone(qtbot):
    mic = FakeMicrophone()
    dialog = CloneVoiceDialog(sd_module=mic)
    qtbot.addWidget(dialog)
    dialog.start_recording()
    mic.speak(tone(0.2))
    dialog.reject()
    assert mic.streams[0].closed and not dialog.recording
