"""When the many-streams loop leaves the GPU idle, and what the loop thread was doing then: N concurrent
streams through a warmed-up ``BatchedStreams``, unsynchronised as when serving, with every kernel and copy
on the device traced (``torch.profiler``, CUDA activity) and the loop's phases (``phase_timer``) put on
the trace's clock. ``bench.tuning.profile_batch`` synchronises every phase, so its phases add up as if nothing
overlapped. This tool measures the overlap itself: how long some stream ran device work, how long two
streams ran at once (a step and the previous iteration's decode), and how long the GPU stood idle. Each
idle span is charged to the loop phases that ran during it.

    python -m bench.tuning.gpu_timeline --model DIR [--streams 64 128] [--frames 150] [--decoder-dtype bfloat16]

Each stream count runs twice: once unprofiled, for the throughput and first audio the profiler cannot
slow (``wall_s``, ``audio_s_per_s``, ``ttfa_p50_ms``, ``ttfa_p95_ms``), then traced (``traced_wall_s``).
Prints one JSON object a stream count. It has two windows: ``run``, from the first request to the last
end, and ``steady``, the middle half of the frame steps, past the admissions. A window gives its wall
ms, iterations, ms per iteration, GPU busy, idle and overlap ms, each CUDA stream's busy ms, kernel count
and main kernel, and ``idle_ms_by_phase``. ``--excerpt N`` adds the raw trace of N iterations from the
steady window's start (``excerpt``: phases and device events, ms from its start), to see the order in
which the streams' work ran. Needs a GPU.
"""

from __future__ import annotations

import argparse
import bisect
import functools
import json
import os
import tempfile
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Sequence

import torch

from bench.clients import concurrently
from bench.common import audio_seconds, device_name
from bench.run_batch import engine_requests, percentile, warm_streams
from engine.core.engine import DECODER_DTYPE_NAMES

DEVICE_CATEGORIES = ("kernel", "gpu_memcpy", "gpu_memset")  # the chrome trace's device-side events
CLOCK_MARK = "orator:clock"  # host annotations bracketed by perf_counter_ns() reads: the two clocks' offset
CLOCK_MARKS = 20


def stream_of(event: dict) -> int:
    """The CUDA stream a device event of the trace ran on."""
    return int(event.get("args", {}).get("stream", event.get("tid", -1)))


def union(spans: Sequence[tuple[float, float]]) -> list[tuple[float, float]]:
    """The disjoint sorted spans covering the same time as ``spans`` ((start, end) pairs)."""
    merged: list[list[float]] = []
    for start, end in sorted(spans):
        if merged and start <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], end)
        else:
            merged.append([start, end])
    return [(s, e) for s, e in merged]


def clip(spans: Sequence[tuple[float, float]], lo: float, hi: float) -> list[tuple[float, float]]:
    """``spans`` cut to [lo, hi], the empty ones dropped."""
    return [(max(s, lo), min(e, hi)) for s, e in spans if min(e, hi) > max(s, lo)]


def total(spans: Sequence[tuple[float, float]]) -> float:
    return sum(e - s for s, e in spans)


def gaps(busy: Sequence[tuple[float, float]], lo: float, hi: float) -> list[tuple[float, float]]:
    """The spans of [lo, hi] that the disjoint sorted ``busy`` leaves uncovered."""
    out, at = [], lo
    for start, end in busy:
        if start > at:
            out.append((at, min(start, hi)))
        at = max(at, end)
        if at >= hi:
            break
    if at < hi:
        out.append((at, hi))
    return [(s, e) for s, e in out if e > s]


def overlapped(per_stream: Sequence[Sequence[tuple[float, float]]]) -> float:
    """The time during which at least two of the streams (each a disjoint span list) are busy at once."""
    edges = sorted((t, d) for spans in per_stream for s, e in spans for t, d in ((s, 1), (e, -1)))
    both, depth, since = 0.0, 0, 0.0
    for t, d in edges:
        if depth >= 2:
            both += t - since
        depth += d
        since = t
    return both


def charge(idle: Sequence[tuple[float, float]], phases: Sequence[tuple[str, float, float]]) -> dict[str, float]:
    """Each idle span's time split among the phases ((name, start, end), sorted and contiguous) running
    during it; the time no phase covers goes to "none"."""
    starts = [s for _, s, _ in phases]
    charged: dict[str, float] = defaultdict(float)
    for lo, hi in idle:
        covered = 0.0
        i = max(bisect.bisect_right(starts, lo) - 1, 0)
        while i < len(phases) and phases[i][1] < hi:
            name, s, e = phases[i]
            part = min(e, hi) - max(s, lo)
            if part > 0:
                charged[name] += part
                covered += part
            i += 1
        if hi - lo - covered > 1e-9:
            charged["none"] += hi - lo - covered
    return dict(charged)


def end_of(event: dict) -> float:
    """When a trace event ended (µs on the trace's clock)."""
    return event["ts"] + event["dur"]


def overlapping(device_events: list[dict], lo: float, hi: float) -> list[dict]:
    """The events that ran during [lo, hi], in order of start."""
    return sorted((e for e in device_events if end_of(e) > lo and e["ts"] < hi), key=lambda e: e["ts"])


def window(device_events: list[dict], phases: list[tuple[str, float, float]], lo: float, hi: float) -> dict:
    """The device's use over [lo, hi] (µs on the trace's clock): busy, idle and overlap, per stream, and the
    idle time charged to the loop's phases."""
    by_stream: dict[int, list[tuple[float, float]]] = defaultdict(list)
    names: dict[int, Counter] = defaultdict(Counter)
    for e in overlapping(device_events, lo, hi):
        stream = stream_of(e)
        by_stream[stream].append((e["ts"], end_of(e)))
        names[stream][e["name"][:60]] += 1
    per_stream = {s: union(clip(spans, lo, hi)) for s, spans in by_stream.items()}
    busy = union([span for spans in per_stream.values() for span in spans])
    idle = gaps(busy, lo, hi)
    steps = sum(1 for name, s, _ in phases if name == "step" and lo <= s < hi)
    ms = (hi - lo) / 1000
    return {
        "ms": round(ms, 3),
        "iterations": steps,
        "ms_per_iteration": round(ms / steps, 3) if steps else None,
        "busy_ms": round(total(busy) / 1000, 3),
        "idle_ms": round(total(idle) / 1000, 3),
        "idle_share": round(total(idle) / (hi - lo), 4) if hi > lo else None,
        "overlap_ms": round(overlapped(list(per_stream.values())) / 1000, 3),
        "streams": {str(s): {"busy_ms": round(total(spans) / 1000, 3), "events": sum(names[s].values()),
                             "main_event": names[s].most_common(1)[0][0]}
                    for s, spans in sorted(per_stream.items())},
        "idle_ms_by_phase": {name: round(us / 1000, 3)
                             for name, us in sorted(charge(idle, phases).items(), key=lambda kv: -kv[1])},
    }


class PhaseMarks:
    """``BatchedStreams.phase_timer`` that only notes each phase's name and perf_counter_ns() start: no
    synchronisation, so the loop runs as it does when serving."""

    def __init__(self):
        self.marks: list[tuple[str, int]] = []

    def __call__(self, phase: str) -> None:
        self.marks.append((phase, time.perf_counter_ns()))

    def spans(self, offset_us: float, until_us: float) -> list[tuple[str, float, float]]:
        """(name, start, end) on the trace's clock (µs): perf_counter_ns / 1000 + ``offset_us``; the last
        phase runs until ``until_us``."""
        starts = [(name, ns / 1000 + offset_us) for name, ns in self.marks]
        ends = [s for _, s in starts[1:]] + [until_us]
        return [(name, s, e) for (name, s), e in zip(starts, ends, strict=True)]


def traced(streams, run: Callable[[], tuple[list[float], float]]) -> tuple[dict, list[dict], PhaseMarks, float]:
    """``run()`` with the device traced and the loop's phases noted: (its result as {"ttfa_ms", "wall_s"},
    the trace's events, the phases, the µs to add to perf_counter_ns() / 1000 for the trace's clock)."""
    from torch.profiler import ProfilerActivity, profile, record_function

    marks = PhaseMarks()
    cuda = torch.cuda.is_available()
    activities = [ProfilerActivity.CPU, *([ProfilerActivity.CUDA] if cuda else [])]
    with profile(activities=activities) as prof:
        brackets = []  # perf_counter_ns() around each clock mark: the tightest places its start best
        for i in range(CLOCK_MARKS):
            before = time.perf_counter_ns()
            with record_function(f"{CLOCK_MARK}{i}"):
                pass
            brackets.append((time.perf_counter_ns() - before, i, before))
        streams.phase_timer = marks
        try:
            ttfa, wall = run()
        finally:
            streams.phase_timer = None
        if cuda:
            torch.cuda.synchronize()
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "trace.json")
        prof.export_chrome_trace(path)
        with open(path, encoding="utf-8") as f:
            events = json.load(f)["traceEvents"]
    _, best, before = min(brackets)
    mark = next(e for e in events if e.get("name") == f"{CLOCK_MARK}{best}")
    return {"ttfa_ms": ttfa, "wall_s": wall}, events, marks, mark["ts"] - before / 1000


def excerpt(device_events: list[dict], phases: list[tuple[str, float, float]], lo: float, hi: float) -> dict:
    """The raw trace over [lo, hi], times in ms from ``lo``: the phases [name, start, end] and the device
    events [stream, start, ms, name], in order of start."""
    def ms(t: float) -> float:
        return round((t - lo) / 1000, 4)

    return {"phases": [[name, ms(s), ms(e)] for name, s, e in phases if e > lo and s < hi],
            "events": [[stream_of(e), ms(e["ts"]), round(e["dur"] / 1000, 4), e["name"][:80]]
                       for e in overlapping(device_events, lo, hi)]}


def measure(streams, n: int, frames: int, excerpt_iterations: int = 0) -> dict:
    """One stream count: unprofiled throughput, then the traced run's windows; with ``excerpt_iterations``,
    the raw trace of that many iterations from the steady window's start (``excerpt``)."""
    request = engine_requests(streams, frames)
    ttfa, wall = concurrently(n, request)
    found, events, marks, offset = traced(streams, functools.partial(concurrently, n, request))
    device_events = [e for e in events if e.get("cat") in DEVICE_CATEGORIES and e.get("ph") == "X"]
    start, last = (ns / 1000 + offset for ns in (marks.marks[0][1], marks.marks[-1][1]))  # the loop's phases
    end = max([end_of(e) for e in device_events] + [last])
    phases = marks.spans(offset, end)
    steps = [s for name, s, _ in phases if name == "step"]
    report = {"streams": n, "frames": frames, "wall_s": wall,
              "audio_s_per_s": n * audio_seconds(frames) / wall,
              "ttfa_p50_ms": percentile(ttfa, 50), "ttfa_p95_ms": percentile(ttfa, 95),
              "traced_wall_s": found["wall_s"],
              "traced_audio_s_per_s": n * audio_seconds(frames) / found["wall_s"],
              "windows": {"run": window(device_events, phases, start, end)}}
    if len(steps) >= 8:
        quarter = len(steps) // 4
        report["windows"]["steady"] = window(device_events, phases, steps[quarter], steps[len(steps) - quarter])
        if excerpt_iterations:
            stop = steps[min(quarter + excerpt_iterations, len(steps) - 1)]
            report["excerpt"] = excerpt(device_events, phases, steps[quarter], stop)
    return report


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", required=True)
    ap.add_argument("--streams", type=int, nargs="+", default=[64])
    ap.add_argument("--frames", type=int, default=150)
    ap.add_argument("--decoder-dtype", default="float32", choices=DECODER_DTYPE_NAMES,
                    help="the codec decoder's precision (default float32)")
    ap.add_argument("--excerpt", type=int, default=0, metavar="N",
                    help="also the raw trace (phases, device events) of N steady iterations")
    args = ap.parse_args(argv)
    if not torch.cuda.is_available():
        ap.error("the timeline traces CUDA streams: it needs a GPU")
    _, streams = warm_streams(args.model, "cuda", max(args.streams), args.decoder_dtype)
    for n in args.streams:
        report = {"model": args.model, "device": device_name("cuda"), "decoder_dtype": args.decoder_dtype,
                  "slots": streams.slots, "warmup_s": streams.warmup_seconds,
                  **measure(streams, n, args.frames, args.excerpt)}
        print(json.dumps(report), flush=True)


if __name__ == "__main__":
    main()
