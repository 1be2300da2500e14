"""bench/tuning/cpu_predictor_frame.py on the tiny checkpoint: both ways timed in alternating rounds, and the codes
of the fused frame the per-pass frames'."""

from __future__ import annotations

import json

import pytest

from bench.tuning import cpu_predictor_frame
from engine.core.cpu import one_position_numba


@pytest.mark.skipif(one_position_numba.numba is None, reason="Numba is not installed")
def test_prints_both_ways_rounds_and_the_same_codes(tiny_model_dir, capsys):
    cpu_predictor_frame.main(["--model", str(tiny_model_dir()), "--frames", "6", "--rounds", "3"])
    report = json.loads(capsys.readouterr().out)
    assert report["threads"] >= 1 and report["frames"] == 6
    assert len(report["fused_ms"]) == len(report["per_pass_ms"]) == 3
    assert all(ms > 0 for ms in report["fused_ms"] + report["per_pass_ms"])
    assert report["same_codes"] is True


def test_too_few_frames_are_refused(tiny_model_dir):
    with pytest.raises(SystemExit):
        cpu_predictor_frame.main(["--model", str(tiny_model_dir()), "--frames", "1"])
