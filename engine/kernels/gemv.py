"""Matrix-vector products for one-row decode steps: ``x @ W.T`` (+ bias), and the MLP's down projection
with SiLU(gate) * up computed on the fly from the fused gate/up output.

At batch 1 every projection of the talker and the code predictor multiplies ONE row by a weight
matrix, so its cost is reading the weights. cuBLAS runs these as GEMMs with tiles made for many
rows and reaches about a third of the H200's bandwidth on the shapes here (1,024..6,144 outputs);
this kernel streams a block of weight rows per program, accumulates in float32 and reduces once.
``linear`` and ``silu_mul_linear`` use it for one contiguous bf16/fp16 row on CUDA and fall back to
``F.linear`` everywhere else (CPU, float32/float64, several rows, Triton missing).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from engine.kernels import triton_available

_ENABLED = triton_available()
if _ENABLED:
    import triton
    import triton.language as tl

    @triton.jit
    def _gemv_kernel(x_ptr, w_ptr, b_ptr, y_ptr, N, K, HAS_BIAS: tl.constexpr, SILU_MUL: tl.constexpr,
                     BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
        rows = tl.program_id(0) * BLOCK_N + tl.arange(0, BLOCK_N)
        row_ok = rows < N
        acc = tl.zeros([BLOCK_N, BLOCK_K], dtype=tl.float32)
        for k0 in range(0, K, BLOCK_K):
            cols = k0 + tl.arange(0, BLOCK_K)
            col_ok = cols < K
            x = tl.load(x_ptr + cols, mask=col_ok, other=0.0).to(tl.float32)
            if SILU_MUL:  # x holds [gate | up] of 2K values: the input is silu(gate) * up
                up = tl.load(x_ptr + K + cols, mask=col_ok, other=0.0).to(tl.float32)
                x = x * tl.sigmoid(x) * up
            w = tl.load(w_ptr + rows[:, None] * K + cols[None, :], mask=row_ok[:, None] & col_ok[None, :], other=0.0)
            acc += w.to(tl.float32) * x[None, :]
        y = tl.sum(acc, axis=1)
        if HAS_BIAS:
            y += tl.load(b_ptr + rows, mask=row_ok, other=0.0).to(tl.float32)
        tl.store(y_ptr + rows, y.to(y_ptr.dtype.element_ty), mask=row_ok)

    @torch.library.triton_op("orator::gemv", mutates_args=())
    def gemv(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None, silu_mul: bool) -> torch.Tensor:
        """One row ``x`` [K] (or [2K] with ``silu_mul``) times ``weight`` [N, K] -> [N]."""
        n, k = weight.shape
        y = torch.empty(n, dtype=x.dtype, device=x.device)
        block_n, block_k, warps = block_config(n, silu_mul)
        torch.library.wrap_triton(_gemv_kernel)[(triton.cdiv(n, block_n),)](
            x, weight, bias if bias is not None else weight, y, n, k, HAS_BIAS=bias is not None, SILU_MUL=silu_mul,
            BLOCK_N=block_n, BLOCK_K=block_k, num_warps=warps)
        return y


def block_config(n: int, silu_mul: bool) -> tuple[int, int, int]:
    """(weight rows per program, columns per step, warps), from ``bench/gemv_configs.py`` on an H200: few
    rows and long column steps keep every SM streaming; the SiLU prologue wants more warps."""
    if silu_mul:
        return (4 if n <= 1024 else 8), 1024, 8
    return 2, 1024, 4


def _one_row(x: torch.Tensor, weight: torch.Tensor) -> bool:
    return (_ENABLED and x.is_cuda and x.dtype in (torch.bfloat16, torch.float16) and x.numel() == x.shape[-1]
            and weight.is_contiguous() and weight.dtype == x.dtype)


def linear(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None = None) -> torch.Tensor:
    """``F.linear(x, weight, bias)``; through the matrix-vector kernel when ``x`` is one row on CUDA."""
    if not _one_row(x, weight):
        return F.linear(x, weight, bias)
    y = torch.ops.orator.gemv(x.reshape(-1).contiguous(), weight, bias, False)
    return y.view(*x.shape[:-1], weight.shape[0])


def silu_mul_linear(gate_up: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
    """``F.linear(silu(gate) * up, weight)`` where ``gate_up`` is ``[..., 2K]`` = [gate | up]."""
    if not _one_row(gate_up, weight):
        gate, up = gate_up.chunk(2, dim=-1)
        return F.linear(F.silu(gate) * up, weight)
    y = torch.ops.orator.gemv(gate_up.reshape(-1).contiguous(), weight, None, True)
    return y.view(*gate_up.shape[:-1], weight.shape[0])
