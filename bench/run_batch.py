"""Many streams at once: aggregate audio-seconds per second and p50/p95 time to first audio at several
concurrency levels, through the engine directly (``BatchedStreams``) and through the HTTP server
(``serve --batch``), each request forced to the same number of frames.

    python -m bench.run_batch --model DIR --streams 1 8 32 64 128 --frames 150 [--http] [--decoder-dtype bfloat16]
        [--client-processes K [K ...]]
        --out results.jsonl

``--decoder-dtype`` is the codec decoder's precision (``Engine.from_pretrained(decoder_dtype=...)``; float32 by
default, the talker in bf16 on a GPU either way); every row says which it was.

The engine rows' callers are threads of this process, calling ``BatchedStreams`` as the server does. The
HTTP server runs in a thread of this process too, in front of the same captured streams, but its clients run
in a process of their own (``bench.clients.ClientProcess``: httpx only, no torch), as a deployed server's
would: every ``clients`` field says which (``"in process"``, ``"separate process"``, or ``"K processes"`` with
``--client-processes K``, each holding a share of each run's requests; several counts give the HTTP rows once
per count, in that order, against the same server): in this process their threads would share one GIL with the
server's event loop, its scheduler threads and the engine's loop thread. The HTTP rows also give the server's
side of each run (``server_wall_s``: first request in to last chunk out of the engine; ``arrival_spread_ms``:
how far apart the requests reached it), which tells a slow server from slow clients. Every row also gives
the warm-up's seconds per piece (``warmup_tasks_s``: each batch size's frame step, prefills and decodes), where a
cold warm-up's minutes go.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import gc
import itertools
import json
import statistics
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence

import torch

from bench.clients import ClientProcess, ClientProcesses, concurrently
from bench.common import DEFAULT_LANGUAGE, DEFAULT_SPEAKER, DEFAULT_TEXT, audio_seconds, device_name
from engine import Engine, Sampling, Voice
from engine.core.engine import DECODER_DTYPE_NAMES
from engine.core.frames.batched import LOOP_FRAMES
from engine.core.runtime import settle_heap

IN_PROCESS = "in process"  # the engine rows: the callers are threads of the engine's process
SEPARATE_PROCESS = "separate process"  # the HTTP rows: a client process of their own (bench.clients)


@dataclasses.dataclass
class BatchResult:
    path: str  # "engine" or "http"
    streams: int
    frames: int
    audio_s_per_s: float
    ttfa_p50_ms: float
    ttfa_p95_ms: float
    wall_s: float
    device: str
    warmup_s: float  # capturing every batch size's frame step and decodes before the first request
    ttfa_ms: list[float]
    decoder_dtype: str = "float32"  # the codec decoder's precision
    clients: str = IN_PROCESS  # where the requesting threads ran: IN_PROCESS, SEPARATE_PROCESS or "K processes"
    allocator: dict = dataclasses.field(default_factory=dict)  # allocator_during the run ({} off CUDA)
    collector: dict = dataclasses.field(default_factory=dict)  # collector_pauses during the run
    # HTTP rows: the server's side of the run (``ServedSpan``): from the first request reaching the engine to the
    # last one's last chunk, and how far apart the requests reached it; against ``wall_s`` (the clients' view),
    # what the server took apart from the clients sending and reading
    server_wall_s: float | None = None
    arrival_spread_ms: float | None = None
    warmup_tasks_s: dict = dataclasses.field(default_factory=dict)  # WarmupClock: seconds per piece of warmup_s
    arrivals_ms: dict | None = None  # HTTP rows: ServedSpan.arrivals_ms, each stage's delay after the first send
    switch_interval_ms: float | None = None  # HTTP rows: the interpreter's GIL switch interval in the server's process

    def to_json(self) -> str:
        return json.dumps(dataclasses.asdict(self), sort_keys=True)


def percentile(values: Sequence[float], q: float) -> float:
    """The q-th percentile (0..100) by linear interpolation."""
    ordered = sorted(values)
    if not ordered:
        raise ValueError("no values")
    k = (len(ordered) - 1) * q / 100
    lo, hi = int(k), min(int(k) + 1, len(ordered) - 1)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (k - lo)


def summarize(path: str, n: int, frames: int, ttfa: list[float], wall: float, device: str,
              warmup_s: float = 0.0, decoder_dtype: str = "float32", clients: str = IN_PROCESS,
              allocator: dict | None = None, collector: dict | None = None,
              served: ServedSpan | None = None, warmup_tasks: dict | None = None,
              sent: list[float] | None = None) -> BatchResult:
    """A row; an HTTP row's ``served`` span and its clients' ``sent`` times add the server's side."""
    return BatchResult(path, n, frames, n * audio_seconds(frames) / wall, statistics.median(ttfa),
                       percentile(ttfa, 95), wall, device_name(device), warmup_s, ttfa, decoder_dtype, clients,
                       allocator or {}, collector or {},
                       served and round(served.wall_s, 4), served and round(served.arrival_spread_ms, 2),
                       dict(warmup_tasks or {}), served and sent and served.arrivals_ms(sent),
                       served and round(sys.getswitchinterval() * 1000, 3))


class WarmupClock:
    """``BatchedStreams``' ``warmup_progress``: the seconds each piece of its warm-up took (``tasks``, in the
    order captured), so that a row says where a cold warm-up's minutes went."""

    def __init__(self):
        self.tasks: dict[str, float] = {}
        self._current: tuple[str, float] | None = None

    def __call__(self, done: int, total: int, what: str) -> None:
        now = time.perf_counter()
        if self._current is not None:
            name, started = self._current
            self.tasks[name] = round(now - started, 2)
        self._current = (what, now) if done < total else None


class ServedSpan:
    """When the server's requests reached the engine and when each one's last chunk left it: a backend
    wrapper (``wrap``) records both, and a scheduler watched (``watch``) when each request was submitted to it
    (its handler done); ``clear`` starts a run."""

    def __init__(self):
        self.submitted: list[float] = []
        self.starts: list[float] = []
        self.ends: list[float] = []

    def clear(self) -> None:
        self.submitted.clear()
        self.starts.clear()
        self.ends.clear()

    def watch(self, scheduler) -> None:
        """Record when each request reaches ``scheduler.submit`` (a server.scheduler.Scheduler)."""
        submit = scheduler.submit

        def recorded(job):
            self.submitted.append(time.perf_counter())
            return submit(job)

        scheduler.submit = recorded

    def wrap(self, backend):
        """``backend`` (a server.scheduler.BatchedBackend) with its ``run_async`` recorded."""
        run_async = backend.run_async

        async def recorded(job, cancel):
            self.starts.append(time.perf_counter())
            async for chunk in run_async(job, cancel):
                yield chunk
            self.ends.append(time.perf_counter())

        backend.run_async = recorded
        return backend

    @property
    def wall_s(self) -> float:
        return max(self.ends) - min(self.starts)

    @property
    def arrival_spread_ms(self) -> float:
        return (max(self.starts) - min(self.starts)) * 1000

    def arrivals_ms(self, sent: list[float]) -> dict:
        """Where the requests' arrival spread comes from: for each stage, the ms from the first client's send to
        its median and its last request: "sent" (the clients' own starts, ``sent``), "submitted" (the handler
        done, the request handed to the scheduler) and "engine" (the backend's ``run_async`` begun)."""
        first = min(sent)

        def offsets(times: list[float]) -> dict:
            return {"p50": round((statistics.median(times) - first) * 1000, 2),
                    "last": round((max(times) - first) * 1000, 2)}

        return {"sent": offsets(sent), "submitted": offsets(self.submitted), "engine": offsets(self.starts)}


# The CUDA caching allocator's counters. A retry (``num_alloc_retries``) is an allocation that found no free block
# and no free device memory: the allocator synchronises and releases every cached block, then allocates again, a
# stall that a run's first-audio times would show without naming it.
ALLOCATOR_COUNTERS = ("num_alloc_retries", "num_ooms", "num_device_alloc", "num_device_free")


def allocator_counters(device: str) -> dict[str, int]:
    """The allocator's counters and reserved bytes now; {} off CUDA."""
    if not device.startswith("cuda"):
        return {}
    stats = torch.cuda.memory_stats(device)
    return {**{k: stats.get(k, 0) for k in ALLOCATOR_COUNTERS},
            "reserved_bytes": stats.get("reserved_bytes.all.current", 0)}


def allocator_during(before: dict[str, int], after: dict[str, int]) -> dict:
    """What the allocator did between two ``allocator_counters``: each counter's increase, and the GiB reserved
    at the end."""
    if not after:
        return {}
    return {**{k: after[k] - before[k] for k in ALLOCATOR_COUNTERS},
            "reserved_gib_after": round(after["reserved_bytes"] / 2**30, 2)}


@contextlib.contextmanager
def collector_pauses() -> Iterator[dict]:
    """The cyclic garbage collector's passes in this process while open (``gc.callbacks``): on exit, the dict
    yielded holds {"gen<N>": {"passes", "longest_ms", "total_ms"}} for each generation collected. A pass holds
    the GIL, so every stream waits for it: a long one shows in the first-audio times without naming itself."""
    found: dict[str, dict] = {}
    started = [0.0]

    def on_pass(phase: str, info: dict) -> None:
        if phase == "start":  # passes never overlap: each holds the GIL from start to stop
            started[0] = time.perf_counter()
            return
        ms = (time.perf_counter() - started[0]) * 1000
        gen = found.setdefault(f"gen{info['generation']}", {"passes": 0, "longest_ms": 0.0, "total_ms": 0.0})
        gen["passes"] += 1
        gen["longest_ms"] = round(max(gen["longest_ms"], ms), 2)
        gen["total_ms"] = round(gen["total_ms"] + ms, 2)

    gc.callbacks.append(on_pass)
    try:
        yield found
    finally:
        gc.callbacks.remove(on_pass)


def watched(device: str, run: Callable[[], tuple[list[float], float]]) -> tuple[list[float], float, dict, dict]:
    """``run()``'s (first-audio times, wall seconds), ``allocator_during`` it and its ``collector_pauses``."""
    before = allocator_counters(device)
    with collector_pauses() as collector:
        ttfa, wall = run()
    return ttfa, wall, allocator_during(before, allocator_counters(device)), collector


# frames of each warm-up request: a first frame alone, then two loop iterations (the second queued ahead); the
# warm-up sends as many as the widest run, so that no measured run is the first to allocate what a full batch needs
WARM_FRAMES = 1 + 2 * LOOP_FRAMES


def engine_requests(streams, frames: int) -> Callable[[int], float]:
    voice = Voice.preset(DEFAULT_SPEAKER, DEFAULT_LANGUAGE)

    def request(i: int) -> float:
        t0 = time.perf_counter()
        first = None
        got = 0
        for chunk in streams.stream(DEFAULT_TEXT, voice, sampling=Sampling(seed=i, min_frames=frames),
                                    max_frames=frames):
            first = first or (time.perf_counter() - t0) * 1000
            got += chunk.n_frames
        if got != frames:
            raise RuntimeError(f"request {i} got {got} frames, not {frames}")
        return first

    return request


def warm_streams(model: str, device: str, slots: int, decoder_dtype: str = "float32",
                 clock: WarmupClock | None = None):
    """(engine, BatchedStreams of ``slots`` slots): every batch size captured, then ``slots`` short requests run
    at once (``WARM_FRAMES`` each) so that the measured runs start warm: the prompt building and the tokenizer,
    and the memory a full batch allocates. ``decoder_dtype`` names the codec decoder's precision; ``clock`` times
    the capture's pieces."""
    dtype = torch.bfloat16 if device.startswith("cuda") else torch.float32
    engine = Engine.from_pretrained(model, device=device, dtype=dtype, decoder_dtype=getattr(torch, decoder_dtype))
    streams = engine.batched(slots, warmup=True, warmup_progress=clock)
    concurrently(slots, engine_requests(streams, WARM_FRAMES))
    settle_heap()  # as the server does once its model is ready
    return engine, streams


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", required=True)
    ap.add_argument("--streams", type=int, nargs="+", default=[1, 8, 32, 64, 128])
    ap.add_argument("--frames", type=int, default=150)
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--http", action="store_true", help="also through the HTTP server")
    ap.add_argument("--decoder-dtype", default="float32", choices=DECODER_DTYPE_NAMES,
                    help="the codec decoder's precision (default float32)")
    ap.add_argument("--client-processes", type=int, nargs="+", default=[1],
                    help="HTTP clients: share each run's requests among this many processes (default 1); "
                         "several counts: the HTTP rows once per count")
    ap.add_argument("--switch-interval-ms", type=float, nargs="+", default=[None],
                    help="HTTP rows: the interpreter's GIL switch interval in this process (sys.setswitchinterval; "
                         "default: as it is, 5 ms); several values: the HTTP rows once per value")
    ap.add_argument("--out", help="append JSON lines here")
    args = ap.parse_args(argv)
    clock = WarmupClock()
    engine, streams = warm_streams(args.model, args.device, max(args.streams), args.decoder_dtype, clock)
    results = []
    for n in args.streams:
        ttfa, wall, allocator, collector = watched(
            args.device, lambda n=n: concurrently(n, engine_requests(streams, args.frames)))
        results.append(summarize("engine", n, args.frames, ttfa, wall, args.device, streams.warmup_seconds,
                                 args.decoder_dtype, allocator=allocator, collector=collector,
                                 warmup_tasks=clock.tasks))
        print(results[-1].to_json(), flush=True)
    if args.http:
        served = ServedSpan()
        default_interval = sys.getswitchinterval()
        with serving(engine, streams, served) as (url, backend):  # the same captured streams
            for count, interval in itertools.product(args.client_processes, args.switch_interval_ms):
                sys.setswitchinterval(default_interval if interval is None else interval / 1000)
                with client_processes(url, count) as clients:
                    # warm-up of the HTTP path (the client processes, the server's threads), as of the engine's
                    clients.run(streams.slots, WARM_FRAMES)
                    for n in args.streams:
                        served.clear()
                        ttfa, wall, allocator, collector = watched(args.device,
                                                                   lambda n=n: clients.run(n, args.frames))
                        where = SEPARATE_PROCESS if count == 1 else f"{count} processes"
                        results.append(summarize("http", n, args.frames, ttfa, wall, args.device,
                                                 backend.streams.warmup_seconds, args.decoder_dtype, where,
                                                 allocator, collector, served, clock.tasks, clients.sent))
                        print(results[-1].to_json(), flush=True)
            sys.setswitchinterval(default_interval)
    if args.out:
        with open(args.out, "a", encoding="utf-8") as f:
            f.writelines(r.to_json() + "\n" for r in results)


def client_processes(url: str, count: int) -> ClientProcess | ClientProcesses:
    """The HTTP clients: one process of their own, or ``count`` sharing each run's requests."""
    if count == 1:
        return ClientProcess(url, DEFAULT_TEXT, DEFAULT_SPEAKER)
    return ClientProcesses(url, DEFAULT_TEXT, DEFAULT_SPEAKER, count)


@contextlib.contextmanager
def serving(engine: Engine, streams, served: ServedSpan | None = None) -> Iterator[tuple[str, object]]:
    """The HTTP server serving from ``streams`` (a BatchedStreams) on a free loopback port, in a thread, its
    backend's runs recorded in ``served`` when given: (url, backend) while the block runs. Stopped and its thread
    joined when the block ends: with uvloop, a server thread still running while the interpreter exits crashed
    it (a segmentation fault after every row was written, three exits in six on the CPU machine)."""
    import socket
    import tempfile
    from pathlib import Path

    import httpx
    import uvicorn

    from server.app import create_app
    from server.scheduler import BatchedBackend
    from server.settings import ServerSettings

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    library = Path(tempfile.mkdtemp(prefix="orator-bench-library-"))
    backends: list[BatchedBackend] = []

    def make_backend(eng: Engine, progress=None) -> BatchedBackend:
        backends.append(BatchedBackend(eng, streams.slots, streams))
        return served.wrap(backends[-1]) if served is not None else backends[-1]

    app = create_app(lambda: engine, library, ServerSettings(max_queue=4 * streams.slots), make_backend=make_backend)
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    url = f"http://127.0.0.1:{port}"
    try:
        for _ in range(600):
            try:
                if httpx.get(f"{url}/health", timeout=2).json().get("model_loaded"):
                    break
            except httpx.TransportError:
                pass
            time.sleep(0.1)
        else:
            raise RuntimeError("the benchmark server did not start")
        if served is not None:
            served.watch(app.state.scheduler)
        yield url, backends[-1]
    finally:
        server.should_exit = True
        thread.join(timeout=30)


if __name__ == "__main__":
    main()
