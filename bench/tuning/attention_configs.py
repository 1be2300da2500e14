"""Times the two attention blocks of a decode step (``engine.core.gpu_kernels.attention``: the talker's long cache;
``engine.core.gpu_kernels.short_attention``: the code predictor's 16 slots) at the shapes of the many-streams loop, for
a
grid of launch configurations, each replayed from a CUDA graph of one call per layer (as in the frame step).
Picks ``attention.SPLITS``, ``BLOCK_S``, ``WARPS`` and ``MERGE_WARPS``, and ``short_attention.WARPS``.

The rows' positions are drawn at random in a range (the loop's streams are at different points of their
speech); the calls cycle through enough copies of the caches that the filled slots come from HBM, not L2.
``--baseline`` times each block once as the tree configures it, whatever its knobs: run it in another tree to
compare (``cd other && PYTHONPATH=$PWD python ../this/bench/tuning/attention_configs.py --baseline``; a tree
without ``bench/tuning/kernel_sweep.py`` needs it and ``bench/tuning/__init__.py`` copied in).

    python -m bench.tuning.attention_configs [--out results.json] [--baseline]
"""

from __future__ import annotations

import argparse
import itertools
import time

import torch

from bench.tuning.kernel_sweep import graph_us, report
from engine.core.gpu_kernels import attention, short_attention

HEADS, KV_HEADS, DIM, EPS = 16, 8, 128, 1e-6  # both talkers' and both predictors' attention
TALKER_SLOTS, PREDICTOR_SLOTS = 2048, 16
LAYERS = {"talker": 28, "predictor": 5}
# (block, rows, lowest and highest position)
CASES = [("talker", 1, 200, 200), ("talker", 1, 1500, 1500), ("talker", 64, 100, 300), ("talker", 128, 100, 300),
         ("talker", 64, 600, 1200), ("predictor", 1, 1, 15), ("predictor", 64, 1, 15), ("predictor", 128, 1, 15)]
# (SPLITS, BLOCK_S, WARPS, MERGE_WARPS)
TALKER_CONFIGS = list(itertools.product((4, 8, 16), (32, 64), (1, 2, 4), (1, 4)))
PREDICTOR_CONFIGS = [(1,), (2,), (4,), (8,)]  # (WARPS,)
KNOBS = {"talker": (attention, ("SPLITS", "BLOCK_S", "WARPS", "MERGE_WARPS")),
         "predictor": (short_attention, ("WARPS",))}
# the talker's filled slots at 64 rows (~40 MB a copy) outgrow the L2 cache from two copies on; the predictor's
# five layers (a few MB each) fit in it, as in the step
CACHE_COPIES = {"talker": 4, "predictor": 5}


def step_inputs(rows: int, slots: int, low: int, high: int, copies: int, seed: int = 0):
    """One layer's step for ``rows`` rows at random positions in [low, high], with ``copies`` cache pairs."""
    g = torch.Generator(device="cuda").manual_seed(seed)
    dt = torch.bfloat16
    qkv = torch.randn(rows, (HEADS + 2 * KV_HEADS) * DIM, device="cuda", dtype=dt, generator=g)
    weights = [1 + 0.1 * torch.randn(DIM, device="cuda", dtype=dt, generator=g) for _ in range(2)]
    angles = torch.rand(rows, DIM, device="cuda", generator=g) * 6.28
    cos, sin = angles.cos().to(dt), angles.sin().to(dt)
    pos = torch.randint(low, high + 1, (rows,), device="cuda", generator=g)
    caches = [tuple(torch.randn(rows, KV_HEADS, slots, DIM, device="cuda", dtype=dt, generator=g) for _ in range(2))
              for _ in range(copies)]
    return qkv, weights, cos, sin, pos, caches


def measure(block: str, rows: int, low: int, high: int, configs: list[tuple]) -> dict:
    """Microseconds a call of the block for each configuration (the tree's own when ``configs`` is empty)."""
    t0 = time.perf_counter()
    slots = TALKER_SLOTS if block == "talker" else PREDICTOR_SLOTS
    op = attention.filled_slots_attention_block if block == "talker" else short_attention.short_attention_block
    copies = CACHE_COPIES[block]
    qkv, (qw, kw), cos, sin, pos, caches = step_inputs(rows, slots, low, high, copies)

    def call(i):
        k, v = caches[i % copies]
        op(qkv, qw, kw, cos, sin, k, v, pos, EPS)

    times = {}
    for config in configs or [None]:
        if config is not None:
            module, names = KNOBS[block]
            for name, value in zip(names, config, strict=True):
                setattr(module, name, value)
        try:
            times[config] = graph_us(call, calls=LAYERS[block] * 4)
        except Exception as e:  # a configuration out of registers or shared memory: skip it
            print(f"{block} {rows} {config}: {type(e).__name__}: {str(e)[:200]}", flush=True)
    best = min(times, key=times.get)
    return {"block": block, "rows": rows, "positions": [low, high], "cache_copies": copies, "best": best,
            "best_us": round(times[best], 2), "wall_s": round(time.perf_counter() - t0, 1),
            "all": {str(c): round(t, 2) for c, t in times.items()}}


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out")
    ap.add_argument("--baseline", action="store_true", help="each block once, as this tree configures it")
    args = ap.parse_args(argv)
    grids = {"talker": TALKER_CONFIGS, "predictor": PREDICTOR_CONFIGS}
    report((measure(block, rows, low, high, [] if args.baseline else grids[block]) for block, rows, low, high in CASES),
           args.out)


if __name__ == "__main__":
    main()
