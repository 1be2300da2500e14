"""The Numba one-position steps against the PyTorch ones, for one ``ROW_BLOCK`` (rows of a product one task
computes), on a synthetic checkpoint: a code-predictor pass, a talker step, and a pass's 20 products alone.

    NUMBA_CACHE_DIR=/tmp/nb16 taskset -c 0-7 python -m bench.tuning.numba_blocks --model DIR --block 16 --threads 8 4

The block is set before the kernels' first compile, so give each value a process and a cache folder of its own.
Prints one dict a thread count, milliseconds, best of 5 rounds.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import torch

import engine.core.cpu.numba_layer as kernels
import engine.core.cpu.one_position_numba as jit


def best(fn, repeats: int = 10, rounds: int = 5) -> float:
    fn()
    times = []
    for _ in range(rounds):
        start = time.perf_counter()
        for _ in range(repeats):
            fn()
        times.append((time.perf_counter() - start) / repeats * 1e3)
    return min(times)


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", required=True)
    ap.add_argument("--block", type=int, default=kernels.ROW_BLOCK)
    ap.add_argument("--threads", type=int, nargs="+", default=[torch.get_num_threads()])
    args = ap.parse_args(argv)
    kernels.ROW_BLOCK = args.block  # read when the kernels compile
    from engine import Engine
    from engine.core.cpu.one_position import one_position_stacks

    talker = Engine.from_pretrained(args.model, device="cpu").model.talker
    stacks = one_position_stacks(talker)
    steps = jit.numba_stacks(talker, stacks)
    predictor_cache = talker.code_predictor.model.new_cache(1, 16, torch.float32, "cpu")
    talker_cache = talker.model.new_cache(1, 256, torch.float32, "cpu")
    numba_pass, numba_talker = steps[1].over(predictor_cache), steps[0].over(talker_cache)
    torch_pass, torch_talker = stacks[1].over(predictor_cache), stacks[0].over(talker_cache)
    x = torch.randn(1, talker.model.norm.weight.shape[0])
    xp = torch.randn(1, talker.code_predictor.model.norm.weight.shape[0])  # narrower than x in a 1.7B
    weights = [layer[i] for layer in stacks[1].layers for i in (1, 4, 6, 7)]
    inputs = [torch.randn(1, w.shape[1]) for w in weights]
    outputs = [np.empty(w.shape[0], np.float32) for w in weights]
    arrays = [(w.q.numpy(), w.scale.float().numpy()) for w in weights]

    def numba_products():
        for (q, s), i, o in zip(arrays, inputs, outputs, strict=True):
            kernels.product(q, s, i.numpy()[0], np.empty(q.shape[1], np.int16), o)

    def torch_products():
        for w, i in zip(weights, inputs, strict=True):
            w.row(i)

    for threads in args.threads:
        torch.set_num_threads(threads)
        with torch.inference_mode():
            report = {"block": kernels.ROW_BLOCK, "threads": threads,
                      "numba_pass": best(lambda: numba_pass(xp, 15)), "torch_pass": best(lambda: torch_pass(xp, 15)),
                      "numba_talker": best(lambda: numba_talker(x, 200)),
                      "torch_talker": best(lambda: torch_talker(x, 200)),
                      "numba_products": best(numba_products), "torch_products": best(torch_products)}
        print({k: round(v, 3) if isinstance(v, float) else v for k, v in report.items()}, flush=True)


if __name__ == "__main__":
    main()
