"""One attention head's q or k as ``engine.core.model.layers.Attention`` makes it from the projection's output:
the per-head RMSNorm, then rotate-half RoPE, inside a Triton kernel (the attention kernels of
``attention.py`` and ``short_attention.py`` share it).

Rounded where the layer code rounds: the norm in float32, rounded to the working dtype before the weight
multiplies it, that product rounded; RoPE's two products rounded, then their sum. A kernel using it must be
launched with ``enable_fp_fusion=False`` (``NO_FMA``): with fusion on, the GPU compiler narrows RoPE's rounded
product and the sum to bf16 operations and fuses them into one bf16 FMA, dropping the product's rounding (on
an H200 a third of the outputs then differed from the layer code's; Triton's interpreter never fuses).
"""

from __future__ import annotations

import triton
import triton.language as tl

NO_FMA = {"enable_fp_fusion": False}  # launch options of every kernel calling normed_rotated (see above)


@triton.jit
def normed_rotated(x_ptr, w_ptr, cos, sin, eps: tl.constexpr, D: tl.constexpr):
    """One head's ``q_norm(x) * cos + rotate_half(q_norm(x)) * sin`` ([D] in x's dtype) from the head's D values
    at ``x_ptr`` and the norm weight at ``w_ptr``; cos and sin [D] in float32."""
    d = tl.arange(0, D)
    rot = (d + D // 2) % D  # rotate_half's order: the other half...
    sign = tl.where(d < D // 2, -1.0, 1.0)  # ...the first half negated
    dt = x_ptr.dtype.element_ty
    x = tl.load(x_ptr + d).to(tl.float32)
    x_rot = tl.load(x_ptr + rot).to(tl.float32)  # the same values in rotate_half's order (an L1 hit)
    rstd = tl.math.rsqrt(tl.sum(x * x, axis=0) / D + eps)
    y = (tl.load(w_ptr + d).to(tl.float32) * (x * rstd).to(dt).to(tl.float32)).to(dt).to(tl.float32)
    y_rot = (tl.load(w_ptr + rot).to(tl.float32) * (x_rot * rstd).to(dt).to(tl.float32)).to(dt).to(tl.float32)
    return ((y * cos).to(dt).to(tl.float32) + (sign * y_rot * sin).to(dt).to(tl.float32)).to(dt)
