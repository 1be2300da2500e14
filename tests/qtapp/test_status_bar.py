"""The status bar as a user reads it: messages never run into the word count, and the model corner names the
model that speaks, in words ("CustomVoice 0.6B"), not the checkpoint's tags."""

from __future__ import annotations

from PySide6.QtWidgets import QStatusBar

LONG = ("Opened a-document-with-a-very-long-name-that-goes-on-and-on.txt; Play goes on where you stopped, "
        "and this sentence is longer than any status bar is wide.")


def test_a_long_message_ends_before_the_word_count(qtbot, open_window):
    window = open_window(loaded=True)
    window.resize(900, 600)
    window.editor.setPlainText("word " * 1234)
    qtbot.waitUntil(lambda: window.counts_label.text().startswith("1,234 words"), timeout=5000)
    window.show_status(LONG)
    bar = window.statusBar()
    qtbot.waitUntil(lambda: bar.message_label.isVisible() and bar.message_label.width() > 0, timeout=5000)
    message = bar.message_label
    assert message.geometry().right() < window.counts_label.geometry().left()
    assert message.x() + message.contentsRect().right() + 8 < window.counts_label.x()  # with a gap between
    assert message.shown_text().endswith("…") and message.shown_text() != LONG
    assert bar.currentMessage() == LONG and message.toolTip() == LONG  # the whole message is there to read
    assert QStatusBar.currentMessage(bar) == ""  # Qt paints no message of its own under the permanent widgets
    window.show_status("Saved.")
    assert message.shown_text() == "Saved."


def test_model_names_are_words_shared_by_the_studio_and_the_server():
    from engine.core.config import model_title

    assert model_title("voice_design", "0b6") == "VoiceDesign 0.6B"
    assert model_title("custom_voice", "1b7") == "CustomVoice 1.7B"
    assert model_title("base", "0b6") == "Base 0.6B"
    assert model_title("future_type", "2x") == "future_type 2x"  # an unknown tag is shown, not hidden
    assert model_title("", "") == ""


def test_the_model_corner_names_the_model_that_reads(qtbot, fake_sd, monkeypatch, tmp_path):
    """Two models loaded, the clone's last: reading a preset says CustomVoice, reading a clone says Base."""
    import numpy as np

    from engine import Voice
    from qtapp.main_window import MainWindow
    from qtapp.settings import ModelSpec, Settings
    from tests.qtapp.fake_engine import FakeEngine

    engines = {"/preset": FakeEngine("custom_voice"), "/clone": FakeEngine("base")}
    monkeypatch.setattr(ModelSpec, "load_engine", lambda spec: engines[spec.checkpoint])
    settings = Settings.load()
    settings.checkpoints.update(preset="/preset", clone="/clone")
    settings.device, settings.cpu_path = "cpu", "exact"
    window = MainWindow(settings, sd_module=fake_sd)
    qtbot.addWidget(window)
    window.show()
    label = window.model_label
    try:
        qtbot.waitUntil(lambda: label.text().startswith("Model: CustomVoice 0.6B on cpu"), timeout=5000)
        tone = (0.1 * np.sin(np.arange(24000) / 10)).astype(np.float32)
        window.library.add(Voice.clone((tone, 24000), ref_text="A test tone."), "Clony")
        window.voices.ensure_model(window.library.load("Clony"))
        qtbot.waitUntil(lambda: label.text().startswith("Model: Base 0.6B on cpu"), timeout=5000)

        window.editor.setPlainText("Read by a preset speaker.")
        window.read_aloud.play()
        qtbot.waitUntil(lambda: bool(engines["/preset"].stream_threads), timeout=5000)
        qtbot.waitUntil(lambda: label.text().startswith("Model: CustomVoice 0.6B on cpu"), timeout=5000)
        window.reader.stop()

        window.editor.setPlainText("[voice: Clony] Read by the clone.")
        window.read_aloud.play()
        qtbot.waitUntil(lambda: bool(engines["/clone"].stream_threads), timeout=5000)
        qtbot.waitUntil(lambda: label.text().startswith("Model: Base 0.6B on cpu"), timeout=5000)
        assert "0b6" not in label.text() and "_" not in label.text()
    finally:
        window.reader.stop()
        assert window.close()
