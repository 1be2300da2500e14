"""The Numba steps' int4 products (``engine.model.int4_numba``) against their int8 ones (16-bit multiply-adds, and
where the processor has them the 8-bit dot products of ``engine.model.vnni``), on random weights of a 0.6B talker
layer's shapes: one layer's four products (in L2/L3) 28 times, and 28 layers' (from memory). Each form's outputs
are checked against the float product of the weights it holds before timing.

    taskset -c 0-7 python -m bench.tuning.cpu_int4 [--threads 8 4] [--rounds 5] [--layers 28]

Prints one JSON line: microseconds a layer (its four products), best of ``--rounds``, for each threads, set and
form, and the forms' relative errors.
"""

from __future__ import annotations

import argparse
import json
import time

import numpy as np
import torch

SHAPES = ((4096, 1024), (1024, 2048), (6144, 1024), (1024, 3072))  # qkv, out, gate_up, down of the 0.6B


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--threads", type=int, nargs="+", default=[8, 4])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--layers", type=int, default=28)
    args = ap.parse_args(argv)
    import numba
    from numba import njit

    from engine.model import int4_numba, vnni
    from engine.model import one_position_numba as jit
    from engine.model.int4 import Int4Weight
    from engine.model.int8 import Int8Weight

    @njit(parallel=True, **jit._JIT)
    def product(wq, ws, wsum, x, xq, lo, hi, y, vnni_on, parts, accs):
        sx = jit._quantize(x, xq)
        jit._product_into(wq, ws, wsum, xq, lo, hi, sx, y, False, vnni_on, parts, accs)

    g = torch.Generator().manual_seed(0)
    layers = [[torch.randn(n, k, generator=g) * 0.02 for n, k in SHAPES] for _ in range(args.layers)]
    made = {"int8": [[Int8Weight(w) for w in layer] for layer in layers],
            "int4": [[Int4Weight(w) for w in layer] for layer in layers]}
    arrays = {"int8": [[(w.q.numpy(), w.scale.float().numpy(), vnni.weight_sums(w.q.numpy(), jit.SEGMENT),
                         w.shape[1]) for w in layer] for layer in made["int8"]],
              "int4": [[(w.q.numpy(), w.scale.numpy(), np.zeros(w.shape[1] // int4_numba.GROUP, np.float32),
                         w.shape[1]) for w in layer] for layer in made["int4"]]}
    xs = {k: np.linspace(-1.0, 1.0, k).astype(np.float32) for _, k in SHAPES}
    scratch = {k: (np.empty(k, np.int16), np.empty(k, np.uint8), np.empty(k, np.uint8)) for k in xs}
    ys = {n: np.empty(n, np.float32) for n, _ in SHAPES}
    blocks = max(n for n, _ in SHAPES) // jit.ROW_BLOCK
    parts, accs = np.zeros((blocks, jit.SCRATCH_ROW), np.int32), np.zeros((blocks, jit.SCRATCH_ROW), np.float32)
    forms = [("int8", False), ("int4", False)] + ([("int8", True)] if vnni.available() else [])

    def run(way, chosen):
        for layer in chosen:
            for q, s, sums, k in layer:
                product(q, s, sums, xs[k], *scratch[k], ys[q.shape[0]], way, parts, accs)

    report = {"threads": args.threads, "layers": args.layers, "forms": [f"{k}_{'vnni' if v else '16bit'}"
                                                                          for k, v in forms], "error": {}}
    for kind, way in forms:  # each form's outputs against the float product of the weights it holds
        worst = 0.0
        for w, (q, s, sums, k) in zip(made[kind][0], arrays[kind][0], strict=True):
            product(q, s, sums, xs[k], *scratch[k], ys[w.shape[0]], way, parts, accs)
            exact = w.dequantized().double() @ torch.from_numpy(xs[k]).double()
            worst = max(worst, float(np.linalg.norm(ys[w.shape[0]] - exact.numpy()) / exact.norm()))
        report["error"][f"{kind}_{'vnni' if way else '16bit'}"] = worst
    for threads in args.threads:
        numba.set_num_threads(min(threads, numba.config.NUMBA_NUM_THREADS))
        for name, count in (("cached", 1), ("streamed", args.layers)):
            for kind, way in forms:
                chosen = (arrays[kind][:1] * args.layers) if count == 1 else arrays[kind]
                run(way, chosen)
                best = float("inf")
                for _ in range(args.rounds):
                    start = time.perf_counter()
                    run(way, chosen)
                    best = min(best, (time.perf_counter() - start) / len(chosen))
                report[f"{threads}t_{name}_{kind}_{'vnni' if way else '16bit'}_us"] = round(best * 1e6, 1)
    print(json.dumps(report))


if __name__ == "__main__":
    main()
