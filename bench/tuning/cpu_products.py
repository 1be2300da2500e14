"""The Numba steps' int8 products with float32 activations against the engine's (int16 activations,
``engine.core.cpu.numba_layer.product``): one 6144 x 1024 matrix (resident in L2) and a code-predictor pass's
20 products of the 0.6B (5 layers, 75 MB, streamed from L3), random int8 weights.

    taskset -c 0-7 python -m bench.tuning.cpu_products [--threads 8 4 2] [--narrow-vectors]

``--narrow-vectors`` keeps LLVM's 256-bit tuning on AVX-512 processors (the engine asks for 512-bit vectors).
Prints one JSON line: ms a call of each.
"""

from __future__ import annotations

import argparse
import json
import time

import numpy as np


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--threads", type=int, nargs="+", default=[8, 4, 2])
    ap.add_argument("--narrow-vectors", action="store_true")
    args = ap.parse_args(argv)
    import llvmlite.binding as llvm
    import numba

    if args.narrow_vectors:  # before the engine's module asks for wide ones
        numba.config.CPU_FEATURES = llvm.get_host_cpu_features().flatten()
    from numba import njit, prange

    from engine.core.cpu import numba_layer as kernels

    @njit(parallel=True, fastmath=True, nogil=True, boundscheck=False)
    def float_product(q, scale, x, y):
        for block in prange((q.shape[0] + kernels.ROW_BLOCK - 1) // kernels.ROW_BLOCK):
            for n in range(block * kernels.ROW_BLOCK, min(q.shape[0], block * kernels.ROW_BLOCK + kernels.ROW_BLOCK)):
                acc = np.float32(0.0)
                for i in range(q.shape[1]):
                    acc += np.float32(q[n, i]) * x[i]
                y[n] = acc * scale[n]

    rng = np.random.default_rng(0)
    shapes = [(4096, 1024), (1024, 2048), (6144, 1024), (1024, 3072)] * 5
    weights = [(rng.integers(-127, 128, s, dtype=np.int8), rng.random(s[0], dtype=np.float32)) for s in shapes]
    xs = {k: rng.standard_normal(k).astype(np.float32) for k in (1024, 2048, 3072)}
    xq = {k: np.empty(k, np.int16) for k in xs}
    ys = {n: np.empty(n, np.float32) for n in (1024, 4096, 6144)}

    def timed(fn, repeats):
        fn()
        start = time.perf_counter()
        for _ in range(repeats):
            fn()
        return round((time.perf_counter() - start) / repeats * 1e3, 3)

    def float_pass():
        for q, s in weights:
            float_product(q, s, xs[q.shape[1]], ys[q.shape[0]])

    def engine_pass():
        for q, s in weights:
            kernels.product(q, s, xs[q.shape[1]], xq[q.shape[1]], ys[q.shape[0]])

    q, s = weights[2]
    report = {"vectors": "256-bit tuning" if args.narrow_vectors else "as the engine asks"}
    for threads in (t for t in args.threads if t <= numba.config.NUMBA_NUM_THREADS):
        numba.set_num_threads(threads)
        report[f"{threads}t_l2_float"] = timed(lambda: float_product(q, s, xs[1024], ys[6144]), 200)
        report[f"{threads}t_l2_int16"] = timed(lambda: kernels.product(q, s, xs[1024], xq[1024], ys[6144]), 200)
        report[f"{threads}t_pass_float"] = timed(float_pass, 30)
        report[f"{threads}t_pass_int16"] = timed(engine_pass, 30)
    print(json.dumps(report), flush=True)


if __name__ == "__main__":
    main()
