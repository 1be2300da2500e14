"""bench/tuning/cpu_prefill.py on the tiny checkpoint: every form runnable here timed for each prompt length, their
outputs within rounding of the integer form's, and the engine's own form put back."""

from __future__ import annotations

import json

import pytest

from bench.tuning import cpu_prefill
from engine.core.cpu import int8


def test_each_form_is_timed_and_close_and_the_choice_is_put_back(tiny_model_dir, capsys):
    chosen = int8.prefill_form
    cpu_prefill.main(["--model", str(tiny_model_dir()), "--tokens", "16", "20", "--rounds", "1", "--threads", "1"])
    report = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert report["chosen"] == int8.prefill_form() and "kernel" in report["forms"]
    for n in (16, 20):
        assert set(report[f"{n}_ms"]) == set(report["forms"])
        assert all(len(t) == 1 and t[0] > 0 for t in report[f"{n}_ms"].values())
        assert all(d < 0.05 for d in report[f"{n}_distance"].values())  # bfloat16 activations: ~1%
    assert int8.prefill_form is chosen


def test_prompts_shorter_than_the_many_row_products_are_refused(tiny_model_dir):
    with pytest.raises(SystemExit):
        cpu_prefill.main(["--model", str(tiny_model_dir()), "--tokens", str(int8.GEMM_ROWS - 1)])
