"""The live-text benchmark on a tiny checkpoint (CPU): it runs on both backends, and its figures add up."""

from __future__ import annotations

import json
import threading
import time

import pytest
from hypothesis import given
from hypothesis import strategies as st

from bench.run_live import DEFAULT_TEXT, main, pieces
from engine.core.text.segments import split_segments


@given(st.text(max_size=200))
def test_the_pieces_make_up_the_text_and_are_token_sized(text):
    out = pieces(text)
    assert "".join(out) == text
    assert all(len(p.strip()) <= 5 for p in out)


@pytest.mark.parametrize("batch", [1, 2])
def test_the_benchmark_runs_and_hears_speech_before_the_text_ends(tiny_model_dir, tmp_path, capsys, batch):
    out = tmp_path / "live.jsonl"
    before = set(engine_threads())  # other tests' servers may have left theirs in this process
    assert main(["--model", str(tiny_model_dir("custom_voice")), "--frames", "4", "--runs", "1", "--sessions", "1",
                 "--tokens-per-s", "30", "--batch", str(batch), "--out", str(out)]) == 0
    row = json.loads(out.read_text())
    assert row["sessions"] == 1 and row["pieces"] == len(pieces(DEFAULT_TEXT))
    sentences = split_segments(DEFAULT_TEXT, target_chars=0)  # live text is spoken one sentence a segment
    assert row["audio_s_p50"] == pytest.approx(len(sentences) * 4 * 0.08)
    assert row["text_s_p50"] == pytest.approx((row["pieces"] - 1) / 30, rel=0.3)
    # heard while the text still arrives; 30 pieces a second spread the text over ~2 s, so a loaded 2-core
    # machine (first audio ~0.7 s) still hears it well before the end
    assert 0 < row["first_audio_ms_p50"] < 1000 * row["text_s_p50"]
    assert "| 1 |" in capsys.readouterr().out
    # its server is stopped: no engine thread of its scheduler is left behind in this process
    deadline = time.monotonic() + 10
    while set(engine_threads()) - before and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not set(engine_threads()) - before


def engine_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name.startswith("orator-engine")]
