"""bench/tuning/cpu_vnni.py: the products and the tiny model's steps both ways, their outputs the same; on a processor
without AVX512-VNNI it says so and times nothing (its intrinsic cannot be compiled there)."""

from __future__ import annotations

import json

import pytest

from engine.core.cpu import vnni

pytest.importorskip("numba")


def test_both_ways_are_timed_and_agree(tiny_model_dir, capsys):
    from bench.tuning import cpu_vnni

    cpu_vnni.main(["--threads", "1", "--rounds", "2", "--sets", "l2", "--model", str(tiny_model_dir())])
    report = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    if not vnni.available():
        assert report == {"vnni": False}
        return
    assert report["same_outputs"] is True and report["steps_same_outputs"] is True
    assert report["steps_vnni"] == ["talker"]  # the tiny predictor's 48-wide products do not fit
    for way in ("int16", "vnni1", "vnni2", "vnni4", "vnni4pf"):
        times = report[f"1t_l2_{way}"]
        assert len(times) == 2 and all(t > 0 for t in times)
    assert {key for key in report if "_step_" in key} == {
        "1t_talker_step_int16", "1t_talker_step_vnni", "1t_predictor_step_int16"}
    assert "1t_layer_int16" not in report  # only the sets asked for
