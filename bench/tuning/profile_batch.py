"""Where the many-streams loop's wall time goes: N concurrent streams through a warmed-up ``BatchedStreams``
(or through the HTTP server in front of it), with the loop thread's every phase timed
(``BatchedStreams.phase_timer``, each phase boundary synchronised with the device): waiting for and taking
requests, admission (batched prefill), frame steps, building the prompts of requests that came meanwhile,
collecting codes and ends, the batched decode, and handing chunks out. Prints one JSON object: seconds per
phase in all and per iteration, counts (iterations, admissions, rows per admission, frames per iteration,
rows per step), the time spent building prompts (at admissions, or while a step runs) and writing the
joining rows' decoder state (``put_rows``, ``clear_rows``), the first phases after the requests start as a
timeline (name, start, length), and the resulting audio-seconds per second and p50/p95 time to first
audio.

    python -m bench.tuning.profile_batch --model DIR [--streams 64] [--frames 150] [--trickle MS] [--http] [--ops N]
                                  [--syncs N] [--kernels N] [--decoder-dtype bfloat16] [--device cuda]

With ``--http`` the clients run in a process of their own (``bench.clients.ClientProcess``), as in
``bench.run_batch``, started before the loop's clock; the report's ``clients`` says where they ran.

``--trickle MS`` starts the requests MS apart, as HTTP clients arrive, instead of all at once: does
every arrival then get an admission (a prefill that stalls the running streams) of its own?
Synchronising each phase costs the loop its overlap of host and device work and of each decode with the
next step (on a GPU the decode runs on a stream of its own), so the profiled throughput is a lower bound
of ``bench.run_batch``'s and the phases add up as if nothing overlapped.

``--kernels N`` then profiles replays of the step graph of the streams' bucket (one frame of every row)
and of its decode graph of ``LOOP_FRAMES`` frames (the loop's), each with its kernels per replay, their device
time and the N costliest (``bench.tuning.profile_orator.replay_kernels``): what a batched frame and a batched decode
spend the GPU on.

``--syncs N`` runs every admission in CUDA's sync debug mode and lists the N lines of the engine that
made the host wait for the GPU most often (blocking host-to-device copies, reads of device values), by
thread: the loop's, or a caller's building its prompt meanwhile.

``--ops N`` also runs every admission under ``torch.profiler`` and lists its N costliest operations by
host time (with their device time): what an admission spends its time on. The profiler slows the
admissions it watches, so their times are then upper bounds.
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import threading
import time
import traceback
import warnings
from collections import Counter
from collections.abc import Callable

import torch

from bench.clients import ClientProcess, concurrently
from bench.common import DEFAULT_SPEAKER, DEFAULT_TEXT, audio_seconds, device_name
from bench.run_batch import (
    IN_PROCESS,
    SEPARATE_PROCESS,
    WARM_FRAMES,
    engine_requests,
    percentile,
    serving,
    warm_streams,
)
from engine.core.engine import DECODER_DTYPE_NAMES
from engine.core.frames.batched import LOOP_FRAMES

PHASES = ("wait", "admit", "step", "build", "collect", "decode", "handout")
TIMELINE_PHASES = 60  # phases listed from the first request on: where the first audio's time goes


def synchronizer(device: torch.device) -> Callable[[], None]:
    """Waits for the work queued on ``device`` (nothing to wait for on the CPU)."""
    return (lambda: torch.cuda.synchronize(device)) if device.type == "cuda" else (lambda: None)


class PhaseClock:
    """``BatchedStreams.phase_timer``: the wall time from one phase's start to the next's goes to the
    first, read after synchronising the device, so a phase also owns the device work it queued. Attached
    while the loop is idle, it starts in "wait"."""

    def __init__(self, sync: Callable[[], None]):
        self.sync = sync
        self.phases = ["wait"]
        self.spans: list[float] = []  # seconds of phases[i]; the last phase is still running
        self.last = time.perf_counter()
        self.starts = [self.last]  # perf_counter() when phases[i] began

    def __call__(self, phase: str) -> None:
        self.sync()
        now = time.perf_counter()
        self.spans.append(now - self.last)
        self.phases.append(phase)
        self.starts.append(now)
        self.last = now

    def timeline(self, since: float, limit: int) -> list[list]:
        """The first ``limit`` phases begun after ``since`` (a perf_counter() time): [name, start ms after
        ``since``, ms]."""
        spans = zip(self.phases, self.starts, self.spans, strict=False)
        return [[phase, round(1000 * (start - since), 2), round(1000 * span, 2)]
                for phase, start, span in spans if start >= since][:limit]


class CallTimer:
    """Host seconds of every call of a function, each call synchronised with the device at both ends when
    ``sync`` is given: ``wrap(fn)`` is ``fn`` timed; ``wrap(fn, items)`` also counts what each call did
    (``items(args)``: e.g. the prompts of one ``build_prompts`` call)."""

    def __init__(self, sync: Callable[[], None] = lambda: None):
        self.sync, self.seconds, self.items = sync, [], 0

    def wrap(self, fn, items: Callable[[tuple], int] = lambda args: 1):
        @functools.wraps(fn)
        def timed(*args, **kwargs):
            self.items += items(args)
            self.sync()
            t0 = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                self.sync()
                self.seconds.append(time.perf_counter() - t0)

        return timed

    def summary(self) -> dict:
        return {"calls": len(self.seconds), "items": self.items, "ms_total": round(1000 * sum(self.seconds), 3),
                "ms_mean": round(1000 * sum(self.seconds) / max(len(self.seconds), 1), 3),
                "ms_per_item": round(1000 * sum(self.seconds) / max(self.items, 1), 3)}


class OpTally:
    """Operations of the calls run under ``watch``, summed by name over all of them (``torch.profiler``)."""

    def __init__(self, device: torch.device):
        self.activities = [torch.profiler.ProfilerActivity.CPU]
        if device.type == "cuda":
            self.activities.append(torch.profiler.ProfilerActivity.CUDA)
        self.ops: dict[str, list[float]] = {}  # name -> [calls, host ms (self), device ms (self)]

    def watch(self, fn, *args):
        with torch.profiler.profile(activities=self.activities) as prof:
            result = fn(*args)
        for event in prof.key_averages():
            device_us = getattr(event, "self_device_time_total", getattr(event, "self_cuda_time_total", 0.0))
            tally = self.ops.setdefault(event.key, [0, 0.0, 0.0])
            tally[0] += event.count
            tally[1] += event.self_cpu_time_total / 1000
            tally[2] += device_us / 1000
        return result

    def top(self, n: int) -> list[dict]:
        ranked = sorted(self.ops.items(), key=lambda item: -item[1][1])[:n]
        return [{"name": name, "calls": int(calls), "host_ms": round(host, 3), "device_ms": round(device, 3)}
                for name, (calls, host, device) in ranked]


class SyncTally:
    """The host-device synchronisations of the calls run under ``watch`` (CUDA's sync debug mode, which
    warns at each), counted by the innermost line of the engine that caused them and by thread (the one
    that ran ``watch``, or another: a caller building its prompt meanwhile)."""

    def __init__(self):
        self.sites: Counter[tuple[str, str]] = Counter()

    def watch(self, fn, *args):
        owner = threading.current_thread()

        def record(message, category, filename, lineno, file=None, line=None):
            if "synchroniz" not in str(message):
                return
            inside = [f for f in traceback.extract_stack() if f"{os.sep}engine{os.sep}" in f.filename]
            where = (inside[-1].filename, inside[-1].lineno) if inside else (filename, lineno)
            site = f"{where[0].split(os.sep + 'engine' + os.sep)[-1]}:{where[1]}"
            self.sites[site, "watched" if threading.current_thread() is owner else "other"] += 1

        with warnings.catch_warnings():
            warnings.simplefilter("always")
            warnings.showwarning = record
            torch.cuda.set_sync_debug_mode("warn")
            try:
                return fn(*args)
            finally:
                torch.cuda.set_sync_debug_mode("default")

    def top(self, n: int) -> list[dict]:
        return [{"site": site, "thread": thread, "count": count}
                for (site, thread), count in self.sites.most_common(n)]


def profile(streams, requests: Callable[[], tuple[list[float], float]], ops: int = 0, syncs: int = 0) -> dict:
    """Run ``requests()`` (the requests' times to first audio and their wall time, as ``concurrently``
    or ``ClientProcess.run`` return them) with the loop of ``streams`` (idle) timed phase by phase; the
    timing and counts, and the requests' times to first audio. ``ops`` > 0: also the costliest
    ``ops`` operations of all admissions together (``admission_ops``); ``syncs`` > 0: the ``syncs`` lines
    that synchronised the host with the GPU most often during them (``admission_syncs``)."""
    frames = streams.frames
    sync = synchronizer(frames.device)
    admissions: list[tuple[int, float]] = []  # (rows, seconds) per add_many
    steps: list[tuple[int, int]] = []  # (frames, active rows) per step
    add_many, step = frames.add_many, frames.step
    tally = OpTally(frames.device) if ops else None
    sync_tally = SyncTally() if syncs else None

    def timed_add_many(requests):
        run = add_many
        for watcher in (tally, sync_tally):
            if watcher is not None:
                run = functools.partial(watcher.watch, run)
        sync()
        t0 = time.perf_counter()
        slots = run(requests)
        sync()
        admissions.append((len(requests), time.perf_counter() - t0))
        return slots

    def counted_step(k: int = 1) -> None:
        steps.append((k, len(frames.active)))
        step(k)

    frames.add_many, frames.step = timed_add_many, counted_step
    # building the prompts (on the loop thread: at admissions, or while a step runs) and writing the decoder rows
    prompts, rows = CallTimer(sync), CallTimer(sync)
    real_build = streams._build_prompts
    streams._build_prompts = prompts.wrap(real_build, lambda args: len(args[0]))  # all the ready requests
    streams.decoder_state.put_rows = rows.wrap(streams.decoder_state.put_rows)
    streams.decoder_state.clear_rows = rows.wrap(streams.decoder_state.clear_rows)
    begun = time.perf_counter()
    clock = streams.phase_timer = PhaseClock(sync)
    try:
        ttfa, wall = requests()
        deadline = time.perf_counter() + 10
        while clock.phases[-1] != "wait" and time.perf_counter() < deadline:  # the loop ends its last handout
            time.sleep(0.001)
        profiled = time.perf_counter() - begun  # every closed phase span lies inside this
    finally:
        streams.phase_timer = None
        del frames.add_many, frames.step  # the class's methods again
        del streams.decoder_state.put_rows, streams.decoder_state.clear_rows
        streams._build_prompts = real_build
    totals = {phase: 0.0 for phase in PHASES}
    for phase, span in zip(clock.phases[:-1], clock.spans, strict=True):
        totals[phase] += span
    iterations = len(steps)
    loop_s = sum(clock.spans)
    return {
        "wall_s": wall,
        "loop_s": loop_s,
        "profiled_s": profiled,
        "ttfa_ms": ttfa,
        "iterations": iterations,
        "phases_s": totals,
        "phases_share": {p: t / loop_s for p, t in totals.items()},
        "phases_ms_per_iteration": {p: 1000 * t / max(iterations, 1) for p, t in totals.items()},
        "step_ms_per_frame": 1000 * totals["step"] / max(sum(k for k, _ in steps), 1),
        "admissions": len(admissions),
        "rows_per_admission": [rows for rows, _ in admissions],
        "ms_per_admission": [round(1000 * s, 3) for _, s in admissions],
        "frames_per_iteration": {str(k): c for k, c in sorted(Counter(k for k, _ in steps).items())},
        "mean_rows_per_step": sum(rows for _, rows in steps) / max(iterations, 1),
        "prompt_builds": prompts.summary(),
        "decoder_row_writes": rows.summary(),
        "timeline": clock.timeline(begun, TIMELINE_PHASES),
        **({"admission_ops": tally.top(ops)} if tally else {}),
        **({"admission_syncs": sync_tally.top(syncs)} if sync_tally else {}),
    }


def graph_kernels(streams, rows: int, top: int) -> dict:
    """The kernels of one replay of the step graph and of the LOOP_FRAMES-frame decode graph over the bucket that
    holds ``rows`` streams (replayed on the loop's idle state: their times do not depend on its values)."""
    from bench.tuning.profile_orator import replay_kernels

    bucket = next(b for b in streams.frames.buckets if b >= rows)
    decode = streams.decoding.graph(bucket, LOOP_FRAMES)
    codes = torch.zeros(bucket, LOOP_FRAMES, streams.decoder.cfg.num_quantizers, dtype=torch.int64,
                        device=streams.device)
    with torch.inference_mode():
        return {"bucket": bucket,
                "step_kernels": replay_kernels(streams.frames._step_for(bucket), frames=10, top=top),
                "decode_kernels": replay_kernels(lambda: decode(codes), frames=10, top=top)}


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", required=True)
    ap.add_argument("--streams", type=int, default=64)
    ap.add_argument("--frames", type=int, default=150)
    ap.add_argument("--trickle", type=float, default=0.0, metavar="MS", help="start the requests MS apart")
    ap.add_argument("--http", action="store_true", help="through the HTTP server in front of the streams")
    ap.add_argument("--ops", type=int, default=0, metavar="N",
                    help="profile the admissions and list their N costliest operations")
    ap.add_argument("--syncs", type=int, default=0, metavar="N",
                    help="list the N lines that synchronised the host with the GPU most often in the admissions")
    ap.add_argument("--kernels", type=int, default=0, metavar="N",
                    help="then profile the step and decode graphs of the streams' bucket: their N costliest kernels")
    ap.add_argument("--decoder-dtype", default="float32", choices=DECODER_DTYPE_NAMES,
                    help="the codec decoder's precision (default float32)")
    ap.add_argument("--device", default="cuda")
    args = ap.parse_args(argv)
    if args.kernels and not args.device.startswith("cuda"):
        ap.error("--kernels profiles CUDA graph replays: it needs --device cuda")
    if args.syncs and not args.device.startswith("cuda"):
        ap.error("--syncs counts host-GPU synchronisations: it needs --device cuda")
    engine, streams = warm_streams(args.model, args.device, args.streams, args.decoder_dtype)
    report = {"model": args.model, "device": device_name(args.device), "decoder_dtype": args.decoder_dtype,
              "path": "http" if args.http else "engine", "clients": SEPARATE_PROCESS if args.http else IN_PROCESS,
              "streams": args.streams, "frames": args.frames, "trickle_ms": args.trickle,
              "warmup_s": streams.warmup_seconds}
    spacing_s = args.trickle / 1000
    if args.http:
        with serving(engine, streams) as (url, _), ClientProcess(url, DEFAULT_TEXT, DEFAULT_SPEAKER) as clients:
            clients.run(args.streams, WARM_FRAMES)  # warm-up of the HTTP path, as of the engine's
            found = profile(streams, functools.partial(clients.run, args.streams, args.frames, spacing_s),
                            args.ops, args.syncs)
    else:
        found = profile(streams, functools.partial(concurrently, args.streams, engine_requests(streams, args.frames),
                                                   spacing_s), args.ops, args.syncs)
    ttfa = found["ttfa_ms"]
    report.update(audio_s_per_s=args.streams * audio_seconds(args.frames) / found["wall_s"],
                  ttfa_p50_ms=percentile(ttfa, 50), ttfa_p95_ms=percentile(ttfa, 95), **found)
    if args.kernels:
        report.update(graph_kernels(streams, args.streams, args.kernels))
    print(json.dumps(report, indent=1), flush=True)


if __name__ == "__main__":
    main()
