"""The GPU timeline's arithmetic on hand-made spans (union, idle gaps, two streams at once, idle time charged
to the loop's phases), and its clock: the loop's phases noted with perf_counter land at the right place on
the profiler trace's clock (CPU)."""

from __future__ import annotations

import time

import pytest
import torch

from bench.tuning.gpu_timeline import charge, excerpt, gaps, overlapped, traced, union, window


def test_union_merges_touching_and_overlapping_spans():
    assert union([(5, 7), (0, 2), (1, 3), (3, 4), (9, 10)]) == [(0, 4), (5, 7), (9, 10)]


def test_gaps_are_what_the_busy_spans_leave_of_the_window():
    busy = [(0, 4), (5, 7), (9, 12)]
    assert gaps(busy, 1, 11) == [(4, 5), (7, 9)]
    assert gaps(busy, -2, 14) == [(-2, 0), (4, 5), (7, 9), (12, 14)]
    assert gaps([], 0, 3) == [(0, 3)]


def test_overlap_counts_only_time_when_two_streams_run_at_once():
    assert overlapped([[(0, 10)], [(2, 4), (8, 12)], [(3, 5)]]) == 3 + 2  # (2, 5) and (8, 10)
    assert overlapped([[(0, 1)], [(1, 2)]]) == 0


def test_idle_time_is_split_among_the_phases_running_during_it():
    phases = [("step", 0, 10), ("collect", 10, 12), ("decode", 12, 15), ("wait", 15, 20)]
    assert charge([(9, 13), (16, 18), (19, 25)], phases) == {"step": 1, "collect": 2, "decode": 1, "wait": 3,
                                                           "none": 5}


def test_window_reports_busy_idle_overlap_per_stream_and_idle_by_phase():
    events = [{"ts": 0, "dur": 10, "name": "step_kernel", "args": {"stream": 7}},
              {"ts": 12, "dur": 6, "name": "step_kernel", "args": {"stream": 7}},
              {"ts": 5, "dur": 10, "name": "decode_kernel", "args": {"stream": 13}},
              {"ts": 50, "dur": 10, "name": "outside", "args": {"stream": 7}}]
    phases = [("step", 0, 10), ("collect", 10, 11), ("decode", 11, 12), ("step", 12, 20)]
    found = window(events, phases, 0, 20)
    assert found["ms"] == pytest.approx(0.02) and found["iterations"] == 2
    assert found["busy_ms"] == pytest.approx(0.018) and found["idle_ms"] == pytest.approx(0.002)
    assert found["overlap_ms"] == pytest.approx(0.008)  # (5, 10) and (12, 15)
    assert found["streams"]["7"] == {"busy_ms": pytest.approx(0.016), "events": 2, "main_event": "step_kernel"}
    assert found["streams"]["13"]["busy_ms"] == pytest.approx(0.01)
    assert found["idle_ms_by_phase"] == {"step": pytest.approx(0.002)}  # (18, 20)


class _Loop:
    phase_timer = None


def test_phases_land_on_the_trace_clock():
    """A phase noted with perf_counter is placed within a millisecond of a profiler annotation made at
    the same moment: the offset between the two clocks is right."""
    loop = _Loop()

    def run():
        with torch.profiler.record_function("same-moment"):
            loop.phase_timer("step")
        time.sleep(0.01)
        loop.phase_timer("wait")
        return [1.0], 0.01

    found, events, marks, offset = traced(loop, run)
    assert found == {"ttfa_ms": [1.0], "wall_s": 0.01} and loop.phase_timer is None
    assert [name for name, _ in marks.marks] == ["step", "wait"]
    (step, step_start, step_end), (wait, wait_start, _) = marks.spans(offset, until_us=1e18)
    annotation = next(e for e in events if e.get("name") == "same-moment")
    assert annotation["ts"] <= step_start <= annotation["ts"] + annotation["dur"] + 1000
    assert step_end == wait_start and wait_start - step_start >= 10_000  # µs: the sleep between the two


def test_measure_charges_a_whole_run_to_the_loop_phases(tiny_model_dir):
    """Through a real ``BatchedStreams`` on the CPU (no device events): the whole run is idle device time,
    and every millisecond of it goes to a loop phase that the loop really ran."""
    from bench.run_batch import warm_streams
    from bench.tuning.gpu_timeline import measure
    from bench.tuning.profile_batch import PHASES

    _, streams = warm_streams(str(tiny_model_dir("custom_voice")), "cpu", 2)
    report = measure(streams, 2, 8)
    assert report["streams"] == 2 and report["audio_s_per_s"] > 0 and report["traced_wall_s"] > 0
    assert 0 < report["ttfa_p50_ms"] <= report["ttfa_p95_ms"]
    run = report["windows"]["run"]
    assert run["busy_ms"] == 0 and run["streams"] == {} and run["idle_ms"] == pytest.approx(run["ms"], abs=0.01)
    assert run["iterations"] >= 2  # single frames until both streams begin, then 4 at a time
    assert set(run["idle_ms_by_phase"]) <= set(PHASES)
    assert sum(run["idle_ms_by_phase"].values()) == pytest.approx(run["idle_ms"], abs=0.01)


def test_excerpt_keeps_the_raw_spans_of_its_window_in_order():
    events = [{"ts": 30, "dur": 5, "name": "late", "args": {"stream": 13}},
              {"ts": 10, "dur": 4, "name": "k" * 100, "args": {"stream": 7}},
              {"ts": 100, "dur": 5, "name": "outside", "args": {"stream": 7}}]
    phases = [("wait", 0, 5), ("step", 5, 40), ("collect", 40, 200)]
    found = excerpt(events, phases, 5, 50)
    assert found["phases"] == [["step", 0, 0.035], ["collect", 0.035, 0.195]]
    assert found["events"] == [[7, 0.005, 0.004, "k" * 80], [13, 0.025, 0.005, "late"]]
