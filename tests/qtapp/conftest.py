"""Fixtures for the studio's tests: offscreen Qt, a data dir in ``tmp_path``, a fake engine and a
fake ``sounddevice``.

Every test runs with ``ORATOR_DATA_DIR`` pointing into its own ``tmp_path`` (autouse), so no test
reads or writes the real home directory; ``QMessageBox.question`` is answered by ``message_box`` (autouse),
so no modal question blocks a test. ``FakeEngine`` implements the engine methods the worker
and exporter call and speaks a short tone per sentence; ``FakeSoundDevice`` records the output
stream the player opens and lets a test play audio by calling ``pump(seconds)``.
"""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

from tests.qtapp.fake_stream import FakeStream

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import numpy as np  # noqa: E402
import pytest  # noqa: E402

from engine.core.chunks import SAMPLE_RATE, SAMPLES_PER_FRAME, Audio, Chunk  # noqa: E402
from engine.core.sampling import Sampling  # noqa: E402
from engine.core.text.segments import segments_of  # noqa: E402
from engine.pronunciation import pronounce  # noqa: E402

FRAMES_PER_SENTENCE = 3


@pytest.fixture(autouse=True)
def quick_speed_probe(monkeypatch):
    """The first-run dialog measures the processor on full-size shapes (seconds, a GB or two); tests that are
    about something else get a fixed figure instead (tests/qtapp/test_cpu_speed.py uses the real one)."""
    from engine.core.cpu import speed_probe as cpu_probe

    monkeypatch.setattr(cpu_probe, "measure_cpu_speed",
                        lambda size, seconds=1.0, threads=None: cpu_probe.CpuSpeed(size, 100.0, 20.0, 1))


@pytest.fixture(autouse=True)
def isolated_data_dir(tmp_path, monkeypatch):
    """Settings, voice library and autosave of this test live in ``tmp_path/data``."""
    data = tmp_path / "data"
    monkeypatch.setenv("ORATOR_DATA_DIR", str(data))
    monkeypatch.setenv("ORATOR_CACHE_DIR", str(tmp_path / "cache"))  # the export queue's segment cache
    return data


class FakeEngine:
    """Speaks every sentence as a short tone; remembers what it was asked to say (a text, or the texts of the
    segments it was given), as said: after the pronunciation rules, as the engine applies them."""

    model_type = "custom_voice"
    model_size = "0b6"
    device = "cpu"
    use_graphs = False
    cpu_int8 = False
    dtype = "float32"
    sample_rate = SAMPLE_RATE
    frames_per_sentence = FRAMES_PER_SENTENCE
    speakers = ["aiden", "ryan", "vivian"]
    defaults = Sampling()
    model_dir = Path(__file__).parent / "no-model"  # holds no weights: the segment cache keys it by its name

    def __init__(self, frame_delay_s: float = 0.0):
        self.frame_delay_s = frame_delay_s
        self.spoken: list[tuple[str, object]] = []  # (text, voice) per stream call
        self.lock = threading.Lock()

    def prepare_voice(self, voice):
        return voice

    def stream(self, text, voice, chunk_frames=4, first_chunk_frames=1, sampling=None, cancel=None,
               pronunciation=None, max_frames=None):
        segments = pronounce(segments_of(text), pronunciation, voice.name)
        said = pronunciation.apply(text, voice.name) if isinstance(text, str) and pronunciation else text
        with self.lock:
            self.spoken.append((said if isinstance(text, str) else " ".join(s.speech for s in segments), voice))
        t0 = time.perf_counter()
        for index, seg in enumerate(segments):
            for frame in range(self.frames_per_sentence):
                if cancel is not None and cancel.is_set():
                    return
                time.sleep(self.frame_delay_s)
                samples = np.full(SAMPLES_PER_FRAME, 0.01 * (index + 1), dtype=np.float32)
                final = index == len(segments) - 1 and frame == self.frames_per_sentence - 1
                yield Chunk(samples, SAMPLE_RATE, frame, 1, index, (seg.start, seg.end),
                            time.perf_counter() - t0, final)

    def synthesize(self, text, voice, sampling=None):
        samples = np.concatenate([c.samples for c in self.stream(text, voice)])
        return Audio(samples, SAMPLE_RATE, np.zeros((len(samples) // SAMPLES_PER_FRAME, 16), np.int64))


class FakeSoundDevice:
    """Stands in for the ``sounddevice`` module: ``OutputStream`` plus a way to consume audio."""

    class PortAudioError(Exception):
        pass

    class CallbackStop(Exception):
        pass

    def __init__(self):
        self.streams: list[FakeStream] = []

    def OutputStream(self, **kwargs):  # noqa: N802 - mirrors sounddevice's class name
        stream = FakeStream(**kwargs)
        self.streams.append(stream)
        return stream

    def pump(self, seconds: float, block: int = 480) -> None:
        """Let the device play ``seconds`` of audio through the player's callback (once it is open)."""
        if not self.streams:
            return
        stream = self.streams[-1]
        out = np.zeros((block, 1), dtype=np.float32)
        for _ in range(int(seconds * SAMPLE_RATE) // block):
            stream.callback(out, block, None, None)


class MessageBoxAnswers:
    """Stands in for ``QMessageBox.question``: answers ``answer`` and records each question's text."""

    def __init__(self):
        from PySide6.QtWidgets import QMessageBox

        self.answer = QMessageBox.StandardButton.Discard
        self.asked: list[str] = []

    def __call__(self, parent, title, text, *args, **kwargs):
        self.asked.append(text)
        return self.answer


@pytest.fixture(autouse=True)
def message_box(monkeypatch):
    """No test blocks on a modal question (closing a window with typed text asks one): each is answered
    Discard unless the test sets ``message_box.answer``."""
    from PySide6.QtWidgets import QMessageBox

    answers = MessageBoxAnswers()
    monkeypatch.setattr(QMessageBox, "question", answers)
    return answers


@pytest.fixture
def open_window(qtbot, fake_sd, fake_engine_class, message_box):
    """``open_window(show=True, loaded=False)``: a main window over the fake engine and sound device, shown, and
    with ``loaded`` once its model label says a model is in. Each is closed at teardown whatever the test last
    answered: a window left open keeps its speech thread running, and Qt aborts the process when that thread's
    object is destroyed at exit."""
    from PySide6.QtWidgets import QMessageBox

    from qtapp.main_window import MainWindow
    from qtapp.settings import Settings

    made = []

    def make(show: bool = True, loaded: bool = False):
        window = MainWindow(Settings.load(), engine_factory=fake_engine_class, sd_module=fake_sd)
        qtbot.addWidget(window)
        made.append(window)
        if show:
            window.show()
        if loaded:
            qtbot.waitUntil(lambda: window.model_label.text().startswith("Model:"), timeout=5000)
        return window

    yield make
    message_box.answer = QMessageBox.StandardButton.Discard
    for window in made:
        assert window.close()


@pytest.fixture
def fake_engine():
    return FakeEngine()


@pytest.fixture
def fake_sd():
    return FakeSoundDevice()


@pytest.fixture
def fake_engine_class():
    """The class itself: a zero-argument engine factory, and a base for engines of other model types."""
    return FakeEngine
