"""The code predictor's attention step in one kernel: q/k RMSNorm, RoPE, the cache write and the attention
over its few slots, from the fused q/k/v projection's output to the input of the output projection.

A code-predictor decode step (one query position per row, a cache of 16 slots) has little arithmetic
between its two projections, but compiled it is about five small kernels per layer (the per-head norms,
RoPE, ``index_put_`` of the new key and value, the attention's products and softmax), each a launch of a
microsecond or two: ~350 per frame. Here one program per (row, key/value head) normalises and rotates
the new key, writes the new key and value at the row's slot, loads the slots before it (the new slot's
key and value come from registers, so nothing written is read back) and, for each of the query heads
sharing that key/value head, normalises and rotates the query and attends over slots [0, write_pos].

Numerics follow ``engine.core.model.layers.Attention`` step by step: the norms and RoPE rounded where it
rounds them (``rope_norm.normed_rotated``, shared with the talker's kernel in ``attention.py``); scores
(scaled by head_dim**-0.5), softmax and the weighted sum of values in float32, the output rounded once.
The unfused and fused paths differ by the order of float32 sums (and the last bit of a square root):
about one bf16 ulp now and then.

``orator::short_attention_block`` is a ``torch.library.custom_op`` that mutates the key and value caches:
``torch.compile`` keeps it as one opaque call, and it is capturable in a CUDA graph. Not a ``triton_op``
(which Inductor traces into, as it does gemv's and the sampler's): the caches it writes are one layer's
views of the stack's cache, and Inductor (PyTorch 2.13) writes a traced kernel's mutation of a view of a
graph input into a clone, then copies the clone back into the whole cache, every step. A custom op's
mutation of a view is written in place. On CPU it runs in Triton's interpreter for the tests.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from engine.core.gpu_kernels import block_args
from engine.core.gpu_kernels.rope_norm import NO_FMA, normed_rotated

WARPS = 1  # one warp: reductions without shared memory or barriers (docs/benchmarks.md#predictor-attention-warps)


@triton.jit
def _short_attention_kernel(qkv_ptr, qw_ptr, kw_ptr, cos_ptr, sin_ptr, k_ptr, v_ptr, pos_ptr, out_ptr, S,
                            s_qkv, s_cos, s_sin, sk_b, sk_h, sk_s, sv_b, sv_h, sv_s, s_pos, s_out,
                            eps: tl.constexpr, scale: tl.constexpr,  # the model's constants, compiled in
                            KV: tl.constexpr, G: tl.constexpr, D: tl.constexpr, BLOCK_S: tl.constexpr):
    pid = tl.program_id(0)  # row * KV + key/value head
    b = (pid // KV).to(tl.int64)
    kv = pid % KV
    d = tl.arange(0, D)
    wp = tl.load(pos_ptr + b * s_pos)  # this row's new slot
    cos = tl.load(cos_ptr + b * s_cos + d).to(tl.float32)
    sin = tl.load(sin_ptr + b * s_sin + d).to(tl.float32)
    row = qkv_ptr + b * s_qkv  # [q heads | k heads | v heads] x D
    k_new = normed_rotated(row + (KV * G + kv) * D, kw_ptr, cos, sin, eps, D)
    v_new = tl.load(row + (KV * G + KV + kv) * D + d)
    k_row = k_ptr + b * sk_b + kv * sk_h
    v_row = v_ptr + b * sv_b + kv * sv_h
    in_cache = tl.full([D], wp, tl.int64) < S  # a slot past the cache is not written
    tl.store(k_row + wp * sk_s + d, k_new.to(k_ptr.dtype.element_ty), mask=in_cache)
    tl.store(v_row + wp * sv_s + d, v_new.to(v_ptr.dtype.element_ty), mask=in_cache)

    s = tl.arange(0, BLOCK_S)
    before = (s < wp) & (s < S)  # the slots filled by earlier steps: only these are read
    new = (s == wp)[:, None]
    keys = tl.load(k_row + s[:, None] * sk_s + d[None, :], mask=before[:, None], other=0.0).to(tl.float32)
    keys = tl.where(new, k_new.to(tl.float32)[None, :], keys)  # [BLOCK_S, D]
    values = tl.load(v_row + s[:, None] * sv_s + d[None, :], mask=before[:, None], other=0.0).to(tl.float32)
    values = tl.where(new, v_new.to(tl.float32)[None, :], values)
    attend = (s <= wp) & (s < S)
    for g in tl.static_range(G):  # the query heads sharing this key/value head
        head = kv * G + g
        q = normed_rotated(row + head * D, qw_ptr, cos, sin, eps, D).to(tl.float32)
        scores = tl.where(attend, tl.sum(keys * q[None, :], axis=1) * scale, float("-inf"))  # [BLOCK_S]
        p = tl.exp(scores - tl.max(scores, axis=0))  # the new slot is always attended: the max is finite
        out = tl.sum((p / tl.sum(p, axis=0))[:, None] * values, axis=0)  # [D]
        tl.store(out_ptr + b * s_out + head * D + d, out.to(out_ptr.dtype.element_ty))


@torch.library.custom_op("orator::short_attention_block", mutates_args=("k_cache", "v_cache"))
def short_attention_block(qkv: torch.Tensor, q_norm_weight: torch.Tensor, k_norm_weight: torch.Tensor,
                          cos: torch.Tensor, sin: torch.Tensor, k_cache: torch.Tensor, v_cache: torch.Tensor,
                          write_pos: torch.Tensor, eps: float) -> torch.Tensor:
    """qkv [B, (H + 2 KV) D]: one position per row, [q | k | v] heads; q_norm_weight, k_norm_weight [D];
    cos, sin [B, D] (in qkv's dtype); k_cache, v_cache [B, KV, S, D] (a few slots, the code predictor's 16:
    all of them one tile in registers), written at slot write_pos[b] (write_pos [B] int64, < S). Row b
    attends to slots [0, write_pos[b]] -> [B, H D] in qkv's dtype."""
    b, heads, kv, slots, dim = block_args.unpack("short_attention_block", qkv, q_norm_weight, k_norm_weight, cos, sin,
                                                 k_cache, v_cache)
    out = block_args.output_like(qkv, k_cache)
    _short_attention_kernel[(b * kv,)](
        qkv, q_norm_weight, k_norm_weight, cos, sin, k_cache, v_cache, write_pos, out, slots, qkv.stride(0),
        cos.stride(0), sin.stride(0), *k_cache.stride()[:3], *v_cache.stride()[:3], write_pos.stride(0),
        out.stride(0), eps=eps, scale=dim**-0.5, KV=kv, G=heads // kv, D=dim, BLOCK_S=triton.next_power_of_2(slots),
        num_warps=WARPS, **NO_FMA)
    return out


@short_attention_block.register_fake
def _(qkv, q_norm_weight, k_norm_weight, cos, sin, k_cache, v_cache, write_pos, eps):
    return block_args.output_like(qkv, k_cache)
