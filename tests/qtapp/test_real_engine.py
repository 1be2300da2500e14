"""End to end with the REAL engine on a tiny synthetic checkpoint (tests/conftest.py builds it once):
worker thread -> player (fake sound device) and worker engine -> export file.

Random weights never say "stop", so ``max_frames`` caps every sentence at a frame or two.
"""

from __future__ import annotations

import numpy as np
import pytest
import soundfile as sf

from engine import Engine, Voice
from engine.core.chunks import SAMPLES_PER_FRAME
from engine.core.text.segments import split_segments
from engine.production.book_structure import Pauses
from engine.production.export_jobs import DONE, Job, Snapshot
from qtapp.export_queue import ExportQueueController
from qtapp.player import Player
from qtapp.worker import start_worker, stop_worker
from tests.plans import PRECISIONS

# two paragraphs, so two segments (short sentences of one paragraph would be one)
TEXT = "Hello there.\n\nHow are you today?"


@pytest.fixture
def real_worker(qtbot, tiny_model_dir):
    model_dir = tiny_model_dir("custom_voice")
    engines, started = [], []

    def start(precision: str | None = None, **options):
        def factory():
            engines.append(Engine.from_pretrained(str(model_dir), device="cpu", precision=precision))
            return engines[-1]

        thread, worker = start_worker(factory, **options)
        started.append((thread, worker))
        with qtbot.waitSignal(worker.model_loaded, timeout=300000) as loaded:
            pass
        assert loaded.args[0].startswith("CustomVoice 0.6B on cpu")
        return worker, Voice.preset(engines[0].speakers[0])

    yield start
    for thread, worker in started:
        assert stop_worker(thread, worker, timeout_ms=60000)


@pytest.mark.parametrize("precision", PRECISIONS)
def test_real_engine_speaks_through_the_worker_into_the_player(qtbot, real_worker, fake_sd, precision):
    player = Player(sd_module=fake_sd, capacity_s=5.0)
    worker, voice = real_worker(precision, buffered_seconds=player.buffered_seconds, max_frames=2)
    assert worker.plan_in_use().startswith(f"CustomVoice 0.6B on cpu, {precision}: ")
    chunks, segments, heard, errors = [], [], [], []
    worker.chunk_ready.connect(lambda job, chunk: chunks.append(chunk))
    worker.segment_started.connect(lambda *args: segments.append(args))
    worker.error.connect(errors.append)
    cuts = []
    worker.segment_cut.connect(lambda *args: cuts.append(args))
    worker.chunk_ready.connect(lambda job, chunk: player.write(chunk.samples, chunk.segment))
    player.position_changed.connect(heard.append)

    with qtbot.waitSignal(worker.job_finished, timeout=120000):
        worker.request_speak(5, TEXT, voice)
    assert errors == []
    expected = [(5, i, seg.start, seg.end) for i, seg in enumerate(split_segments(TEXT))]
    assert segments == expected
    for chunk in chunks:
        assert chunk.samples.dtype == np.float32
        assert len(chunk.samples) == chunk.n_frames * SAMPLES_PER_FRAME
        assert np.isfinite(chunk.samples).all()
    assert sum(c.n_frames for c in chunks) == 2 * len(expected)
    # the tiny random model does not end by itself: every segment is cut at its 2-frame budget, and the studio
    # hears why
    assert [(job, segment) for job, segment, _ in cuts] == [(5, 0), (5, 1)]
    assert all("frame budget (2 frames" in why for _, _, why in cuts)

    total = sum(len(c.samples) for c in chunks)
    assert player.buffered_seconds() == pytest.approx(total / 24000)
    with qtbot.waitSignal(player.finished, timeout=5000):
        player.end_of_stream()
        fake_sd.pump(total / 24000 + 0.05)
    assert heard == [0, 1]
    assert player.underruns == 0
    player.close()


def test_real_engine_exports_wav_with_subtitles(qtbot, real_worker, tmp_path):
    worker, voice = real_worker(max_frames=1)
    target = tmp_path / "tiny.wav"
    queue = ExportQueueController(tmp_path / "data", worker.engine_when_ready, lambda name: voice,
                                  cache_folder=tmp_path / "cache", max_frames=1)
    job = queue.add(Job(title="Tiny", output=str(target), format="wav", subtitles="srt", source=None,
                        snapshot="0" * 32), Snapshot(TEXT, "Tiny"))
    try:
        qtbot.waitUntil(lambda: queue.queue.get(job.id).state != "running", timeout=120000)
    finally:
        queue.shutdown()
    assert queue.queue.get(job.id).state == DONE, queue.queue.get(job.id).error
    audio, sr = sf.read(target, dtype="float32")
    pause = round(Pauses().paragraph * sr)  # between the two paragraphs
    assert sr == 24000 and len(audio) == 2 * SAMPLES_PER_FRAME + pause  # one frame per segment
    cues = target.with_suffix(".srt").read_text(encoding="utf-8").strip().split("\n\n")
    assert [c.split("\n")[2] for c in cues] == [seg.text for seg in split_segments(TEXT)]
    assert cues[1].split("\n")[1] == "00:00:00,680 --> 00:00:00,760"
