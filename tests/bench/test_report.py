"""bench/report.py: docs/benchmarks.md is what the raw records and the hand-kept page give, each row its latest run."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from bench import report
from bench.report import Column, Scenario, figure
from bench.scenarios import SCENARIOS

ROOT = Path(__file__).resolve().parents[2]


def test_the_committed_page_is_the_generated_one():
    wanted = report.render(report.TEMPLATE.read_text(encoding="utf-8"), SCENARIOS)
    assert report.PAGE.read_text(encoding="utf-8") == wanted, "run python -m bench.report"


def test_every_scenario_has_its_place_on_the_page():
    assert set(report.PLACEHOLDER.findall(report.TEMPLATE.read_text(encoding="utf-8"))) == set(SCENARIOS)


def test_every_row_the_code_cites_is_on_the_page():
    page = report.PAGE.read_text(encoding="utf-8")
    anchors = set(re.findall(r'<a id="([^"]+)"', page))
    cited = {name for path in ROOT.glob("[!.]*/**/*.py") if ".venv" not in path.parts
             for name in re.findall(r"benchmarks\.md#([a-z0-9-]+)", path.read_text(encoding="utf-8"))}
    assert cited and cited <= anchors, sorted(cited - anchors)


def write(path: Path, records: list[dict]) -> None:
    path.write_text("".join(json.dumps(record) + "\n" for record in records), encoding="utf-8")


SPEED = Scenario(files=("old.jsonl", "new.jsonl"), command="python -m bench.run_all --cores N",
                 row=lambda record: (record["size"],),
                 columns=(Column("size", lambda found, _: found[0]["size"]), Column("×RT", figure("xrt"))))


def run(date: str, commit: str, size: str, *xrt: float, machine: str = "vm") -> list[dict]:
    return [{"date": date, "machine": machine, "commit": commit, "size": size, "xrt": value} for value in xrt]


def test_each_row_shows_its_latest_run_and_its_repeats_as_a_range(tmp_path):
    write(tmp_path / "old.jsonl", run("2026-12-01", "aaa", "0.6B", 1.0) + run("2026-12-01", "aaa", "1.7B", 0.5))
    write(tmp_path / "new.jsonl", run("2026-12-03", "bbb", "0.6B", 2.0, 2.5))
    text = report.table("speed", SPEED, tmp_path)
    assert "| 0.6B | 2.00–2.50 | 2026-12-03 · bbb |" in text
    assert "| 1.7B | 0.50 | 2026-12-01 · aaa |" in text  # the 1.7B was not measured again: its own latest run
    assert "| 1.00 |" not in text and "*Machine*: vm." in text


def test_one_run_names_its_date_and_commit_in_the_caption(tmp_path):
    write(tmp_path / "old.jsonl", run("2026-12-01", "aaa", "0.6B", 1.0))
    write(tmp_path / "new.jsonl", run("2026-12-03", "bbb", "0.6B", 3.0) + run("2026-12-03", "bbb", "1.7B", 1.5))
    text = report.table("speed", SPEED, tmp_path)
    assert "*Measured* 2026-12-03 at bbb." in text and "date · commit" not in text
    assert text.splitlines()[-2:] == ["| 0.6B | 3.00 |", "| 1.7B | 1.50 |"]


def test_a_run_group_keeps_only_the_latest_run_whole(tmp_path):
    scenario = Scenario(**{**SPEED.__dict__, "run_group": lambda record: ()})
    write(tmp_path / "old.jsonl", run("2026-12-01", "aaa", "0.6B", 1.0) + run("2026-12-01", "aaa", "1.7B", 0.5))
    write(tmp_path / "new.jsonl", run("2026-12-03", "bbb", "0.6B", 2.0))
    assert "1.7B" not in report.table("speed", scenario, tmp_path)  # an older run's row never sits beside it


def test_machines_get_a_table_each(tmp_path):
    scenario = Scenario(**{**SPEED.__dict__, "run_group": lambda record: (record["machine"],), "per_machine": True})
    write(tmp_path / "old.jsonl", run("2026-12-01", "aaa", "0.6B", 1.0, machine="zen4"))
    write(tmp_path / "new.jsonl", run("2026-12-03", "bbb", "0.6B", 2.0, machine="xeon"))
    text = report.table("speed", scenario, tmp_path)
    assert "*Machine*: xeon. *Measured* 2026-12-03 at bbb." in text
    assert "*Machine*: zen4. *Measured* 2026-12-01 at aaa." in text


def test_a_table_without_records_or_a_place_without_a_table_is_an_error(tmp_path):
    write(tmp_path / "old.jsonl", [])
    write(tmp_path / "new.jsonl", [])
    with pytest.raises(ValueError, match="no raw record"):
        report.table("speed", SPEED, tmp_path)
    with pytest.raises(ValueError, match="absent"):
        report.render("<!-- table: absent -->\n", {"speed": SPEED}, tmp_path)


def test_a_long_command_breaks_before_an_option():
    block = report.command_block("python -m bench.run_all " + " ".join(f"--option{i} value" for i in range(12)), 60)
    assert block[0] == block[-1] == "```"
    assert all(len(line) <= 62 for line in block) and block[2].startswith("    --option")
