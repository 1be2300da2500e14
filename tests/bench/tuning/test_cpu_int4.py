"""bench/tuning/cpu_int4.py on two small layers: each form timed, and each within its rounding of the exact product."""

from __future__ import annotations

import json

import pytest

from engine.model import one_position_numba as jit

pytestmark = pytest.mark.skipif(jit.numba is None, reason="Numba is not installed")


def test_each_form_is_timed_and_checked(capsys):
    from bench.tuning import cpu_int4

    cpu_int4.main(["--threads", "1", "--rounds", "1", "--layers", "2"])
    report = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert {"int8_16bit", "int4_16bit"} <= set(report["forms"])
    for form in report["forms"]:
        assert report["error"][form] < 1e-3  # 15-bit activations: ~1e-4
        for name in ("cached", "streamed"):
            assert report[f"1t_{name}_{form}_us"] > 0
