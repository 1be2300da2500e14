"""Times the sampling kernel (``engine.core.gpu_kernels.sampler``: temperature, top-k, top-p and the draw, one program a
row) at the frame step's shapes for each number of warps a program, replayed from a CUDA graph of one frame's
calls (a code-predictor row of 2,048 logits and the talker's 3,072). Picks ``sampler.WARPS``: the top-k and top-p
bisections reduce the whole row dozens of times, and a reduction over several warps goes through shared memory
and a barrier.

    python -m bench.tuning.sampler_configs [--out results.json]
"""

from __future__ import annotations

import argparse

import torch

from bench.tuning.kernel_sweep import graph_us, report
from engine.core.gpu_kernels import sampler
from engine.core.sampling import StageSettings

# (name, logits a row, calls a frame): the code predictor's 15 codebooks, the talker's codebook 0
VOCABS = [("predictor", 2048, 15), ("talker", 3072, 1)]
ROWS = (1, 64, 128)
SETTINGS = {"top-k 50": (50, 1.0), "top-k 50, top-p 0.9": (50, 0.9)}  # the checkpoints' defaults; a top-p
WARPS = (None, 1, 2, 4, 8, 16)  # None: the kernel's default


def measure(name: str, vocab: int, calls: int, rows: int, setting: str) -> dict:
    """Microseconds a call for each number of warps; the ids each draws must agree with the default's."""
    top_k, top_p = SETTINGS[setting]
    g = torch.Generator(device="cuda").manual_seed(rows)
    logits = torch.randn(rows, vocab, device="cuda", generator=g) * 3
    s = StageSettings.allocate(rows, "cuda")
    s.temperature.fill_(0.9)
    s.top_k.fill_(top_k)
    s.top_p.fill_(top_p)
    seeds = torch.arange(rows, device="cuda")
    counter = torch.zeros(rows, dtype=torch.int64, device="cuda")
    times, expected = {}, None
    for warps in WARPS:
        sampler.WARPS = warps
        try:
            ids = sampler.sample_triton(logits, s, seeds, counter)
            expected = ids if expected is None else expected
            if not torch.equal(ids, expected):
                raise ValueError("draws other ids than the default")
            times[warps] = graph_us(lambda i: sampler.sample_triton(logits, s, seeds, counter), calls=calls * 4)
        except Exception as e:  # out of registers, or wrong: skip it
            print(f"{name} {rows} {warps}: {type(e).__name__}: {str(e)[:200]}", flush=True)
    sampler.WARPS = None
    best = min(times, key=times.get)
    return {"vocab": name, "logits": vocab, "rows": rows, "setting": setting, "best": best,
            "best_us": round(times[best], 2), "default_us": round(times[None], 2),
            "all": {str(w): round(t, 2) for w, t in times.items()}}


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out")
    args = ap.parse_args(argv)
    report((measure(name, vocab, calls, rows, setting) for name, vocab, calls in VOCABS for rows in ROWS
            for setting in SETTINGS), args.out)


if __name__ == "__main__":
    main()
