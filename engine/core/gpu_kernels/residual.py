"""A residual sum with the bias of the convolution that made one of its terms, in one pass.

PyTorch runs a biased convolution on the GPU as cuDNN's convolution, then a separate broadcast pass that
adds the bias; a residual unit then adds its input in a third. ``add_biased(x, y, bias)`` computes
``x + (y + bias)`` per channel over [B, C, T] in one Triton pass (in float32, each sum rounded to the
tensors' dtype as the PyTorch code rounds it, so bit for bit the same)
and falls back to those PyTorch operations everywhere else (CPU, float64, Triton missing). With ``x_bias``
x gets a bias of its own first, ``(x + x_bias) + (y + bias)``: the first residual unit after a transposed
convolution (``UpsampleBlock``) takes that convolution's output without its bias, so no pass adds it.
"""

from __future__ import annotations

import torch

from engine.core.codec.layout import empty_like_layout
from engine.core.gpu_kernels import TRITON_INSTALLED, runs_on, triton_available
from engine.core.gpu_kernels.channel_time import CHANNEL_TIME_DTYPES, channel_time_launch

if TRITON_INSTALLED:
    import triton
    import triton.language as tl

    @triton.jit
    def _add_biased_kernel(x_ptr, y_ptr, bias_ptr, x_bias_ptr, out_ptr, C, T, T_BLOCKS, C_BLOCKS, sx_b, sx_c, sx_t,
                           sy_b, sy_c, sy_t, so_b, so_c, so_t, HAS_X_BIAS: tl.constexpr, BLOCK_T: tl.constexpr,
                           BLOCK_C: tl.constexpr):
        pid = tl.program_id(0)  # (row * T_BLOCKS + block of time steps) * C_BLOCKS + block of channels
        c = (pid % C_BLOCKS) * BLOCK_C + tl.arange(0, BLOCK_C)
        rest = pid // C_BLOCKS
        t = ((rest % T_BLOCKS) * BLOCK_T + tl.arange(0, BLOCK_T)).to(tl.int64)[:, None]
        b = (rest // T_BLOCKS).to(tl.int64)
        ok = (t < T) & (c[None, :] < C)
        x = tl.load(x_ptr + b * sx_b + t * sx_t + c[None, :] * sx_c, mask=ok, other=0.0).to(tl.float32)
        if HAS_X_BIAS:
            x_bias = tl.load(x_bias_ptr + c, mask=c < C, other=0.0).to(tl.float32)
            x = (x + x_bias[None, :]).to(out_ptr.dtype.element_ty).to(tl.float32)
        y = tl.load(y_ptr + b * sy_b + t * sy_t + c[None, :] * sy_c, mask=ok, other=0.0).to(tl.float32)
        bias = tl.load(bias_ptr + c, mask=c < C, other=0.0).to(tl.float32)
        biased = (y + bias[None, :]).to(out_ptr.dtype.element_ty).to(tl.float32)
        tl.store(out_ptr + b * so_b + t * so_t + c[None, :] * so_c, (x + biased).to(out_ptr.dtype.element_ty),
                 mask=ok)


def add_biased_kernel(x: torch.Tensor, y: torch.Tensor, bias: torch.Tensor,
                      x_bias: torch.Tensor | None = None) -> torch.Tensor:
    """``x + (y + bias)`` (``(x + x_bias) + (y + bias)`` with ``x_bias``) through the Triton kernel: x, y [B, C, T]
    of one dtype, any strides; the biases [C]. Returns a new tensor laid out as x (``empty_like_layout``)."""
    if x.shape != y.shape or x.dtype != y.dtype:
        raise ValueError("add_biased_kernel needs x and y of one shape and dtype")
    out = empty_like_layout(x)
    if out.numel() == 0:
        return out
    block_t, block_c, t_blocks, c_blocks, warps = channel_time_launch(x)
    b, c, t = x.shape
    _add_biased_kernel[(b * t_blocks * c_blocks,)](x, y, bias, bias if x_bias is None else x_bias, out, c, t, t_blocks,
                                                   c_blocks, *x.stride(), *y.stride(), *out.stride(),
                                                   HAS_X_BIAS=x_bias is not None, BLOCK_T=block_t, BLOCK_C=block_c,
                                                   num_warps=warps)
    return out


def add_biased(x: torch.Tensor, y: torch.Tensor, bias: torch.Tensor | None,
               x_bias: torch.Tensor | None = None) -> torch.Tensor:
    """``x + (y + bias[None, :, None])`` over x, y [B, C, T] (``x + y`` without a bias), in x's dtype; with
    ``x_bias`` [C], x is ``x + x_bias[None, :, None]`` first."""
    if bias is not None and (x.is_cuda and triton_available() and x.dtype in CHANNEL_TIME_DTYPES and x.dtype == y.dtype
                             and bias.dtype in CHANNEL_TIME_DTYPES and x.shape == y.shape and runs_on(x.device)
                             and (x_bias is None or x_bias.dtype in CHANNEL_TIME_DTYPES)):
        return add_biased_kernel(x, y, bias, x_bias)
    if x_bias is not None:
        x = x + x_bias[None, :, None]
    return x + y if bias is None else x + (y + bias[None, :, None])
