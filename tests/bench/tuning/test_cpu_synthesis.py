"""bench/tuning/cpu_synthesis.py: a whole synthesis of the tiny model with its parts timed, and every wrapped function
put back afterwards."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("numba")


def test_parts_of_a_synthesis_are_timed_and_the_functions_put_back(tiny_model_dir, capsys, monkeypatch):
    from bench.tuning import cpu_synthesis
    from engine import Engine

    engines = []
    monkeypatch.setattr(Engine, "from_pretrained",
                        lambda *a, _load=Engine.from_pretrained, **k: engines.append(_load(*a, **k)) or engines[-1])
    cpu_synthesis.main(["--model", str(tiny_model_dir()), "--frames", "6", "--runs", "2"])
    lines = [json.loads(line) for line in capsys.readouterr().out.strip().splitlines() if line.startswith("{")]
    assert [r["run"] for r in lines] == [0, 1]
    for r in lines:
        assert r["frames"] == 6 and r["wall_ms"] > 0 and r["xrt"] > 0
        parts = r["parts_ms"]
        assert {"prompt", "prefill", "code0", "noise", "predictor_call", "predictor_kernel", "talker_step",
                "decode"} <= set(parts)
        assert parts["predictor_kernel"] <= parts["predictor_call"]
        assert r["other_ms"] >= 0
    eng = engines[0]
    for owner, name, _ in cpu_synthesis.parts_of(eng):  # every wrapper taken off again
        assert not hasattr(getattr(owner, name), "timed_part"), (owner, name)
    assert "decode_chunk" not in vars(eng.decoder)
