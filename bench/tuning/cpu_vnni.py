"""The Numba steps' int8 products as the engine makes them (int16 activations: widen, multiply-add pairs, add)
against the same products through the processor's 8-bit dot-product instruction (AVX512-VNNI ``vpdpbusd``): each
int16 activation split into its low byte and its high byte (offset by 128 to be unsigned), two instructions a 64
weights, the offset taken back with each row's weight sums. The integer sums are the same, so the outputs are the
engine's bit for bit (checked here before timing).

    taskset -c 0-7 python -m bench.tuning.cpu_vnni [--threads 8 4 2] [--rounds 2] [--model DIR]

Times, alternating the ways, in microseconds a call: one 1024 x 1024 matrix (in L2), a talker layer's products
(15 MB), a code-predictor pass's 20 products (75 MB: in a server's L3, not a desktop's) and 28 talker layers' (420
MB, from memory), with 1, 2 or 4 rows a step (4: with the next rows prefetched too). With ``--model``, also the
engine's own steps of that checkpoint (``NumbaPosition`` both ways: a talker step at position 150 and a
code-predictor pass at position 8), alternating. Prints one JSON line.
"""

from __future__ import annotations

import argparse
import json
import time

import numpy as np


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--threads", type=int, nargs="+", default=[8, 4, 2])
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--model", help="a checkpoint whose steps to time too")
    ap.add_argument("--sets", nargs="+", default=["l2", "layer", "predictor", "talker"],
                    choices=["l2", "layer", "predictor", "talker"], help="which sets of products to time")
    args = ap.parse_args(argv)
    import numba
    from numba import njit, prange

    from engine.core.cpu import numba_layer as kernels
    from engine.core.cpu import vnni

    if not vnni.available():
        print(json.dumps({"vnni": False}))
        return

    def make(rows: int, prefetch: bool):
        dot = vnni.dot_rows(rows, prefetch)

        @njit(parallel=True, fastmath=kernels.FAST, nogil=True, boundscheck=False)
        def product(q, scale, wsum, x, xq, lo, hi, y):
            sx = kernels.quantize(x, xq)
            vnni.split(xq, lo, hi)
            n_rows, k = q.shape
            nseg = (k + kernels.SEGMENT - 1) // kernels.SEGMENT
            for block in prange(n_rows // kernels.ROW_BLOCK):
                parts = np.empty(2 * rows, np.int32)
                acc = np.empty(rows, np.float32)
                for r0 in range(block * kernels.ROW_BLOCK, block * kernels.ROW_BLOCK + kernels.ROW_BLOCK, rows):
                    acc[:] = 0
                    for seg in range(nseg):
                        start = seg * kernels.SEGMENT
                        dot(q, r0, start, min(k, start + kernels.SEGMENT), lo, hi, parts)
                        for r in range(rows):
                            acc[r] += np.float32(vnni.joined(parts[2 * r], parts[2 * r + 1], wsum[r0 + r, seg]))
                    for r in range(rows):
                        y[r0 + r] = acc[r] * (scale[r0 + r] * sx)
        return product

    ways = {"vnni1": make(1, False), "vnni2": make(2, False), "vnni4": make(4, False), "vnni4pf": make(4, True)}
    rng = np.random.default_rng(0)
    layer = [(4096, 1024), (1024, 2048), (6144, 1024), (1024, 3072)]

    def weights(shapes):
        out = []
        for s in shapes:
            q = rng.integers(-127, 128, s, dtype=np.int8)
            out.append((q, rng.random(s[0], dtype=np.float32), vnni.weight_sums(q, kernels.SEGMENT)))
        return out

    shapes = {"l2": [(1024, 1024)], "layer": layer, "predictor": layer * 5, "talker": layer * 28}
    sets = {name: weights(shapes[name]) for name in args.sets}
    xs = {k: rng.standard_normal(k).astype(np.float32) for k in (1024, 2048, 3072)}
    xq = {k: np.empty(k, np.int16) for k in xs}
    lo = {k: np.empty(k, np.uint8) for k in xs}
    hi = {k: np.empty(k, np.uint8) for k in xs}
    ys = {n: np.empty(n, np.float32) for n in (1024, 4096, 6144)}

    def engine_way(ws):
        for q, s, _ in ws:
            kernels.product(q, s, xs[q.shape[1]], xq[q.shape[1]], ys[q.shape[0]])

    def vnni_way(fn):
        def run(ws):
            for q, s, w in ws:
                k = q.shape[1]
                fn(q, s, w, xs[k], xq[k], lo[k], hi[k], ys[q.shape[0]])
        return run

    runs = {"int16": engine_way, **{name: vnni_way(fn) for name, fn in ways.items()}}
    for q, s, w in weights(layer):  # the same outputs, bit for bit
        k, n = q.shape[1], q.shape[0]
        want = np.empty(n, np.float32)
        kernels.product(q, s, xs[k], xq[k], want)
        for name, fn in ways.items():
            fn(q, s, w, xs[k], xq[k], lo[k], hi[k], ys[n])
            if not np.array_equal(ys[n], want):
                raise SystemExit(f"{name} differs from the engine's product for {q.shape}")

    def timed(fn, ws, repeats):
        fn(ws)
        start = time.perf_counter()
        for _ in range(repeats):
            fn(ws)
        return round((time.perf_counter() - start) / repeats * 1e6, 1)

    repeats = {"l2": 400, "layer": 100, "predictor": 20, "talker": 4}
    report = {"same_outputs": True}
    for threads in (t for t in args.threads if t <= numba.config.NUMBA_NUM_THREADS):
        numba.set_num_threads(threads)
        for name, ws in sets.items():
            for _ in range(args.rounds):
                for way, fn in runs.items():
                    report.setdefault(f"{threads}t_{name}_{way}", []).append(timed(fn, ws, repeats[name]))
    if args.model:
        report.update(steps(args.model, args.threads, args.rounds))
    print(json.dumps(report), flush=True)


def steps(model: str, thread_counts, rounds: int) -> dict:
    """ms of the engine's talker step and predictor pass with the 16-bit and the VNNI products, alternating, and
    whether their outputs are equal."""
    import numba
    import torch

    from engine import Engine
    from engine.core.cpu import one_position_numba as jit
    from engine.core.cpu.one_position import one_position_stacks
    from engine.core.model.layers import KVCache

    eng = Engine.from_pretrained(model, device="cpu", dtype=torch.float32, cpu_int8=True)
    talker = eng.model.talker
    stacks = one_position_stacks(talker)
    bound = {}
    for name, stack, length, pos in (("talker", stacks[0], 256, 150), ("predictor", stacks[1], 17, 8)):
        made = jit.NumbaPosition(stack, vnni_sums=True)
        for way in (False, True) if made.vnni_able else (False,):  # a stack vnni.fits does not take: 16-bit only
            made.vnni = way
            cache = KVCache(made.weights.in_w.shape[0], 1, stack.kv_heads, length, stack.head_dim, torch.float32, "cpu")
            bound[name, way] = (made.over(cache), pos)
    xs = {name: torch.randn(1, step.x.shape[1], generator=torch.Generator().manual_seed(0))
          for (name, _), (step, _) in bound.items()}
    outs = {(name, way): step(xs[name], pos) for (name, way), (step, pos) in bound.items()}
    same = all(torch.equal(outs[name, way], outs[name, False]) for name, way in outs)
    report = {"steps_same_outputs": same, "steps_vnni": sorted(name for name, way in outs if way)}
    for threads in (t for t in thread_counts if t <= numba.config.NUMBA_NUM_THREADS):
        torch.set_num_threads(threads)
        for _ in range(rounds):
            for (name, way), (step, pos) in bound.items():
                repeats = 10 if name == "talker" else 60
                step(xs[name], pos)
                start = time.perf_counter()
                for _ in range(repeats):
                    step(xs[name], pos)
                ms = (time.perf_counter() - start) / repeats * 1e3
                report.setdefault(f"{threads}t_{name}_step_{'vnni' if way else 'int16'}", []).append(round(ms, 3))
    return report


if __name__ == "__main__":
    main()
