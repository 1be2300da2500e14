"""SnakeBeta, the codec decoder's activation (``engine.core.codec.conv.SnakeBeta``), in one pass over its input.

``x + sin(x * e^alpha)^2 / (e^beta + 1e-9)`` per channel is six PyTorch kernels, each reading and writing
the whole activation; on the decoder's last stages (96..384 channels at 2..24 kHz, for every stream of a
batch) those passes are a large share of a decode. This kernel reads x once and writes the result once. It
computes in float32 whatever the input's dtype and rounds once, on the store, to the output's dtype: a
bfloat16 or float16 decoder (``Engine.from_pretrained(decoder_dtype=...)``) gets the float32 formula rounded
to its dtype, closer to the exact value than the PyTorch code, which computes every step in that dtype. The
per-channel parameters are read in their own dtype (the decoder's: float32, bfloat16 or float16) and widened
to float32.

``sin(v)^2`` comes from a polynomial (``_sin_squared``), within 2.5e-7 of the exact value for |v| up to
~200,000 (a float32 ulp of 1 is 1.2e-7), so a float32 decoder's audio agrees with the PyTorch code to float
tolerance, not bit for bit. The accurate float32 ``sin`` (libdevice's, with its reduction for huge
arguments) made the kernel compute-bound instead of memory-bound (docs/benchmarks.md#snake-sine).

With ``bias`` (per channel) the kernel adds it to x first, rounded to x's dtype as PyTorch's own pass would:
the bias of the convolution before the activation, which then needs no pass of its own (``ResidualUnit``).

``snake_beta`` runs it for a float32, bfloat16 or float16 CUDA tensor of any strides (the decoder's are
channels-last) and falls back to the PyTorch code everywhere else (CPU, float64, Triton missing).
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
    def _sin_squared(v):
        # sin^2 has period pi: v less its nearest multiple k * pi is r in [-pi/2, pi/2] (pi in three parts, the
        # first two short enough that k * part is exact for |k| < 2^16), and sin(r) is r plus an odd polynomial
        # of degree 9 fitted to sin on that interval (5e-9 from it in exact arithmetic)
        k = tl.floor(v * 0.3183098861837907 + 0.5)
        r = v - k * 3.140625
        r = r - k * 9.675025939941406e-4
        r = r - k * 1.5099580252808664e-7
        r2 = r * r
        p = (2.6000548132287804e-6 * r2 - 1.9806614727713168e-4) * r2 + 8.333017118275166e-3
        p = p * r2 - 0.16666656732559204
        s = r + r * r2 * p
        return s * s

    @triton.jit
    def _snake_kernel(x_ptr, log_alpha_ptr, log_beta_ptr, bias_ptr, y_ptr, C, T, T_BLOCKS, C_BLOCKS, sx_b, sx_c,
                      sx_t, sy_b, sy_c, sy_t, HAS_BIAS: tl.constexpr, BLOCK_T: tl.constexpr, BLOCK_C: tl.constexpr):
        pid = tl.program_id(0)  # (row * T_BLOCKS + block of time steps) * C_BLOCKS + block of channels
        c = (pid % C_BLOCKS) * BLOCK_C + tl.arange(0, BLOCK_C)
        rest = pid // C_BLOCKS
        t = ((rest % T_BLOCKS) * BLOCK_T + tl.arange(0, BLOCK_T)).to(tl.int64)  # an hour is ~86M samples
        b = (rest // T_BLOCKS).to(tl.int64)
        ok = (t[:, None] < T) & (c[None, :] < C)
        x = tl.load(x_ptr + b * sx_b + t[:, None] * sx_t + c[None, :] * sx_c, mask=ok, other=0.0).to(tl.float32)
        if HAS_BIAS:
            bias = tl.load(bias_ptr + c, mask=c < C, other=0.0).to(tl.float32)
            x = (x + bias[None, :]).to(x_ptr.dtype.element_ty).to(tl.float32)
        alpha = tl.exp(tl.load(log_alpha_ptr + c, mask=c < C, other=0.0).to(tl.float32))
        inv_beta = 1.0 / (tl.exp(tl.load(log_beta_ptr + c, mask=c < C, other=0.0).to(tl.float32)) + 1e-9)
        y = x + inv_beta[None, :] * _sin_squared(x * alpha[None, :])  # float32; rounded once, on the store
        tl.store(y_ptr + b * sy_b + t[:, None] * sy_t + c[None, :] * sy_c, y.to(y_ptr.dtype.element_ty), mask=ok)


def snake_beta_kernel(x: torch.Tensor, log_alpha: torch.Tensor, log_beta: torch.Tensor,
                      out: torch.Tensor | None = None, bias: torch.Tensor | None = None) -> torch.Tensor:
    """SnakeBeta of x [B, C, T] (any strides; float32, bfloat16 or float16; plus ``bias`` [C] first, rounded to
    x's dtype as a separate addition would be) with per-channel log_alpha, log_beta [C] (contiguous, any of
    those dtypes) -> ``out`` [B, C, T] in x's dtype (any strides; by default a new tensor laid out as x, see
    ``empty_like_layout``), through the Triton kernel: computed in float32, rounded once."""
    if out is not None and (out.shape != x.shape or out.dtype != x.dtype):
        raise ValueError(f"out must be {tuple(x.shape)} {x.dtype}, not {tuple(out.shape)} {out.dtype}")
    y = empty_like_layout(x) if out is None else out
    if y.numel() == 0:
        return y
    block_t, block_c, t_blocks, c_blocks, warps = channel_time_launch(x)
    b, c, t = x.shape
    _snake_kernel[(b * t_blocks * c_blocks,)](x, log_alpha, log_beta, log_alpha if bias is None else bias, y, c, t,
                                              t_blocks, c_blocks, *x.stride(), *y.stride(), HAS_BIAS=bias is not None,
                                              BLOCK_T=block_t, BLOCK_C=block_c, num_warps=warps)
    return y


def snake_beta(x: torch.Tensor, log_alpha: torch.Tensor, log_beta: torch.Tensor,
               out: torch.Tensor | None = None, bias: torch.Tensor | None = None) -> torch.Tensor:
    """``x + sin(x * e^log_alpha)^2 / (e^log_beta + 1e-9)`` over x [B, C, T] (``x + bias`` when a per-channel
    bias is given), the parameters per channel [C], in x's dtype; written into ``out`` (same shape) when given."""
    if (x.is_cuda and triton_available() and x.dtype in CHANNEL_TIME_DTYPES and log_alpha.dtype in CHANNEL_TIME_DTYPES
            and log_beta.dtype in CHANNEL_TIME_DTYPES and (bias is None or bias.dtype in CHANNEL_TIME_DTYPES)
            and runs_on(x.device)):
        return snake_beta_kernel(x, log_alpha, log_beta, out, bias)
    if bias is not None:
        x = x + bias[None, :, None]
    alpha = log_alpha.exp()[None, :, None]
    beta = log_beta.exp()[None, :, None]
    y = (x + (1.0 / (beta + 1e-9)) * torch.sin(x * alpha).pow(2)).to(x.dtype)  # x's dtype, as the kernel's
    return y if out is None else out.copy_(y)
