"""The benchmark's shared record, statistics, timing, JSON lines, table and command line (CPU only)."""

import json
import time

import pytest

from bench.common import (
    FIRST_CHUNK_SIZES,
    Result,
    Stopwatch,
    format_table,
    median,
    model_size_label,
    peak_memory_gb,
    read_jsonl,
    real_time_factor,
    run_cli,
    write_jsonl,
)


def make_result(system="sys-a", ms_per_frame=12.5, ttfa=None, **overrides):
    fields = dict(
        system=system, model_size="0.6B", mode="eager", n_frames=250, ms_per_frame=ms_per_frame, xrt=6.4,
        ttfa_ms=ttfa if ttfa is not None else {1: 40.0, 2: 55.5, 4: 80.25, 8: 130.0},
        peak_mem_gb=2.345, warmup_s=3.21, load_s=4.0,
        runs={"ms_per_frame": [12.0, 12.5, 13.0], "xrt": [6.5, 6.4, 6.1]}, device="fake", notes="n",
    )
    fields.update(overrides)
    return Result(**fields)


def test_median_of_odd_and_even_counts():
    assert median([3.0, 1.0, 2.0]) == 2.0
    assert median([4.0, 1.0, 3.0, 2.0]) == 2.5


def test_median_of_nothing_is_an_error():
    with pytest.raises(ValueError):
        median([])


def test_real_time_factor_counts_12_5_frames_per_audio_second():
    assert real_time_factor(125, 5.0) == pytest.approx(2.0)
    assert real_time_factor(25, 4.0) == pytest.approx(0.5)


def test_result_round_trips_through_json_with_integer_chunk_keys():
    result = make_result()
    back = Result.from_json(result.to_json())
    assert back == result
    assert set(back.ttfa_ms) == {1, 2, 4, 8}


def test_write_jsonl_appends_one_record_a_line(tmp_path):
    path = tmp_path / "results.jsonl"
    write_jsonl([make_result("a")], path)
    write_jsonl([make_result("b"), make_result("c", ms_per_frame=None)], path)
    lines = path.read_text().splitlines()
    assert len(lines) == 3
    assert [r.system for r in read_jsonl(path)] == ["a", "b", "c"]
    assert read_jsonl(path)[2].ms_per_frame is None


def test_table_has_a_row_per_result_with_medians_in_column_order():
    table = format_table([make_result("a"), make_result("b", ms_per_frame=None, ttfa={1: 9.0})])
    lines = table.splitlines()
    assert len(lines) == 4
    header = [cell.strip() for cell in lines[0].strip("|").split("|")]
    assert header[:6] == ["system", "size", "mode", "frames", "ms/frame", "×RT"]
    assert header[6:10] == [f"TTFA@{c} ms" for c in FIRST_CHUNK_SIZES]
    row_a = [cell.strip() for cell in lines[2].strip("|").split("|")]
    assert len(row_a) == len(header)
    assert row_a[:10] == ["a", "0.6B", "eager", "250", "12.50", "6.40", "40.0", "55.5", "80.2", "130.0"]
    assert row_a[10:] == ["2.35", "3.2", "4.0", "n"]
    row_b = [cell.strip() for cell in lines[3].strip("|").split("|")]
    assert row_b[4] == "–"  # missing figure
    assert row_b[6:10] == ["9.0", "–", "–", "–"]


def test_table_shows_only_the_chunk_sizes_asked_for():
    header = format_table([make_result()], chunk_sizes=[2]).splitlines()[0]
    assert "TTFA@2 ms" in header
    assert "TTFA@1 ms" not in header


def test_stopwatch_measures_the_block_on_cpu():
    with Stopwatch("cpu") as watch:
        time.sleep(0.05)
    assert 0.05 <= watch.seconds < 1.0
    assert watch.ms == pytest.approx(watch.seconds * 1000)


def test_peak_memory_on_cpu_is_the_processes_peak_resident_memory():
    import resource

    before = peak_memory_gb("cpu")
    block = bytearray(300 * 1024 * 1024)  # touched: resident
    block[::4096] = b"x" * len(block[::4096])
    after = peak_memory_gb("cpu")
    assert before > 0.01 and after >= before and after > 0.3
    assert after == resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024 / 1e9


def test_model_size_label_reads_the_config(tmp_path):
    (tmp_path / "config.json").write_text(json.dumps({"tts_model_size": "1b7"}))
    assert model_size_label(tmp_path) == "1.7B"


def test_run_cli_passes_arguments_appends_results_and_prints_the_table(tmp_path, capsys):
    calls = []

    def fake_run(model_dir, frames, runs, text, device, chunk_sizes):
        calls.append((model_dir, frames, runs, text, device, list(chunk_sizes)))
        return [make_result("fake", n_frames=frames)]

    out = tmp_path / "r.jsonl"
    run_cli(fake_run, "test", ["--model", "m", "--frames", "40", "--runs", "5", "--text", "hi",
                               "--device", "cpu", "--chunks", "1", "4", "--out", str(out)])
    assert calls == [("m", 40, 5, "hi", "cpu", [1, 4])]
    assert read_jsonl(out)[0].n_frames == 40
    printed = capsys.readouterr().out
    assert "| fake |" in printed
    assert "TTFA@4 ms" in printed and "TTFA@8 ms" not in printed


def test_run_cli_refuses_fewer_frames_than_the_largest_first_chunk():
    with pytest.raises(SystemExit):
        run_cli(lambda *a, **k: [], "test", ["--model", "m", "--frames", "4"])
