"""bench/tuning/cpu_prefill.py on the tiny checkpoint: the Numba layer body and every PyTorch form runnable here timed
for each prompt length, their outputs within rounding of each other, and the engine's own form put back."""

from __future__ import annotations

import json

import pytest

from bench.tuning import cpu_prefill
from engine.core.cpu import int8
from engine.core.cpu.numba_layer import numba


def test_each_form_is_timed_and_close_and_the_choice_is_put_back(tiny_model_dir, capsys):
    chosen = int8.prefill_form
    cpu_prefill.main(["--model", str(tiny_model_dir()), "--tokens", "16", "20", "--rounds", "1", "--threads", "1"])
    report = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert "kernel" in report["forms"]
    if numba is not None:  # a prompt goes through the frames' own kernel
        assert report["forms"][0] == report["chosen"] == cpu_prefill.NUMBA
    else:
        assert report["chosen"] == int8.prefill_form()
    for n in (16, 20):
        assert set(report[f"{n}_ms"]) == set(report["forms"])
        assert all(len(t) == 1 and t[0] > 0 for t in report[f"{n}_ms"].values())
        assert all(d < 0.05 for d in report[f"{n}_distance"].values())  # bfloat16 activations: ~1%
    assert int8.prefill_form is chosen


def test_prompts_shorter_than_the_many_row_products_are_refused(tiny_model_dir):
    with pytest.raises(SystemExit):
        cpu_prefill.main(["--model", str(tiny_model_dir()), "--tokens", str(int8.GEMM_ROWS - 1)])
