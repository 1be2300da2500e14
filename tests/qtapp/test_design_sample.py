""""Keep this voice": the design sample fits the clone reference limit whatever the VoiceDesign model does, keeps a
transcript true to its audio, and reports its progress; the kept voice is saved with no trimming asked of the
user."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from engine import Voice
from engine.core.audio_files import MAX_REFERENCE_SECONDS
from engine.core.chunks import SAMPLE_RATE, SAMPLES_PER_FRAME, Chunk
from qtapp.design_sample import KEEP_MAX_SECONDS, speak_sample
from qtapp.worker import start_worker, stop_worker
from tests.qtapp.fake_engine import FakeEngine

FRAME_S = SAMPLES_PER_FRAME / SAMPLE_RATE


class FramesEngine:
    """Speaks segment ``i`` of a text (its sentences, ". " apart) as ``frames[i]`` frames, in chunks of four."""

    sample_rate = SAMPLE_RATE

    def __init__(self, frames: list[int]):
        self.frames = frames
        self.closed = False

    def stream(self, text, voice, **kwargs):
        """``text``: the segments to speak (as ``speak_sample`` gives them: one sentence each)."""
        try:
            for index, (n_frames, segment) in enumerate(zip(self.frames, text, strict=False)):
                for first in range(0, n_frames, 4):
                    count = min(4, n_frames - first)
                    samples = np.full(count * SAMPLES_PER_FRAME, index + 1, dtype=np.float32)
                    yield Chunk(samples, SAMPLE_RATE, first, count, index, (segment.start, segment.end), 0.0, False)
        finally:
            self.closed = True


def sentences(count: int) -> str:
    return " ".join(f"Sentence number {i}." for i in range(count))


@settings(max_examples=80, deadline=None)
@given(frames=st.lists(st.integers(1, 2000), min_size=1, max_size=6), max_seconds=st.floats(0.5, 60.0))
def test_a_sample_never_passes_its_cap_and_its_transcript_matches_its_audio(frames, max_seconds):
    text = sentences(len(frames))
    engine = FramesEngine(frames)
    reported = []
    samples, transcript = speak_sample(engine, text, Voice.design("a voice"), reported.append, max_seconds)
    assert engine.closed  # the generation is stopped, not left running
    assert samples.dtype == np.float32 and 0 < len(samples) <= int(max_seconds * SAMPLE_RATE)
    assert reported == sorted(reported) and all(s <= max_seconds for s in reported)
    limit = int(max_seconds * SAMPLE_RATE)
    if transcript is None:  # the first segment alone overran: its start, cut at the cap
        assert frames[0] * SAMPLES_PER_FRAME > limit and len(samples) == limit
        assert set(np.unique(samples)) == {1.0}
        return
    kept = transcript.count(".")
    assert 1 <= kept <= len(frames)
    assert transcript == sentences(kept)  # whole sentences, the ones heard
    assert len(samples) == sum(frames[:kept]) * SAMPLES_PER_FRAME  # nothing of the next one
    assert set(np.unique(samples)) == set(range(1, kept + 1))
    if kept < len(frames):  # stopped: the next segment did not fit
        assert sum(frames[:kept + 1]) * SAMPLES_PER_FRAME > limit


def test_keeping_a_rambling_design_voice_fits_the_clone_limit(qtbot):
    designer = FakeEngine("voice_design", frames_per_char=8.0)  # about 25 s a sentence of 40 characters
    base = FakeEngine("base")
    thread, worker = start_worker(lambda: designer)
    progress, errors = [], []
    worker.keep_progress.connect(progress.append)
    worker.error.connect(errors.append)
    try:
        worker.request_load_model(lambda: base)
        qtbot.waitUntil(lambda: worker.engine_of_type("base") is base, timeout=5000)
        text = "This is the first sentence of the sample. And this is the second sentence of it."
        with qtbot.waitSignal(worker.voice_kept, timeout=10_000) as kept:
            worker.request_keep_design(Voice.design("a slow voice", language="english"), text)
        voice = kept.args[0]
        seconds = len(voice.ref_audio) / SAMPLE_RATE
        assert errors == []
        assert seconds <= KEEP_MAX_SECONDS < MAX_REFERENCE_SECONDS
        assert voice.ref_text == "This is the first sentence of the sample."
        assert progress and progress == sorted(progress) and progress[-1] <= KEEP_MAX_SECONDS
    finally:
        assert stop_worker(thread, worker)


def test_keep_shows_its_progress_and_saves_the_voice(qtbot, fake_sd, fake_engine_class, monkeypatch):
    from qtapp.main_window import MainWindow
    from qtapp.settings import Settings

    class DesignEngine(fake_engine_class):
        model_type = "voice_design"
        frames_per_sentence = 10  # a clone needs at least a second of reference audio

    window = MainWindow(Settings.load(), engine_factory=DesignEngine, sd_module=fake_sd)
    qtbot.addWidget(window)
    try:
        qtbot.waitUntil(lambda: window.model_label.text().startswith("Model:"), timeout=5000)
        window.library_panel.add_voice(Voice.design("a bright robot voice"), "Robot")
        shown = []
        monkeypatch.setattr(window, "show_status", shown.append)
        window.voices.keep_design("Robot")
        qtbot.waitUntil(lambda: "Robot (kept)" in window.library.names(), timeout=5000)
        assert shown[0] == "Generating a sample of “Robot” to keep as a clone…"
        assert any(s.startswith("Generating a sample of “Robot”: ") and s.endswith(" s…") for s in shown[1:])
        assert window.library.load("Robot (kept)").kind == "clone"
    finally:
        assert window.close()
