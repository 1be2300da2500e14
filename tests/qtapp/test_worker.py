"""SpeechWorker against a fake engine that follows the streaming contract (tests/qtapp/fake_engine.py)."""

from __future__ import annotations

import re
import threading

import numpy as np
import pytest

from engine import Voice
from engine.core.chunks import SAMPLE_RATE, SAMPLES_PER_FRAME
from engine.core.text.segments import Segment, split_segments
from engine.errors import CheckpointError
from qtapp.worker import SpeechWorker, start_worker, stop_worker
from tests.qtapp.fake_engine import FakeEngine, segment_tone

# four paragraphs, so four segments (short sentences of one paragraph would be one)
TEXT = "The first sentence is here.\n\nA second one follows it!\n\nIs there a third?\n\nYes, the fourth."


class Recorder:
    """Collects a worker's signals (they arrive from the worker thread)."""

    def __init__(self, worker: SpeechWorker):
        self.chunks, self.segments, self.finished, self.errors, self.stats = [], [], [], [], []
        self.loaded = []
        worker.chunk_ready.connect(lambda job, chunk: self.chunks.append((job, chunk)))
        worker.segment_started.connect(lambda *args: self.segments.append(args))
        worker.job_finished.connect(self.finished.append)
        worker.error.connect(self.errors.append)
        worker.stats.connect(lambda rtf, first: self.stats.append((rtf, first)))
        worker.model_loaded.connect(self.loaded.append)


@pytest.fixture
def running_worker(qtbot):
    started = []

    def start(engine, **options):
        """``engine``: a FakeEngine, or a factory (which may raise)."""
        factory = engine if callable(engine) else lambda: engine
        thread, worker = start_worker(factory, **options)
        recorder = Recorder(worker)
        started.append((thread, worker))
        qtbot.waitUntil(lambda: bool(recorder.loaded or recorder.errors), timeout=5000)
        return worker, recorder

    yield start
    for thread, worker in started:
        assert stop_worker(thread, worker)


def test_model_loads_and_speaks_in_the_worker_thread(running_worker, qtbot):
    engine = FakeEngine()
    worker, rec = running_worker(engine)
    # the thread count is the worker thread's own (OpenMP keeps one per thread), which other tests may have changed
    assert len(rec.loaded) == 1 and re.fullmatch(r"CustomVoice 0\.6B on cpu \(exact float32, (1 thread|\d+ threads)\)",
                                                 rec.loaded[0]), rec.loaded
    worker.request_speak(1, TEXT, Voice.preset("vivian"))
    qtbot.waitUntil(lambda: rec.finished == [1], timeout=5000)
    assert engine.stream_threads and threading.get_ident() not in engine.stream_threads
    audio = np.concatenate([chunk.samples for _, chunk in rec.chunks])
    np.testing.assert_array_equal(audio, engine.expected_audio(TEXT))
    assert rec.errors == []


class GraphedFakeEngine(FakeEngine):
    """A fake engine on the graph path: ``warmup`` records its chunk sizes and the thread it ran on."""

    use_graphs = True

    def __init__(self):
        super().__init__()
        self.warmups: list[tuple] = []

    def warmup(self, chunk_sizes):
        self.warmups.append((tuple(chunk_sizes), threading.get_ident()))
        return 0.0


def test_a_gpu_model_captures_its_graphs_while_loading_and_says_so(qtbot):
    engine = GraphedFakeEngine()
    statuses: list[str] = []
    thread, worker = start_worker(lambda: engine, chunk_frames=6, first_chunk_frames=2)
    worker.model_status.connect(statuses.append)
    loaded: list[str] = []
    worker.model_loaded.connect(loaded.append)
    try:
        qtbot.waitUntil(lambda: bool(loaded), timeout=5000)
    finally:
        assert stop_worker(thread, worker)
    assert [sizes for sizes, _ in engine.warmups] == [(2, 6)]
    assert engine.warmups[0][1] != threading.get_ident()  # in the worker thread, not the GUI's
    assert statuses and "GPU" in statuses[0]


def test_segments_are_announced_in_order_with_their_spans(running_worker, qtbot):
    worker, rec = running_worker(FakeEngine())
    worker.request_speak(7, TEXT, Voice.preset("vivian"))
    qtbot.waitUntil(lambda: rec.finished == [7], timeout=5000)
    expected = [(7, i, seg.start, seg.end) for i, seg in enumerate(split_segments(TEXT))]
    assert rec.segments == expected
    assert all(job == 7 for job, _ in rec.chunks)
    assert [c.segment for _, c in rec.chunks] == sorted(c.segment for _, c in rec.chunks)


def test_planned_segments_are_spoken_as_given_with_their_spans(running_worker, qtbot):
    """A reading plan's sentences (here the last two, at document offsets) are what the engine speaks: the
    chunks index the given list and carry the given spans, and no sentence before them is spoken."""
    engine = FakeEngine()
    worker, rec = running_worker(engine)
    planned = [Segment(seg.start + 1000, seg.end + 1000, seg.text) for seg in split_segments(TEXT)[2:]]
    worker.request_speak(2, planned, Voice.preset("vivian"))
    qtbot.waitUntil(lambda: rec.finished == [2], timeout=5000)
    assert rec.segments == [(2, i, seg.start, seg.end) for i, seg in enumerate(planned)]
    for _, chunk in rec.chunks:
        assert chunk.span == (planned[chunk.segment].start, planned[chunk.segment].end)
    first_chunk = rec.chunks[0][1]
    n_frames = engine.segment_frames(planned[0].text)
    np.testing.assert_array_equal(first_chunk.samples, segment_tone(planned[0].text, n_frames)[:1920])


def test_a_failed_job_is_reported_by_id_before_it_finishes(running_worker, qtbot):
    worker, rec = running_worker(FakeEngine())
    failed = []
    worker.job_failed.connect(failed.append)
    worker.request_speak(4, [Segment(0, 3, "   ")], Voice.preset("vivian"))  # nothing to speak: refused
    qtbot.waitUntil(lambda: rec.finished == [4], timeout=5000)
    assert failed == [4] and rec.chunks == []


def test_stats_report_speed_and_first_audio(running_worker, qtbot):
    """On a clock that moves 2 ms a generated frame, the figures are exact: first audio after the first chunk's
    one frame, and 80 ms of audio per 2 ms of generation (40x real time)."""
    frame_s = 0.002
    engine = FakeEngine(frame_delay_s=0.0)
    worker, rec = running_worker(engine, clock=lambda: engine.frames_generated * frame_s)
    worker.request_speak(1, TEXT, Voice.preset("vivian"))
    qtbot.waitUntil(lambda: rec.finished == [1], timeout=5000)
    assert len(rec.stats) > 1
    for rtf, first_audio in rec.stats:
        assert first_audio == pytest.approx(worker.first_chunk_frames * frame_s)
        assert rtf == pytest.approx(SAMPLES_PER_FRAME / SAMPLE_RATE / frame_s)


def test_cancel_stops_the_running_job_within_a_chunk(running_worker, qtbot):
    engine = FakeEngine(frame_delay_s=0.02)
    worker, rec = running_worker(engine)
    worker.request_speak(1, TEXT * 5, Voice.preset("vivian"))
    qtbot.waitUntil(lambda: len(rec.chunks) >= 2, timeout=5000)
    worker.cancel()
    frames_at_cancel = engine.frames_generated
    qtbot.waitUntil(lambda: rec.finished == [1], timeout=2000)
    assert engine.frames_generated - frames_at_cancel <= 4  # one chunk at most
    assert rec.errors == []


def test_cancel_drops_jobs_already_requested(running_worker, qtbot):
    worker, rec = running_worker(FakeEngine(frame_delay_s=0.02))
    worker.request_speak(1, TEXT * 5, Voice.preset("vivian"))
    worker.request_speak(2, TEXT, Voice.preset("vivian"))
    qtbot.waitUntil(lambda: len(rec.chunks) >= 1, timeout=5000)
    worker.cancel()
    worker.request_speak(3, "Only this one.", Voice.preset("vivian"))
    qtbot.waitUntil(lambda: rec.finished == [1, 2, 3], timeout=5000)
    assert {job for job, _ in rec.chunks} == {1, 3}


def test_backpressure_holds_generation_until_the_player_drains(running_worker, qtbot):
    engine = FakeEngine(frames_per_char=1.0)  # ~7 s of audio per sentence
    queued = {"seconds": 0.0}
    lock = threading.Lock()

    def buffered_seconds() -> float:
        with lock:
            return queued["seconds"]

    worker, rec = running_worker(engine, buffered_seconds=buffered_seconds, max_ahead_s=2.0)

    def on_chunk(job, chunk):
        with lock:
            queued["seconds"] += chunk.duration

    worker.chunk_ready.connect(on_chunk)
    worker.request_speak(1, TEXT * 20, Voice.preset("vivian"))
    qtbot.waitUntil(lambda: buffered_seconds() > 2.0, timeout=5000)
    qtbot.wait(200)
    held_frames = engine.frames_generated
    assert held_frames * 0.08 <= 2.0 + 0.32 + 0.08  # the limit plus at most one chunk
    qtbot.wait(200)
    assert engine.frames_generated == held_frames  # it waits, it does not spin ahead
    with lock:
        queued["seconds"] = 0.0  # the player caught up
    qtbot.waitUntil(lambda: engine.frames_generated > held_frames, timeout=2000)
    worker.cancel()
    qtbot.waitUntil(lambda: rec.finished == [1], timeout=2000)


def test_a_missing_model_is_reported_in_clear_words(running_worker, qtbot):
    def missing():
        raise CheckpointError("model directory '/nowhere' does not exist")

    worker, rec = running_worker(missing)
    assert rec.errors[0].startswith("Model not found")
    assert "/nowhere" in rec.errors[0]
    worker.request_speak(1, TEXT, Voice.preset("vivian"))
    qtbot.waitUntil(lambda: rec.finished == [1], timeout=5000)
    assert "No model is loaded" in rec.errors[1]


def test_each_voice_kind_goes_to_its_model_type(running_worker, qtbot):
    preset_engine, design_engine = FakeEngine("custom_voice"), FakeEngine("voice_design")
    worker, rec = running_worker(preset_engine)
    worker.request_load_model(lambda: design_engine)
    qtbot.waitUntil(lambda: len(rec.loaded) == 2, timeout=5000)
    worker.request_speak(1, "Designed words.", Voice.design("a calm low voice"))
    worker.request_speak(2, "Preset words.", Voice.preset("vivian"))
    qtbot.waitUntil(lambda: rec.finished == [1, 2], timeout=5000)
    assert len(design_engine.stream_threads) == 1 and len(preset_engine.stream_threads) == 1


def test_keep_design_turns_a_designed_sample_into_a_prepared_clone(running_worker, qtbot):
    designer, base = FakeEngine("voice_design", frames_per_char=1.0), FakeEngine("base")
    worker, rec = running_worker(designer)
    worker.request_load_model(lambda: base)
    qtbot.waitUntil(lambda: len(rec.loaded) == 2, timeout=5000)
    sample_text = "This is the voice I designed, reading a sample."
    design = Voice.design("a warm, slow narrator", language="english")
    with qtbot.waitSignal(worker.voice_kept, timeout=5000) as kept:
        worker.request_keep_design(design, sample_text)
    voice = kept.args[0]
    assert voice.kind == "clone" and voice.in_context
    assert voice.ref_text == sample_text and voice.language == "english"
    assert voice.meta["design"] == "a warm, slow narrator"
    np.testing.assert_allclose(voice.ref_audio, designer.expected_audio(sample_text), atol=1e-6)
    assert base.prepared and base.prepared[-1].ref_text == sample_text  # encoded on the Base model
    assert rec.errors == []


def test_keep_design_without_a_design_model_says_so(running_worker, qtbot):
    worker, rec = running_worker(FakeEngine("custom_voice"))
    worker.request_keep_design(Voice.design("a voice"), "Some sample text to speak.")
    qtbot.waitUntil(lambda: bool(rec.errors), timeout=5000)
    assert "VoiceDesign model" in rec.errors[0]


def test_engine_when_ready_waits_for_requested_models(running_worker, qtbot):
    preset_engine, design_engine = FakeEngine("custom_voice"), FakeEngine("voice_design")
    worker, rec = running_worker(preset_engine)

    def slow_design_model():
        threading.Event().wait(0.3)  # a model that takes a while to load
        return design_engine

    design = Voice.design("a bright voice")
    worker.request_load_model(slow_design_model)
    assert worker.engine_for(design) is None  # not loaded yet, and a preset engine never speaks a design voice
    result = []
    waiter = threading.Thread(target=lambda: result.append(worker.engine_when_ready(design)))
    waiter.start()
    waiter.join(timeout=5)
    assert result == [design_engine]


def test_engine_when_ready_gives_up_at_once_when_cancelled(qtbot):
    loading = threading.Event()

    def stuck_model():
        loading.wait(5)  # a load that would take long
        return FakeEngine()

    thread, worker = start_worker(stuck_model)
    try:
        cancel, result = threading.Event(), []
        waiter = threading.Thread(target=lambda: result.append(worker.engine_when_ready(Voice.preset("a"),
                                                                                        cancel=cancel)))
        waiter.start()
        threading.Event().wait(0.2)
        assert waiter.is_alive()  # waiting for the load
        cancel.set()
        waiter.join(timeout=30)  # the load never finishes before ``loading`` is set: only the cancel ends the wait
        assert not waiter.is_alive() and result == [None]
    finally:
        loading.set()
        assert stop_worker(thread, worker)


def test_engine_when_ready_waits_for_the_first_model(qtbot):
    engine = FakeEngine()

    def slow_model():
        threading.Event().wait(0.3)
        return engine

    thread, worker = start_worker(slow_model)
    try:
        result = []
        waiter = threading.Thread(target=lambda: result.append(worker.engine_when_ready(Voice.preset("a"))))
        waiter.start()
        qtbot.waitUntil(lambda: not waiter.is_alive(), timeout=5000)
        assert result == [engine]
    finally:
        assert stop_worker(thread, worker)
