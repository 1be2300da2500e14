"""Times the matrix-vector kernel against cuBLAS (``F.linear``) on every projection shape of the 0.6B and
1.7B checkpoints, for a grid of block configurations, each replayed from a CUDA graph of 100 calls (as
in the frame step). Picks ``engine.core.gpu_kernels.gemv.block_config``.

As in the frame, the weights come from HBM, not L2: the calls cycle through enough copies of the weight
matrix (``COLD_BYTES`` in all, several times the H200's 60 MB L2) that none is still cached when it is
read again. ``--warm`` reuses one copy (what the first sweep measured: it flatters small matrices).

    python -m bench.tuning.gemv_configs [--out results.json]
"""

from __future__ import annotations

import argparse
import itertools

import torch
import torch.nn.functional as F
import triton

from bench.tuning.kernel_sweep import COLD_BYTES, graph_us, report
from engine.core.gpu_kernels import gemv

# (name, outputs N, inputs K): talker/predictor projections, heads
SHAPES = [("0.6b qkv", 4096, 1024), ("0.6b o", 1024, 2048), ("0.6b gate_up", 6144, 1024), ("0.6b down", 1024, 3072),
          ("codec_head 0.6b", 3072, 1024), ("predictor head", 2048, 1024), ("1.7b qkv", 4096, 2048),
          ("1.7b o", 2048, 2048), ("1.7b gate_up", 12288, 2048), ("1.7b down", 2048, 6144),
          ("codec_head 1.7b", 3072, 2048), ("1.7b mtp proj", 1024, 2048)]
CONFIGS = list(itertools.product((1, 2, 4, 8, 16), (256, 512, 1024, 2048), (2, 4, 8)))


def launch(x, w, y, silu, bn, bk, warps):
    n, k = w.shape
    gemv.gemv_kernel[(triton.cdiv(n, bn),)](x, w, w, w, w, y, n, k, HAS_BIAS=False, SILU_MUL=silu, NORM=False,
                                            RESIDUAL=False, BLOCK_N=bn, BLOCK_K=bk, eps=0.0, num_warps=warps)


def measure(name: str, n: int, k: int, warm: bool = False) -> dict:
    """cuBLAS and every configuration on one shape (the down projections with SiLU(gate) * up)."""
    copies = 1 if warm else max(1, COLD_BYTES // (n * k * 2))
    ws = [torch.randn(n, k, device="cuda", dtype=torch.bfloat16) for _ in range(copies)]
    x = torch.randn(1, 2 * k, device="cuda", dtype=torch.bfloat16)
    y = torch.empty(n, device="cuda", dtype=torch.bfloat16)
    silu = "down" in name
    if silu:
        cublas = graph_us(lambda i: F.linear(F.silu(x[:, :k]) * x[:, k:], ws[i % copies]))
    else:
        cublas = graph_us(lambda i: F.linear(x[:, :k], ws[i % copies]))
    xin = x[0] if silu else x[0, :k]
    times = {}
    for c in CONFIGS:
        try:
            times[c] = graph_us(lambda i, c=c: launch(xin, ws[i % copies], y, silu, *c))
        except Exception as e:  # a configuration out of the GPU's registers or shared memory: skip it
            print(f"{name} {c}: {type(e).__name__}: {str(e)[:200]}", flush=True)
    best = min(times, key=times.get)
    chosen = gemv.block_config(n, silu)
    return {"shape": name, "n": n, "k": k, "weights": "L2-warm" if warm else "HBM", "cublas_us": cublas,
            "best": best, "best_us": times[best], "chosen": chosen, "chosen_us": times.get(chosen),
            "mb": n * k * 2 / 1e6, "best_tb_s": n * k * 2 / times[best] / 1e6,
            "all": {str(c): t for c, t in times.items()}}


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out")
    ap.add_argument("--warm", action="store_true", help="one weight copy, read from L2 after the first call")
    args = ap.parse_args(argv)
    report((measure(name, n, k, args.warm) for name, n, k in SHAPES), args.out)


if __name__ == "__main__":
    main()
