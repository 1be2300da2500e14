"""Matrix-vector products for one-row decode steps: ``x @ W.T`` (+ bias), with the decoder layer's
pointwise work folded in: the RMSNorm before a projection (``norm_linear``), SiLU(gate) * up before
the MLP's down projection (``silu_mul_linear``) and the residual add after the output projections.

At batch 1 every projection of the talker and the code predictor multiplies ONE row by a weight
matrix, so its cost is reading the weights. cuBLAS runs these as GEMMs with tiles made for many
rows, slower on every such shape than streaming the weight rows (docs/benchmarks.md#gemv-blocks);
this kernel streams a block of weight rows per program, accumulates in float32 and reduces once.
Each program reads the whole input row anyway, so it can normalise it on the way in (the row's
sum of squares is one more pass over a few kilobytes) and add the residual on the way out: a
decoder layer becomes four of these plus its attention. Rounding follows the PyTorch code step by
step (normalised row, times the norm weight, SiLU(gate), times up, the product, the residual add:
each rounded to the working precision), so the fused and unfused paths differ only by the order of
the float32 accumulation and the last bit of a square root: about one bf16 ulp, now and then.

``linear``, ``norm_linear`` and ``silu_mul_linear`` use the kernel for one contiguous bf16/fp16 row
on CUDA and fall back to the plain PyTorch code everywhere else (CPU, float32/float64, several rows,
Triton missing).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from engine.core.gpu_kernels import TRITON_INSTALLED, runs_on, triton_available

if TRITON_INSTALLED:
    import triton
    import triton.language as tl

    @triton.jit
    def gemv_kernel(x_ptr, w_ptr, b_ptr, g_ptr, r_ptr, y_ptr, N, K, HAS_BIAS: tl.constexpr,
                    SILU_MUL: tl.constexpr, NORM: tl.constexpr, RESIDUAL: tl.constexpr,
                    BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                    eps: tl.constexpr):  # a constant: Inductor would pass a float argument as fp64
        dt = y_ptr.dtype.element_ty
        rows = tl.program_id(0) * BLOCK_N + tl.arange(0, BLOCK_N)
        row_ok = rows < N
        if NORM:  # RMSNorm of the input row: its sum of squares first
            squares = tl.zeros([BLOCK_K], dtype=tl.float32)
            for k0 in range(0, K, BLOCK_K):
                cols = k0 + tl.arange(0, BLOCK_K)
                x = tl.load(x_ptr + cols, mask=cols < K, other=0.0).to(tl.float32)
                squares += x * x
            rstd = tl.math.rsqrt(tl.sum(squares, axis=0) / K + eps)
        acc = tl.zeros([BLOCK_N, BLOCK_K], dtype=tl.float32)
        for k0 in range(0, K, BLOCK_K):
            cols = k0 + tl.arange(0, BLOCK_K)
            col_ok = cols < K
            x = tl.load(x_ptr + cols, mask=col_ok, other=0.0).to(tl.float32)
            if SILU_MUL:  # x holds [gate | up] of 2K values: the input is silu(gate) * up, each rounded
                up = tl.load(x_ptr + K + cols, mask=col_ok, other=0.0).to(tl.float32)
                x = ((x * tl.sigmoid(x)).to(dt).to(tl.float32) * up).to(dt).to(tl.float32)
            if NORM:  # weight * (x * rstd), each product rounded as the RMSNorm module rounds it
                g = tl.load(g_ptr + cols, mask=col_ok, other=0.0).to(tl.float32)
                x = (g * (x * rstd).to(dt).to(tl.float32)).to(dt).to(tl.float32)
            w = tl.load(w_ptr + rows[:, None] * K + cols[None, :], mask=row_ok[:, None] & col_ok[None, :], other=0.0)
            acc += w.to(tl.float32) * x[None, :]
        y = tl.sum(acc, axis=1)
        if HAS_BIAS:
            y += tl.load(b_ptr + rows, mask=row_ok, other=0.0).to(tl.float32)
        if RESIDUAL:  # residual + the rounded product, as ``x + proj(...)`` rounds
            y = y.to(dt).to(tl.float32) + tl.load(r_ptr + rows, mask=row_ok, other=0.0).to(tl.float32)
        tl.store(y_ptr + rows, y.to(dt), mask=row_ok)

    @torch.library.triton_op("orator::gemv", mutates_args=())
    def gemv(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None, silu_mul: bool,
             norm_weight: torch.Tensor | None, eps: float, residual: torch.Tensor | None) -> torch.Tensor:
        """One row ``x`` [K] (or [2K] with ``silu_mul``) times ``weight`` [N, K] -> [N]; ``norm_weight``
        [K]: RMS-normalise ``x`` first; ``residual`` [N]: added to the result."""
        n, k = weight.shape
        y = torch.empty(n, dtype=x.dtype, device=x.device)
        block_n, block_k, warps = block_config(n, silu_mul)
        torch.library.wrap_triton(gemv_kernel)[(triton.cdiv(n, block_n),)](
            x, weight, weight if bias is None else bias, weight if norm_weight is None else norm_weight,
            weight if residual is None else residual, y, n, k, eps=eps, HAS_BIAS=bias is not None,
            SILU_MUL=silu_mul, NORM=norm_weight is not None, RESIDUAL=residual is not None,
            BLOCK_N=block_n, BLOCK_K=block_k, num_warps=warps)
        return y


def block_config(n: int, silu_mul: bool) -> tuple[int, int, int]:
    """(weight rows per program, columns per step, warps), from ``bench/tuning/gemv_configs.py`` with the
    weights read from HBM (docs/benchmarks.md#gemv-blocks): wide outputs want short column steps and few warps,
    narrow ones (1,024 outputs: too few programs to fill the SMs otherwise) long steps and more warps; the SiLU
    prologue wants eight rows a program."""
    if silu_mul:
        return 8, 2048, 8
    if n >= 4096:
        return 2, 512, 2
    if n <= 1024:
        return 2, 2048, 8
    return 2, 1024, 4


def _one_row(x: torch.Tensor, weight: torch.Tensor) -> bool:
    return (x.is_cuda and triton_available() and x.dtype in (torch.bfloat16, torch.float16) and x.numel() == x.shape[-1]
            and weight.is_contiguous() and weight.dtype == x.dtype and runs_on(x.device))


def _fused(x: torch.Tensor, weight: torch.Tensor, bias=None, silu_mul=False, norm=None, residual=None):
    y = torch.ops.orator.gemv(x.reshape(-1).contiguous(), weight, bias, silu_mul,
                              None if norm is None else norm.weight, 0.0 if norm is None else norm.eps,
                              None if residual is None else residual.reshape(-1).contiguous())
    return y.view(*x.shape[:-1], weight.shape[0])


def product(x: torch.Tensor, weight, bias: torch.Tensor | None = None) -> torch.Tensor:
    """``F.linear(x, weight, bias)``, for a float weight or an ``engine.core.cpu.int8.Int8Weight``."""
    if isinstance(weight, torch.Tensor):
        return F.linear(x, weight, bias)
    y = weight.matmul(x)
    return y if bias is None else y + bias


def linear(x: torch.Tensor, weight, bias: torch.Tensor | None = None,
           residual: torch.Tensor | None = None) -> torch.Tensor:
    """``residual + F.linear(x, weight, bias)`` (``residual`` optional); through the matrix-vector kernel
    when ``x`` is one row on CUDA."""
    if _one_row(x, weight):
        return _fused(x, weight, bias, residual=residual)
    y = product(x, weight, bias)
    return y if residual is None else residual + y


def norm_linear(x: torch.Tensor, norm, weight) -> torch.Tensor:
    """``F.linear(norm(x), weight)`` for an RMSNorm module ``norm`` (its ``weight`` and ``eps``)."""
    if _one_row(x, weight) and norm.weight.dtype == x.dtype:
        return _fused(x, weight, norm=norm)
    return product(norm(x), weight)


def silu_mul_linear(gate_up: torch.Tensor, weight, residual: torch.Tensor | None = None) -> torch.Tensor:
    """``residual + F.linear(silu(gate) * up, weight)`` where ``gate_up`` is ``[..., 2K]`` = [gate | up]."""
    if _one_row(gate_up, weight):
        return _fused(gate_up, weight, silu_mul=True, residual=residual)
    gate, up = gate_up.chunk(2, dim=-1)
    y = product(F.silu(gate) * up, weight)
    return y if residual is None else residual + y
