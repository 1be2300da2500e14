"""ExportJob: streamed WAV/FLAC with sentence-timed SRT, progress, cancel and errors; the sentences and voices
are those of reading aloud (``qtapp.reading_plan``)."""

from __future__ import annotations

import re

import numpy as np
import pytest
import soundfile as sf

from engine import Voice
from engine.text import split_segments, split_sentences
from qtapp.export_job import ExportJob, start_export, subtitle_path
from tests.qtapp.fake_engine import FakeEngine

PARAGRAPHS = ["Chapter one begins. It has two sentences.", "A second paragraph! With a question? And an end."]
TEXT = "\n".join(PARAGRAPHS)
PAUSE_S = 0.5


def run_job(qtbot, job: ExportJob, signal_name: str = "finished", timeout: int = 10000):
    """Start ``job`` on its thread and wait for ``signal_name``; return (thread, signal args)."""
    events = {"progress": [], "error": [], "finished": [], "cancelled": []}
    job.progress.connect(lambda *a: events["progress"].append(a))
    job.error.connect(events["error"].append)
    job.finished.connect(events["finished"].append)
    job.cancelled.connect(lambda: events["cancelled"].append(True))
    thread = start_export(job)
    qtbot.waitUntil(lambda: bool(events[signal_name]) or bool(events["error"]), timeout=timeout)
    assert thread.wait(5000)
    return events


def parse_srt(text: str) -> list[tuple[float, float, str]]:
    def seconds(stamp: str) -> float:
        h, m, rest = stamp.split(":")
        s, ms = rest.split(",")
        return int(h) * 3600 + int(m) * 60 + int(s) + int(ms) / 1000

    cues = []
    for block in text.strip().split("\n\n"):
        lines = block.split("\n")
        start, end = re.fullmatch(r"(\S+) --> (\S+)", lines[1]).groups()
        cues.append((seconds(start), seconds(end), " ".join(lines[2:])))
    return cues


@pytest.mark.parametrize("suffix", [".wav", ".flac"])
def test_exports_audio_and_sentence_timed_subtitles(qtbot, tmp_path, suffix):
    engine = FakeEngine()
    voice = Voice.preset("vivian")
    target = tmp_path / f"book{suffix}"
    job = ExportJob(TEXT, {None: voice}, target, lambda v: engine, paragraph_pause_s=PAUSE_S)
    events = run_job(qtbot, job)
    assert events["error"] == []
    assert events["finished"] == [str(target)]

    audio, sr = sf.read(target, dtype="float32")
    expected = np.concatenate([engine.expected_audio(PARAGRAPHS[0]), np.zeros(int(PAUSE_S * sr), np.float32),
                               engine.expected_audio(PARAGRAPHS[1])])
    assert sr == 24000 and len(audio) == len(expected)
    np.testing.assert_allclose(audio, expected, atol=1 / 2**14)  # 16-bit PCM

    cues = parse_srt(subtitle_path(target).read_text(encoding="utf-8"))
    sentences = [seg.text for p in PARAGRAPHS for seg in split_segments(p)]
    assert [text for _, _, text in cues] == sentences
    first_len = len(engine.expected_audio(PARAGRAPHS[0])) / sr
    assert cues[0][0] == 0.0
    after_pause = len(split_segments(PARAGRAPHS[0]))
    assert cues[after_pause][0] == pytest.approx(first_len + PAUSE_S, abs=1e-3)
    assert cues[-1][1] == pytest.approx(len(audio) / sr, abs=1e-3)
    assert all(a[1] <= b[0] for a, b in zip(cues, cues[1:], strict=False))

    done = [p[0] for p in events["progress"]]
    assert done == list(range(len(sentences) + 1)) + [len(sentences)]
    assert all(total == len(sentences) for _, total, _ in events["progress"])
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([target.name, subtitle_path(target).name])


def test_the_segment_target_decides_the_engine_calls_and_cues(qtbot, tmp_path):
    engine = FakeEngine()
    calls = []

    class Recording(FakeEngine):
        def stream(self, segments, voice, **kwargs):
            calls.append([s.text for s in segments])
            return super().stream(segments, voice, **kwargs)

    engine = Recording()
    target = tmp_path / "sentences.wav"
    events = run_job(qtbot, ExportJob(TEXT, {None: Voice.preset("vivian")}, target, lambda v: engine,
                                      paragraph_pause_s=0.0, segment_chars=0))
    assert events["error"] == []
    assert [text for call in calls for text in call] == [s.text for p in PARAGRAPHS for s in split_sentences(p)]
    cues = parse_srt(subtitle_path(target).read_text(encoding="utf-8"))
    assert len(cues) == 5  # one a sentence


def test_without_subtitles_no_srt_is_written(qtbot, tmp_path):
    engine = FakeEngine()
    target = tmp_path / "out.wav"
    run_job(qtbot, ExportJob(PARAGRAPHS[0], {None: Voice.preset("a")}, target, lambda v: engine, subtitles=False))
    assert target.is_file()
    assert not subtitle_path(target).exists()


def test_cancel_leaves_no_file_behind(qtbot, tmp_path):
    engine = FakeEngine(frame_delay_s=0.01)
    target = tmp_path / "long.flac"
    job = ExportJob(" ".join(PARAGRAPHS) * 20, {None: Voice.preset("a")}, target, lambda v: engine)
    job.progress.connect(lambda done, total, eta: job.cancel() if done >= 2 else None)
    events = run_job(qtbot, job, "cancelled")
    assert events["cancelled"] == [True]
    assert events["finished"] == [] and events["error"] == []
    assert list(tmp_path.iterdir()) == []
    assert engine.frames_generated < 200  # it stopped early


def test_an_existing_file_survives_a_failed_export(qtbot, tmp_path):
    target = tmp_path / "keep.wav"
    target.write_bytes(b"old")
    events = run_job(qtbot, ExportJob(PARAGRAPHS[0], {None: Voice.preset("a")}, target, lambda v: None))
    assert "No model is loaded" in events["error"][0]
    assert target.read_bytes() == b"old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["keep.wav"]


def test_unknown_formats_are_refused():
    with pytest.raises(ValueError, match="wav"):
        ExportJob("Hi.", {None: Voice.preset("a")}, "out.mp3", lambda v: None)


def test_marks_selection_and_lines_follow_the_reading_plan(qtbot, tmp_path):
    """Marked lines get their voice, the range is respected, a sentence across a line break is one cue, and
    each engine call is one voice's run within one line."""
    text = "Skipped. Intro here\nruns on.\n[voice: Ann] Hi there. Bye.\nLast one."
    calls = []

    class Recording(FakeEngine):
        def stream(self, segments, voice, **kwargs):
            calls.append(([s.text for s in segments], voice.speaker))
            return super().stream(segments, voice, **kwargs)

    engine = Recording()
    voices = {None: Voice.preset("vivian"), "Ann": Voice.preset("aiden")}
    target = tmp_path / "part.wav"
    events = run_job(qtbot, ExportJob(text, voices, target, lambda v: engine, start=text.index("Intro"),
                                      paragraph_pause_s=0.0))
    assert events["error"] == []
    assert calls == [(["Intro here\nruns on."], "vivian"), (["Hi there. Bye."], "aiden"), (["Last one."], "vivian")]
    cues = parse_srt(subtitle_path(target).read_text(encoding="utf-8"))
    assert [c[2] for c in cues] == ["Intro here runs on.", "Hi there. Bye.", "Last one."]


def test_a_text_with_nothing_to_say_is_an_error(qtbot, tmp_path):
    events = run_job(qtbot, ExportJob("  \n[voice: Ann]\n ", {None: Voice.preset("a")}, tmp_path / "x.wav",
                                      lambda v: FakeEngine()))
    assert "nothing to export" in events["error"][0]
    assert list(tmp_path.iterdir()) == []
