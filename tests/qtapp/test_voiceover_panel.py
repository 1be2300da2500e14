"""The studio's Voiceover view on the tiny checkpoint: a subtitle file's cues listed, lines spoken on the view's
thread, a new take compared with the earlier one and kept, the takes still there after a restart, and the track
exported from the kept takes; a file that cannot be voiced is refused with a message."""

from __future__ import annotations

import re

import numpy as np
import soundfile as sf

from engine import Voice
from engine.production.voiceover.cues import read_subtitles
from qtapp.null_audio import NullSoundDevice
from qtapp.voiceover_panel import COLUMNS, VoiceoverPanel, project_folder

SRT = ("1\n00:00:00,500 --> 00:00:02,000\nHello there.\n\n"
       "2\n00:00:02,500 --> 00:00:02,700\n[voice: ryan] A line too long for its cue.\n\n"
       "3\n00:00:04,000 --> 00:00:05,500\nCafé at noon.\n")
WAIT_MS = 300_000


def make_panel(qtbot, tiny_engine, messages: list[str]) -> VoiceoverPanel:
    panel = VoiceoverPanel(lambda voice, cancel=None: tiny_engine(), lambda name: Voice.preset(name or "vivian"))
    panel.runner.max_frames = 12
    panel.message.connect(messages.append)
    qtbot.addWidget(panel)
    return panel


def cell(panel: VoiceoverPanel, row: int, column: str) -> str:
    return panel.table.item(row, COLUMNS.index(column)).text()


def test_lines_are_spoken_retaken_kept_and_still_there_after_a_restart(qtbot, tiny_engine, tmp_path):
    source = tmp_path / "film.srt"
    source.write_text(SRT, encoding="utf-8")
    messages: list[str] = []
    panel = make_panel(qtbot, tiny_engine, messages)
    assert panel.open_subtitles(source)
    assert panel.table.rowCount() == 3
    assert [cell(panel, row, "Voice") for row in range(3)] == ["default", "ryan", "default"]
    assert [cell(panel, row, "Fit") for row in range(3)] == ["—", "—", "—"]

    panel.speak_missing()
    qtbot.waitUntil(lambda: not panel.busy, timeout=WAIT_MS)
    assert [cell(panel, row, "Takes") for row in range(3)] == ["1", "1", "1"]
    assert "over" in cell(panel, 1, "Fit")  # 0.2 s cannot hold that line, even sped up

    panel.table.selectRow(1)
    panel.new_take()
    qtbot.waitUntil(lambda: not panel.busy, timeout=WAIT_MS)
    assert cell(panel, 1, "Takes") == "2"
    assert [panel.takes.itemText(i) for i in range(panel.takes.count())] == ["Take 1 (kept)", "Take 2"]
    state = panel.project.state(2)
    assert state.takes[0].seed != state.takes[1].seed
    panel.keep(2, 2)
    kept = panel.project.audio(2)
    panel.shutdown()

    # a restart: a new view opening the same subtitles finds the project beside them
    again = make_panel(qtbot, tiny_engine, messages)
    assert again.open_subtitles(source)
    assert project_folder(source).is_dir()
    assert again.project.state(2).kept == 2 and len(again.project.state(2).takes) == 2
    assert np.array_equal(again.project.audio(2), kept)
    again.speak_missing()  # nothing is missing: nothing is spoken
    assert not again.busy

    out = tmp_path / "voice.wav"
    assert again.export(out)
    qtbot.waitUntil(lambda: not again.busy, timeout=WAIT_MS)
    track, rate = sf.read(out, dtype="float32")
    assert rate == 24000 and track.size > 4 * rate
    assert any(m.startswith(f"Wrote {out}") and "loudness" in m for m in messages), messages
    start = round(0.5 * rate)
    assert np.max(np.abs(track[:start - round(0.05 * rate)])) < 1e-3 < np.max(np.abs(track[start:start + 2400]))
    again.shutdown()


def test_an_export_keeps_the_kept_takes_and_speaks_only_the_cues_without_one(qtbot, tiny_engine, tmp_path,
                                                                              monkeypatch):
    from PySide6.QtWidgets import QFileDialog

    source = tmp_path / "film.srt"
    source.write_text(SRT, encoding="utf-8")
    messages: list[str] = []
    panel = make_panel(qtbot, tiny_engine, messages)
    assert panel.open_subtitles(source)
    panel.new_take(2)
    qtbot.waitUntil(lambda: not panel.busy, timeout=WAIT_MS)
    kept = panel.project.audio(2)

    out = tmp_path / "voice.flac"
    # the track's loudness and rate as the view offers them; the voiceover's default is web and podcast, 24 kHz
    assert (panel.loudness.currentData(), panel.sample_rate.currentData()) == ("podcast", 24000)
    panel.loudness.setCurrentIndex(panel.loudness.findData("broadcast"))
    panel.sample_rate.setCurrentIndex(panel.sample_rate.findData(48000))
    monkeypatch.setattr(QFileDialog, "getSaveFileName", lambda *args, **kwargs: (str(out), ""))
    panel.export_button.click()
    qtbot.waitUntil(lambda: out.exists() and not panel.busy, timeout=WAIT_MS)
    # cues 1 and 3 were spoken once each, as their kept takes; cue 2 kept its one take, unchanged
    assert [len(panel.project.state(n).takes) for n in (1, 2, 3)] == [1, 1, 1]
    assert all(panel.project.state(n).kept == 1 for n in (1, 2, 3))
    assert np.array_equal(panel.project.audio(2), kept)
    track, rate = sf.read(out, dtype="float32")
    assert rate == 48000
    # the subtitles with the timings the speech has, beside the track, each cue under its own number
    timed = read_subtitles(out.with_suffix(".srt")).cues
    assert [c.text for c in timed] == [c.text for c in panel.project.cues]
    assert re.findall(r"^(\d+)\n\d\d:", out.with_suffix(".srt").read_text(encoding="utf-8"), re.MULTILINE) == [
        "1", "2", "3"]
    assert abs(timed[0].start_s - 0.5) < 0.05 and timed[1].start_s >= 2.5 and timed[2].start_s >= 4.0
    assert any(m.startswith(f"Wrote {out}") and "target -23 LUFS" in m for m in messages), messages
    panel.shutdown()


def test_an_export_whose_missing_line_cannot_be_spoken_writes_nothing(qtbot, tiny_engine, tmp_path):
    source = tmp_path / "film.srt"
    source.write_text(SRT, encoding="utf-8")
    messages: list[str] = []
    panel = VoiceoverPanel(lambda voice, cancel=None: tiny_engine(), lambda name: Voice.preset(name or "nobody"))
    panel.message.connect(messages.append)
    qtbot.addWidget(panel)
    assert panel.open_subtitles(source)
    out = tmp_path / "voice.wav"
    assert panel.export(out)
    qtbot.waitUntil(lambda: not panel.busy and messages[-1].startswith("The track was not exported"),
                    timeout=WAIT_MS)
    assert "nobody" in " ".join(messages)
    assert not out.exists()
    panel.shutdown()


class RecordingDevice(NullSoundDevice):
    """The null output, keeping what the player hands the device, as a listener would hear it."""

    def __init__(self):
        super().__init__()
        self.heard: list[np.ndarray] = []

    def OutputStream(self, **kwargs):  # noqa: N802 - sounddevice's name
        callback = kwargs["callback"]

        def recording(out, frames, time, status):
            callback(out, frames, time, status)
            self.heard.append(out[:, 0].copy())

        return super().OutputStream(**{**kwargs, "callback": recording})

    def take_heard(self) -> np.ndarray:
        heard = np.trim_zeros(np.concatenate(self.heard)) if self.heard else np.zeros(0, np.float32)
        self.heard.clear()
        return heard


def test_each_take_of_a_line_is_played_to_compare_them(qtbot, tiny_engine, tmp_path):
    from qtapp.player import Player

    source = tmp_path / "film.srt"
    source.write_text(SRT, encoding="utf-8")
    device = RecordingDevice()
    player = Player(sd_module=device)
    panel = VoiceoverPanel(lambda voice, cancel=None: tiny_engine(), lambda name: Voice.preset(name or "vivian"),
                           player)
    panel.runner.max_frames = 12
    qtbot.addWidget(panel)
    assert panel.open_subtitles(source)
    for _ in range(2):
        panel.new_take(1)
        qtbot.waitUntil(lambda: not panel.busy, timeout=WAIT_MS)
    takes = [panel.project.audio(1, take_id) for take_id in (1, 2)]
    assert not np.array_equal(takes[0], takes[1])
    panel.table.selectRow(0)
    for index, take in enumerate(takes):
        panel.takes.setCurrentIndex(index)  # the view's list of the cue's takes, then Play
        with qtbot.waitSignal(player.finished, timeout=WAIT_MS):
            panel.play_button.click()
        assert np.array_equal(device.take_heard(), np.trim_zeros(take))
    panel.takes.setCurrentIndex(1)
    panel.keep_button.click()
    assert panel.project.state(1).kept == 2
    panel.shutdown()
    player.close()


def test_lines_are_spoken_with_the_studios_pronunciation_rules(qtbot, tiny_engine, tmp_path):
    import dataclasses

    from engine.production.voiceover.render import speak_line
    from engine.pronunciation import Lexicon, Rule

    source = tmp_path / "film.srt"
    source.write_text(SRT, encoding="utf-8")
    rules = Lexicon((Rule("Hello", "Goodbye"),))
    panel = VoiceoverPanel(lambda voice, cancel=None: tiny_engine(), lambda name: Voice.preset(name or "vivian"),
                           pronunciation=rules)
    panel.runner.max_frames = 12
    qtbot.addWidget(panel)
    assert panel.open_subtitles(source)
    panel.new_take(1)
    qtbot.waitUntil(lambda: not panel.busy, timeout=WAIT_MS)
    take = panel.project.state(1).takes[0]
    engine = tiny_engine()
    sampling = dataclasses.replace(engine.defaults, seed=take.seed)

    def spoken(pronunciation) -> np.ndarray:
        return speak_line(engine, "Hello there.", Voice.preset("vivian"), sampling, 12, pronunciation)

    with_rules, as_written = spoken(rules), spoken(None)
    kept = panel.project.audio(1)
    assert kept.size == with_rules.size and np.allclose(kept, with_rules, atol=1e-6)  # 24-bit FLAC
    assert kept.size != as_written.size or not np.allclose(kept, as_written, atol=1e-3)
    panel.shutdown()


def test_a_file_that_cannot_be_voiced_is_refused_with_a_message(qtbot, tiny_engine, tmp_path):
    source = tmp_path / "broken.srt"
    source.write_bytes(bytes(range(256)) * 16)
    messages: list[str] = []
    panel = make_panel(qtbot, tiny_engine, messages)
    assert not panel.open_subtitles(source)
    assert panel.project is None and messages and "binary" in messages[-1]
    assert not project_folder(source).exists()
    assert not panel.export(tmp_path / "voice.wav")
    panel.shutdown()


def test_the_window_opens_subtitles_into_its_voiceover_view(open_window, monkeypatch, tmp_path):
    from PySide6.QtWidgets import QFileDialog

    source = tmp_path / "film.srt"
    source.write_text(SRT, encoding="utf-8")
    window = open_window(loaded=True)
    assert not window.voiceover_dock.isVisible()
    monkeypatch.setattr(QFileDialog, "getOpenFileName", lambda *args, **kwargs: (str(source), ""))
    opener = next(a for a in window.actions() if a.text() == "Open subtitles for &voiceover…")
    opener.trigger()
    assert window.voiceover_dock.isVisible()
    assert window.voiceover_panel.table.rowCount() == 3
    assert window.voiceover_panel.status.text().startswith("film.srt: 3 cues, 0 with a kept take")
