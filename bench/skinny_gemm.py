"""Times the decoder layers' projections at the many-streams loop's row counts (64 and 128 rows: a batch of
one-position steps) through cuBLAS (``F.linear``, what the step runs now) and through a Triton matrix product
(``tl.dot``) for a grid of tile sizes, with the K dimension optionally split over programs whose float32
partial results are added atomically. Each is replayed from a CUDA graph of 100 calls cycling through enough
weight copies that they come from HBM, as in the frame. A measurement to decide whether a kernel of our own
is worth writing for these shapes; the step does not use this one.

    python -m bench.skinny_gemm [--out results.json]
"""

from __future__ import annotations

import argparse
import itertools

import torch
import torch.nn.functional as F
import triton
import triton.language as tl

from bench.gemv_configs import SHAPES
from bench.kernel_sweep import COLD_BYTES, graph_us, report

ROWS = (64, 128)
# (BLOCK_N, BLOCK_K, SPLIT_K, stages)
CONFIGS = list(itertools.product((16, 32, 64), (128, 256), (1, 2, 4), (3, 4)))


@triton.jit
def _skinny_kernel(x_ptr, w_ptr, y_ptr, M, N, K, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                   BLOCK_K: tl.constexpr, SPLIT_K: tl.constexpr):
    pid_n = tl.program_id(0)
    pid_k = tl.program_id(1)
    rows = tl.arange(0, BLOCK_M)
    cols = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    acc = tl.zeros([BLOCK_M, BLOCK_N], dtype=tl.float32)
    span = tl.cdiv(K, SPLIT_K * BLOCK_K) * BLOCK_K
    for k0 in range(pid_k * span, tl.minimum(K, (pid_k + 1) * span), BLOCK_K):
        ks = k0 + tl.arange(0, BLOCK_K)
        x = tl.load(x_ptr + rows[:, None] * K + ks[None, :], mask=(rows[:, None] < M) & (ks[None, :] < K), other=0.0)
        w = tl.load(w_ptr + cols[:, None] * K + ks[None, :], mask=(cols[:, None] < N) & (ks[None, :] < K), other=0.0)
        acc += tl.dot(x, tl.trans(w))
    out = y_ptr + rows[:, None] * N + cols[None, :]
    ok = (rows[:, None] < M) & (cols[None, :] < N)
    if SPLIT_K == 1:
        tl.store(out, acc.to(y_ptr.dtype.element_ty), mask=ok)
    else:
        tl.atomic_add(out, acc, mask=ok)


def triton_linear(x, w, y, block_n, block_k, split_k, stages):
    m, k = x.shape
    n = w.shape[0]
    if split_k > 1:
        y.zero_()
    _skinny_kernel[(triton.cdiv(n, block_n), split_k)](x, w, y, m, n, k, BLOCK_M=max(16, triton.next_power_of_2(m)),
                                                       BLOCK_N=block_n, BLOCK_K=block_k, SPLIT_K=split_k,
                                                       num_warps=4, num_stages=stages)


def measure(name: str, n: int, k: int, rows: int) -> dict:
    copies = max(1, COLD_BYTES // (n * k * 2))
    ws = [torch.randn(n, k, device="cuda", dtype=torch.bfloat16) / k**0.5 for _ in range(copies)]
    x = torch.randn(rows, k, device="cuda", dtype=torch.bfloat16)
    cublas = graph_us(lambda i: F.linear(x, ws[i % copies]))
    expected = F.linear(x, ws[0]).float()
    times = {}
    for c in CONFIGS:
        y = torch.empty(rows, n, device="cuda", dtype=torch.float32 if c[2] > 1 else torch.bfloat16)
        try:
            triton_linear(x, ws[0], y, *c)
            if not torch.allclose(y.float(), expected, atol=2e-2, rtol=2e-2):
                raise ValueError("wrong result")
            times[c] = graph_us(lambda i, c=c, y=y: triton_linear(x, ws[i % copies], y, *c))
        except Exception as e:  # a configuration out of registers or shared memory: skip it
            print(f"{name} {rows} {c}: {type(e).__name__}: {str(e)[:200]}", flush=True)
    best = min(times, key=times.get)
    best_single = min((c for c in times if c[2] == 1), key=times.get)
    mb = n * k * 2 / 1e6
    return {"shape": name, "rows": rows, "n": n, "k": k, "mb": mb, "cublas_us": round(cublas, 2),
            "cublas_tb_s": round(mb / cublas, 2), "best": best, "best_us": round(times[best], 2),
            "best_unsplit": best_single, "best_unsplit_us": round(times[best_single], 2),
            "all": {str(c): round(t, 2) for c, t in times.items()}}


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out")
    args = ap.parse_args(argv)
    report((measure(name, n, k, rows) for (name, n, k), rows in itertools.product(SHAPES, ROWS)), args.out)


if __name__ == "__main__":
    main()
