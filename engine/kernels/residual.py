"""A residual sum with the bias of the convolution that made one of its terms, in one pass.

PyTorch runs a biased convolution on the GPU as cuDNN's convolution, then a separate broadcast pass that
adds the bias; a residual unit then adds its input in a third. ``add_biased(x, y, bias)`` computes
``x + (y + bias)`` per channel over [B, C, T] in one Triton pass (in float32, each sum rounded to the
tensors' dtype as the PyTorch code rounds it, so bit for bit the same)
and falls back to those PyTorch operations everywhere else (CPU, float64, Triton missing).
"""

from __future__ import annotations

import torch

from engine.kernels import CHANNEL_TIME_DTYPES, channel_time_launch, runs_on, triton_available

_ENABLED = triton_available()
if _ENABLED:
    import triton
    import triton.language as tl

    @triton.jit
    def _add_biased_kernel(x_ptr, y_ptr, bias_ptr, out_ptr, C, T, T_BLOCKS, sx_b, sx_c, sy_b, sy_c, so_b, so_c,
                           BLOCK_T: tl.constexpr):
        pid = tl.program_id(0)  # (row * C + channel) * T_BLOCKS + block of time steps, as the SnakeBeta kernel
        row_channel = pid // T_BLOCKS
        b = (row_channel // C).to(tl.int64)
        c = (row_channel % C).to(tl.int64)
        t = (pid % T_BLOCKS) * BLOCK_T + tl.arange(0, BLOCK_T)
        ok = t < T
        x = tl.load(x_ptr + b * sx_b + c * sx_c + t, mask=ok, other=0.0).to(tl.float32)
        y = tl.load(y_ptr + b * sy_b + c * sy_c + t, mask=ok, other=0.0).to(tl.float32)
        biased = (y + tl.load(bias_ptr + c).to(tl.float32)).to(out_ptr.dtype.element_ty).to(tl.float32)
        tl.store(out_ptr + b * so_b + c * so_c + t, (x + biased).to(out_ptr.dtype.element_ty), mask=ok)


def add_biased_kernel(x: torch.Tensor, y: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
    """``x + (y + bias)`` through the Triton kernel: x, y [B, C, T] of one dtype, contiguous in time; bias [C].
    Returns a new contiguous tensor."""
    if x.shape != y.shape or x.dtype != y.dtype or x.stride(-1) != 1 or y.stride(-1) != 1:
        raise ValueError("add_biased_kernel needs x and y of one shape and dtype, contiguous in time")
    b, c, t = x.shape
    out = torch.empty(b, c, t, dtype=x.dtype, device=x.device)
    if out.numel() == 0:
        return out
    block, t_blocks, warps = channel_time_launch(t)
    _add_biased_kernel[(b * c * t_blocks,)](x, y, bias, out, c, t, t_blocks, x.stride(0), x.stride(1), y.stride(0),
                                            y.stride(1), out.stride(0), out.stride(1), BLOCK_T=block, num_warps=warps)
    return out


def add_biased(x: torch.Tensor, y: torch.Tensor, bias: torch.Tensor | None) -> torch.Tensor:
    """``x + (y + bias[None, :, None])`` over x, y [B, C, T] (``x + y`` without a bias), in x's dtype."""
    if bias is None:
        return x + y
    if (_ENABLED and x.is_cuda and x.dtype in CHANNEL_TIME_DTYPES and x.dtype == y.dtype
            and bias.dtype in CHANNEL_TIME_DTYPES and x.shape == y.shape and x.stride(-1) == 1
            and y.stride(-1) == 1 and runs_on(x.device)):
        return add_biased_kernel(x, y, bias)
    return x + (y + bias[None, :, None])
