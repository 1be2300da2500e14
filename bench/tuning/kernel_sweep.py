"""What the kernel sweeps (``gemv_configs``, ``attention_configs``, ``sampler_configs``) share: the time of a call
replayed from a CUDA graph, and the report, one JSON line per measurement as it comes and the whole at the end."""

from __future__ import annotations

import json
from collections.abc import Iterable

import torch

COLD_BYTES = 512 * 2**20  # weight copies cycled through so that each is read from HBM (the H200's L2: 60 MB)


def graph_us(fn, calls: int = 100) -> float:
    """Microseconds per call of ``fn(i)`` (i: the call's index) replayed from one CUDA graph of ``calls``
    calls."""
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        fn(0)
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        for i in range(calls):
            fn(i)
    g.replay()
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(5):
        g.replay()
    end.record()
    torch.cuda.synchronize()
    return start.elapsed_time(end) * 1000 / (5 * calls)


def report(measurements: Iterable[dict], out: str | None) -> list[dict]:
    """Print each measurement (without its grid of every configuration, ``all``) as it is made; write them all to
    ``out`` (JSON) when given."""
    done = []
    for m in measurements:
        done.append(m)
        print(json.dumps({key: v for key, v in m.items() if key != "all"}), flush=True)
    if out:
        with open(out, "w", encoding="utf-8") as f:
            json.dump(done, f, indent=1)
    return done
