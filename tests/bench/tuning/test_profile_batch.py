"""The many-streams loop profile on a tiny checkpoint (CPU): every phase is reported, and the phases
add up to the loop's wall time."""

from __future__ import annotations

import json

import pytest

from bench.tuning.profile_batch import PHASES, main
from engine.core.frames.batched import LOOP_FRAMES

STREAMS, FRAMES = 3, 8


@pytest.mark.parametrize("extra", [[], ["--trickle", "40", "--http"]], ids=["engine", "http-trickle"])
def test_phases_cover_the_loop_wall_time(tiny_model_dir, capsys, extra):
    main(["--model", str(tiny_model_dir("custom_voice")), "--streams", str(STREAMS), "--frames", str(FRAMES),
          "--device", "cpu", *extra])
    report = json.loads(capsys.readouterr().out)
    assert report["path"] == ("http" if extra else "engine") and report["trickle_ms"] == (40 if extra else 0)
    assert report["clients"] == ("separate process" if extra else "in process")
    assert report["decoder_dtype"] == "float32"
    phases = report["phases_s"]
    assert set(phases) == set(PHASES) and all(t >= 0 for t in phases.values())
    assert phases["step"] > 0 and phases["decode"] > 0
    assert sum(phases.values()) == pytest.approx(report["loop_s"])
    # the loop's phases are timed inside the profiled span (how close the two come depends on the machine's load)
    assert 0 < report["loop_s"] <= report["profiled_s"]
    assert sum(report["phases_share"].values()) == pytest.approx(1)
    assert sum(report["rows_per_admission"]) == STREAMS == len(report["ttfa_ms"])
    assert len(report["ms_per_admission"]) == report["admissions"] >= 1
    per_iteration = report["frames_per_iteration"]
    assert sum(per_iteration.values()) == report["iterations"] and set(per_iteration) <= {"1", str(LOOP_FRAMES)}
    assert 0 < report["ttfa_p50_ms"] <= report["ttfa_p95_ms"]
    assert report["audio_s_per_s"] == pytest.approx(STREAMS * FRAMES / 12.5 / report["wall_s"])
    # one prompt built per request (one segment each; at admission or while a step runs: several a call), one
    # decoder-row write per admission
    prompts, rows = report["prompt_builds"], report["decoder_row_writes"]
    assert prompts["items"] == STREAMS and 1 <= prompts["calls"] <= STREAMS and rows["calls"] == report["admissions"]
    assert 0 < prompts["ms_total"] + rows["ms_total"] <= 1000 * (phases["admit"] + phases["build"])
    timeline = report["timeline"]
    assert timeline and {phase for phase, _, _ in timeline} <= set(PHASES)
    assert "admit" in {phase for phase, _, _ in timeline}
    starts = [start for _, start, _ in timeline]
    assert starts == sorted(starts) and starts[0] >= 0
    for (_, start, ms), (_, following, _) in zip(timeline, timeline[1:], strict=False):
        assert start + ms == pytest.approx(following, abs=0.02)  # each phase runs until the next begins


def test_ops_lists_what_the_admissions_spent_their_time_on(tiny_model_dir, capsys):
    """``--ops N``: the N operations of all admissions with the most host time, costliest first; the talker's
    prefill (matrix products and attention, or a lone joiner's rows through the Numba kernel) is among them."""
    from engine.core.cpu.one_position_numba import ROWS_EVENT

    main(["--model", str(tiny_model_dir("custom_voice")), "--streams", "2", "--frames", "4", "--device", "cpu",
          "--ops", "12"])
    ops = json.loads(capsys.readouterr().out)["admission_ops"]
    assert len(ops) == 12
    assert all(op["calls"] >= 1 and op["host_ms"] >= 0 for op in ops)
    assert [op["host_ms"] for op in ops] == sorted((op["host_ms"] for op in ops), reverse=True)
    names = {op["name"] for op in ops}
    assert names & {"aten::linear", "aten::mm", "aten::addmm", "aten::matmul", "aten::scaled_dot_product_attention",
                    "aten::_scaled_dot_product_flash_attention_for_cpu", "aten::bmm", ROWS_EVENT}


def test_kernels_needs_a_gpu(capsys):
    """``--kernels N`` profiles CUDA graph replays (run on the device): asked for on the CPU, it says so
    before loading anything."""
    with pytest.raises(SystemExit):
        main(["--model", "unused", "--device", "cpu", "--kernels", "5"])
    assert "--kernels profiles CUDA graph replays" in capsys.readouterr().err


def test_syncs_needs_a_gpu(capsys):
    with pytest.raises(SystemExit):
        main(["--model", "unused", "--device", "cpu", "--syncs", "5"])
    assert "--syncs counts host-GPU synchronisations" in capsys.readouterr().err


def test_sync_tally_counts_the_sync_warnings_by_line_and_thread(monkeypatch):
    """``SyncTally`` counts the sync debug mode's warnings (and no others) under ``watch``, by the line that
    raised them and by thread, and leaves the debug mode off afterwards (the mode itself needs CUDA: here
    the warnings are raised by hand)."""
    import threading
    import warnings

    import torch

    from bench.tuning.profile_batch import SyncTally

    modes = []
    monkeypatch.setattr(torch.cuda, "set_sync_debug_mode", modes.append)

    def admission():
        for _ in range(3):
            warnings.warn("called a synchronizing CUDA operation", stacklevel=1)  # line A
        warnings.warn("something else", stacklevel=1)
        other = threading.Thread(target=lambda: warnings.warn("called a synchronizing CUDA operation", stacklevel=1))
        other.start()
        other.join()
        return "slots"

    tally = SyncTally()
    assert tally.watch(admission) == "slots"
    assert modes == ["warn", "default"]
    top = tally.top(5)
    assert [(row["thread"], row["count"]) for row in top] == [("watched", 3), ("other", 1)]
    line_a = next(i for i, text in enumerate(open(__file__), 1) if text.rstrip().endswith("# line A"))
    assert top[0]["site"] == f"{__file__}:{line_a}"
