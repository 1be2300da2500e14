"""bench/report.py: docs/benchmarks.md is what the raw records and the hand-kept page give, each row its latest run."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from bench import report
from bench.scenarios import SCENARIOS
from bench.tables import Column, Scenario, figure

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
    command = "python -m bench.run_all " + " ".join(f"--option{i} value" for i in range(12))
    block = report.command_block(command, width=60)
    assert block[0] == block[-1] == "```"
    assert all(len(line) <= 62 for line in block) and block[2].startswith("    --option")


def test_every_raw_file_backs_a_row_the_page_shows_and_prose_lines_stay_short():
    page = report.PAGE.read_text(encoding="utf-8")
    linked = set(re.findall(r"\]\(benchmarks/([^)#]+)\)", page))
    raw = {path.name for path in report.RAW.iterdir() if path.name != report.TEMPLATE.name}
    assert raw == linked, (sorted(raw - linked), sorted(linked - raw))
    assert [line for line in page.splitlines() if len(line) > 200 and not line.startswith("|")] == []


def side_by_side(variant: str, system: str, xrt: float, **extra) -> dict:
    return {"date": "2026-12-07", "machine": "xeon host, 2 cores", "commit": "ccc", "cores": 2, "system": system,
            "model_size": "0.6B", "variant": variant, "ms_per_frame": 80.0 / xrt, "xrt": xrt,
            "ttfa_ms": {"1": 400.0, "4": 700.0}, "peak_mem_gb": 2.0, **extra}


def test_a_side_by_side_scenario_shows_a_row_per_system_and_variant(tmp_path):
    write(tmp_path / "cpu-2-cores-xeon-avx2.jsonl", [
        side_by_side("AVX-512", "Orator", 0.8), side_by_side("AVX-512", "official qwen-tts-hf 0.1.1", 0.2),
        side_by_side("AVX2", "Orator", 0.5), side_by_side("AVX2", "official qwen-tts-hf 0.1.1", 0.25),
        side_by_side("AVX2", "Orator", 0.1, counted=False),  # a process that compiled its kernels
    ])
    text = report.table("cpu-avx2", SCENARIOS["cpu-avx2"], tmp_path)
    rows = [line for line in text.splitlines() if line.startswith("| ") and "---" not in line][1:]
    assert [row.split(" | ")[:2] for row in rows] == [
        ["| Orator", "AVX-512"], ["| official qwen-tts-hf 0.1.1", "AVX-512"],
        ["| Orator", "AVX2"], ["| official qwen-tts-hf 0.1.1", "AVX2"]]
    assert "| 0.50 | 400.0 | 2.00 | 2.00× |" in rows[2]  # against the official code of its own variant
    assert "0.10" not in text and "*Measured* 2026-12-07 at ccc." in text


def test_a_side_by_side_scenario_dates_each_row_where_its_commits_differ(tmp_path):
    write(tmp_path / "cpu-one-engine-xeon8.jsonl", [
        side_by_side("main 3f43688", "Orator", 2.0, cores=8, commit="3f43688"),
        side_by_side("main 89f88a5", "Orator", 2.5, cores=8, commit="89f88a5"),
        side_by_side("", "official qwen-tts-hf 0.1.1", 0.5, cores=8, commit="89f88a5")])
    text = report.table("cpu-one-engine", SCENARIOS["cpu-one-engine"], tmp_path)
    assert "| Orator | main 3f43688 | 0.6B | 8 |" in text and "4.00× | 2026-12-07 · 3f43688 |" in text
    assert "| Orator | main 89f88a5 | 0.6B | 8 |" in text and "5.00× | 2026-12-07 · 89f88a5 |" in text
    assert "| official qwen-tts-hf 0.1.1 | – | 0.6B | 8 | 160.0 | 0.50 | 400.0 (whole) | 2.00 |  |" in text


def test_a_cold_start_row_per_cache_state_and_the_records_own_command(tmp_path):
    command = "python -m bench.cold_start --model DIR --cores 2"
    bridge = "CustomVoice 0.6B on cpu, fast: numba-int8 (int8 weights; bridge: torch-int8 until a warm-up process ...)"
    write(tmp_path / "cpu-cold-start.jsonl", [
        {**side_by_side("cold", "Orator", 0.3), "load_s": 8.5, "first_audio_s": 11.25, "warmup_s": 95.0,
         "welcome_s": 7.5, "plan": bridge, "command": command},
        {**side_by_side("cached", "Orator", 0.7), "load_s": 6.0, "first_audio_s": 7.0, "welcome_s": 3.25,
         "plan": "CustomVoice 0.6B on cpu, fast: numba-int8 (int8 weights)", "command": command}])
    text = report.table("cpu-cold-start", SCENARIOS["cpu-cold-start"], tmp_path)
    assert text.splitlines()[:3] == ["```", command, "```"]
    assert "| cold | 0.6B | 2 | 8.50 | 11.2 | 95.0 | 7.50 | torch-int8 while numba-int8 compiles |" in text
    assert "| cached | 0.6B | 2 | 6.00 | 7.00 | – | 3.25 | numba-int8 |" in text
    assert text.index("| cold |") < text.index("| cached |")


def test_an_optional_scenario_without_its_file_is_not_measured_yet(tmp_path):
    for name in ("cpu-one-engine", "cpu-avx2", "cpu-cold-start"):
        text = report.table(name, SCENARIOS[name], tmp_path)
        assert text.startswith("*Not measured yet*") and "](" not in text  # no link to a file that is not there
