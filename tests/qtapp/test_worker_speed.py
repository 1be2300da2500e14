"""Playback speed in the worker: chunks reach the player faster or slower, at the same pitch, and
each chunk holds only audio of the sentence it is tagged with (so highlighting follows playback)."""

from __future__ import annotations

import numpy as np
import pytest

from engine import Voice
from engine.core.chunks import SAMPLE_RATE
from engine.core.text.segments import split_segments
from qtapp.player import Player
from qtapp.worker import start_worker, stop_worker
from tests.qtapp.fake_engine import FakeEngine

# four paragraphs, so four segments (short sentences of one paragraph would be one)
TEXT = "The first sentence is here.\n\nA second one follows it!\n\nIs there a third?\n\nYes, the fourth."


class WritingPlayer:
    """Records ``write(samples, segment)`` calls, as the reading controller makes them."""

    def __init__(self):
        self.writes: list[tuple[np.ndarray, int]] = []

    def write(self, samples, segment) -> None:
        self.writes.append((np.asarray(samples), segment))

    def audio_of(self, segment: int) -> np.ndarray:
        return np.concatenate([samples for samples, seg in self.writes if seg == segment])


def dominant_frequency(samples: np.ndarray) -> float:
    middle = samples[len(samples) // 4: 3 * len(samples) // 4]
    spectrum = np.abs(np.fft.rfft(middle * np.hanning(len(middle))))
    return float(np.fft.rfftfreq(len(middle), 1 / SAMPLE_RATE)[np.argmax(spectrum)])


@pytest.fixture
def speak(qtbot):
    started = []

    def run(engine: FakeEngine, speed: float) -> WritingPlayer:
        thread, worker = start_worker(lambda: engine, speed=speed)
        started.append((thread, worker))
        with qtbot.waitSignal(worker.model_loaded, timeout=5000):
            pass
        player, finished = WritingPlayer(), []
        worker.chunk_ready.connect(lambda job, chunk: player.write(chunk.samples, chunk.segment))
        worker.job_finished.connect(finished.append)
        worker.request_speak(1, TEXT, Voice.preset("vivian"))
        qtbot.waitUntil(lambda: finished == [1], timeout=10000)
        return player

    yield run
    for thread, worker in started:
        assert stop_worker(thread, worker)


def test_speed_two_halves_each_sentence_and_keeps_its_pitch(speak):
    engine = FakeEngine(frames_per_char=1.0)  # 1-3 s per sentence
    player = speak(engine, 2.0)
    segments = split_segments(TEXT)
    assert [seg for _, seg in player.writes] == sorted(seg for _, seg in player.writes)
    for index, seg in enumerate(segments):
        original = engine.expected_audio(seg.text)
        heard = player.audio_of(index)
        assert len(heard) == round(len(original) / 2.0)
        assert dominant_frequency(heard) == pytest.approx(dominant_frequency(original), rel=0.02)


def test_speed_one_passes_audio_through_bit_identical(speak):
    engine = FakeEngine()
    player = speak(engine, 1.0)
    audio = np.concatenate([samples for samples, _ in player.writes])
    np.testing.assert_array_equal(audio, engine.expected_audio(TEXT))


def test_highlighting_follows_stretched_playback(speak, qtbot, fake_sd):
    engine = FakeEngine(frames_per_char=0.5)
    written = speak(engine, 1.5)
    player = Player(sd_module=fake_sd, sample_rate=SAMPLE_RATE, capacity_s=30.0)
    heard = []
    player.position_changed.connect(heard.append)
    for samples, segment in written.writes:
        player.write(samples, segment)
    first_length = round(len(engine.expected_audio(split_segments(TEXT)[0].text)) / 1.5)
    fake_sd.pump((first_length - 480) / SAMPLE_RATE)  # just before the first sentence ends, sped up
    qtbot.wait(80)
    assert heard == [0]
    fake_sd.pump(960 / SAMPLE_RATE)  # just after
    qtbot.wait(80)
    assert heard == [0, 1]
    player.close()
