"""The Ray Serve benchmark on the tiny checkpoint (CPU), one quick smoke run: both servers start, serve every
request its forced length, stop, and the rows add up."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("ray.serve")


def test_a_run_against_the_single_server_and_one_replica(tiny_model_dir, tmp_path):
    from bench.run_ray import main

    out = tmp_path / "rows.jsonl"
    rows = main(["--model", str(tiny_model_dir("custom_voice")), "--device", "cpu", "--batch", "2", "--replicas", "1",
                 "--streams", "3", "--frames", "4", "--single", "--client-processes", "1", "--out", str(out)])
    assert [(r["path"], r["replicas"], r["streams"]) for r in rows] == [("single", 1, 3), ("ray", 1, 3)]
    for row in rows:
        assert len(row["ttfa_ms"]) == 3 and row["ttfa_p50_ms"] <= row["ttfa_p95_ms"] <= row["wall_s"] * 1000
        assert row["audio_s_per_s"] == pytest.approx(3 * 4 / 12.5 / row["wall_s"])
    assert [json.loads(line) for line in out.read_text().splitlines()] == rows
