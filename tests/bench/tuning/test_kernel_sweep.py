"""The sweeps' report: one line per measurement as it is made, without its grid of every configuration, and the
whole, grid included, in the output file."""

from __future__ import annotations

import json

from bench.tuning.kernel_sweep import report


def test_report_prints_each_measurement_as_it_comes_and_writes_them_all(tmp_path, capsys):
    printed_before = []

    def measurements():
        for i in range(3):
            yield {"case": i, "best_us": 1.5 * i, "all": {"(1, 2)": 1.5 * i, "(2, 4)": 9.0}}
            printed_before.append(capsys.readouterr().out)  # what was printed before the next is measured

    out = tmp_path / "sweep.json"
    done = report(measurements(), str(out))
    lines = [json.loads(text) for text in printed_before]
    assert lines == [{"case": i, "best_us": 1.5 * i} for i in range(3)]
    assert json.loads(out.read_text()) == done and [m["all"]["(2, 4)"] for m in done] == [9.0] * 3
