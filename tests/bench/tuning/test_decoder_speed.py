"""bench/tuning/decoder_speed.py on the tiny checkpoint on CPU: one JSON line per (dtype, rows, frames) with the
time of a real decode and the audio-seconds per second it implies."""

from __future__ import annotations

import json

from bench.tuning import decoder_speed


def test_prints_one_timed_line_per_configuration(tiny_model_dir, capsys):
    decoder_speed.main(["--model", str(tiny_model_dir()), "--rows", "1", "3", "--frames", "2", "--dtypes", "float32",
                        "--device", "cpu"])
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [(x["dtype"], x["rows"], x["frames"]) for x in lines] == [("float32", 1, 2), ("float32", 3, 2)]
    for x in lines:
        assert x["ms"] > 0
        implied = x["rows"] * x["frames"] / 12.5 / (x["ms"] / 1000)
        assert abs(x["audio_s_per_s"] - implied) <= 0.05 * implied + 0.1
