"""The talker's attention step in two kernels: q/k RMSNorm, RoPE, the cache write and the attention over
the filled slots of each row's long cache, from the fused q/k/v projection's output to the input of the
output projection.

A talker decode step attends from one position per row to the slots before it. The cache has a fixed
length (2,048 slots) so that the step can be captured once; attention over the whole cache with a mask
reads all of it every step, for every row. Here each row's new slot (its position) is read on the
device. Each (row, query head) gets ``SPLITS`` programs, and each program an equal share of the row's
slots [0, position]: a whole number of ``BLOCK_S`` slots, computed from the row's position alone, so a
row's sums are the same whatever the other rows hold (a batched stream's attention is its solo
attention) and a long context spreads over as many programs as a short one. A program normalises and
rotates its query head, then runs an online softmax over its share's slots before the new one. The
program whose share holds the new slot also normalises and rotates the new key and takes it and the new
value from registers (nothing the launch writes is read back: its programs run in any order); one per
(row, key/value head) writes the two into the cache. A share past the new slot only stores the empty
partial result. A second kernel merges the ``SPLITS`` partial results in a fixed order, so the result
is deterministic.

Compiled, the same step was ~6-8 small kernels per layer before the attention's two (the per-head norms,
RoPE, ``index_put_`` of the new key and value), each a launch of a microsecond or two. Numerics follow
``engine.core.model.layers.Attention`` as ``short_attention.py`` (the code predictor's step, one kernel) does:
the norms and RoPE rounded where it rounds them (``rope_norm.normed_rotated``); scores (scaled by
head_dim**-0.5), softmax and the weighted sum of values in float32, the output rounded once.

``orator::filled_slots_attention_block`` is a ``torch.library.custom_op`` that mutates the caches, not a
``triton_op``, for the reason ``short_attention.py`` gives: Inductor would write a traced kernel's
mutation of the layer's view of the cache into a clone and copy it back every step. On CPU it runs in
Triton's interpreter for the tests.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from engine.core.gpu_kernels import block_args
from engine.core.gpu_kernels.rope_norm import NO_FMA, normed_rotated

# launch settings chosen by bench.tuning.attention_configs at the many-streams loop's shapes
# (docs/benchmarks.md#attention-splits)
SPLITS = 8  # programs per (row, query head), each over an equal share of the row's slots
BLOCK_S = 32  # slots per inner step; a program's share is a whole number of these
WARPS = 1  # one warp a program: its reductions need no shared memory or barriers
MERGE_WARPS = 1  # the same for the merge


@triton.jit
def _split_kernel(qkv_ptr, qw_ptr, kw_ptr, cos_ptr, sin_ptr, k_ptr, v_ptr, pos_ptr, m_ptr, sum_ptr, acc_ptr, S,
                  s_qkv, s_cos, s_sin, sk_b, sk_h, sk_s, sv_b, sv_h, sv_s, s_pos,  # last dims contiguous
                  eps: tl.constexpr, scale: tl.constexpr,  # the model's constants, compiled in
                  H: tl.constexpr, G: tl.constexpr, D: tl.constexpr, SPLITS: tl.constexpr, BLOCK: tl.constexpr):
    pid = tl.program_id(0)  # row * H + query head
    split = tl.program_id(1)
    b = (pid // H).to(tl.int64)
    head = pid % H
    kv = head // G  # the key/value head this query head shares (its other readers find it in L2)
    wp = tl.minimum(tl.load(pos_ptr + b * s_pos), S - 1)  # this row's new slot (never past the cache)
    share = tl.cdiv(tl.cdiv(wp + 1, SPLITS), BLOCK) * BLOCK  # slots a program: a function of the row alone
    start = split * share
    m = tl.full([], float("-inf"), tl.float32)
    denom = tl.zeros([], tl.float32)  # sum of exp(score - m)
    acc = tl.zeros([D], tl.float32)
    if start <= wp:  # the share holds attended slots
        d = tl.arange(0, D)
        cos = tl.load(cos_ptr + b * s_cos + d).to(tl.float32)
        sin = tl.load(sin_ptr + b * s_sin + d).to(tl.float32)
        row = qkv_ptr + b * s_qkv  # [q heads | k heads | v heads] x D
        q = normed_rotated(row + head * D, qw_ptr, cos, sin, eps, D).to(tl.float32) * scale
        k_row = k_ptr + b * sk_b + kv * sk_h
        v_row = v_ptr + b * sv_b + kv * sv_h
        before = tl.minimum(start + share, wp)  # the share's slots filled by earlier steps
        for s0 in range(start, before, BLOCK):
            s = s0 + tl.arange(0, BLOCK)
            ok = s < before
            k = tl.load(k_row + s[:, None] * sk_s + d[None, :], mask=ok[:, None], other=0.0).to(tl.float32)
            v = tl.load(v_row + s[:, None] * sv_s + d[None, :], mask=ok[:, None], other=0.0).to(tl.float32)
            scores = tl.where(ok, tl.sum(k * q[None, :], axis=1), float("-inf"))  # [BLOCK]
            m_new = tl.maximum(m, tl.max(scores, axis=0))  # finite: the block holds a filled slot
            alpha = tl.exp(m - m_new)
            p = tl.exp(scores - m_new)
            denom = denom * alpha + tl.sum(p, axis=0)
            acc = acc * alpha + tl.sum(p[:, None] * v, axis=0)
            m = m_new
        if wp < start + share:  # the share holds the new slot: its key and value from registers
            k_new = normed_rotated(row + (H + kv) * D, kw_ptr, cos, sin, eps, D)
            v_new = tl.load(row + (H + H // G + kv) * D + d)
            if head % G == 0:  # one writer per (row, key/value head)
                tl.store(k_row + wp * sk_s + d, k_new.to(k_ptr.dtype.element_ty))
                tl.store(v_row + wp * sv_s + d, v_new.to(v_ptr.dtype.element_ty))
            score = tl.sum(k_new.to(tl.float32) * q, axis=0)
            m_new = tl.maximum(m, score)
            alpha = tl.exp(m - m_new)
            p = tl.exp(score - m_new)
            denom = denom * alpha + p
            acc = acc * alpha + p * v_new.to(tl.float32)
            m = m_new
    at = pid * SPLITS + split
    tl.store(m_ptr + at, m)
    tl.store(sum_ptr + at, denom)
    tl.store(acc_ptr + at * D + tl.arange(0, D), acc)


@triton.jit
def _merge_kernel(m_ptr, sum_ptr, acc_ptr, out_ptr, H, so_b, so_h, SPLITS: tl.constexpr, D: tl.constexpr):
    pid = tl.program_id(0)  # row * H + query head
    b = (pid // H).to(tl.int64)
    head = (pid % H).to(tl.int64)
    d = tl.arange(0, D)
    at = pid * SPLITS + tl.arange(0, SPLITS)
    m = tl.load(m_ptr + at)
    denom = tl.load(sum_ptr + at)
    acc = tl.load(acc_ptr + at[:, None] * D + d[None, :])  # [SPLITS, D]
    top = tl.max(m, axis=0)  # finite: the first share always holds slot 0
    w = tl.exp(m - top)  # shares past the row's new slot weigh 0
    out = tl.sum(acc * w[:, None], axis=0) / tl.sum(denom * w, axis=0)  # [D]
    tl.store(out_ptr + b * so_b + head * so_h + d, out.to(out_ptr.dtype.element_ty))


@torch.library.custom_op("orator::filled_slots_attention_block", mutates_args=("k_cache", "v_cache"))
def filled_slots_attention_block(qkv: torch.Tensor, q_norm_weight: torch.Tensor, k_norm_weight: torch.Tensor,
                                 cos: torch.Tensor, sin: torch.Tensor, k_cache: torch.Tensor, v_cache: torch.Tensor,
                                 write_pos: torch.Tensor, eps: float) -> torch.Tensor:
    """qkv [B, (H + 2 KV) D]: one position per row, [q | k | v] heads; q_norm_weight, k_norm_weight [D];
    cos, sin [B, D] (in qkv's dtype); k_cache, v_cache [B, KV, S, D] (the talker's 2,048 slots), written at
    slot write_pos[b] (write_pos [B] int64, < S; a larger one is taken as S - 1). Row b attends to slots
    [0, write_pos[b]] -> [B, H D] in qkv's dtype."""
    b, heads, kv, slots, dim = block_args.unpack("filled_slots_attention_block", qkv, q_norm_weight,
                                                 k_norm_weight, cos, sin, k_cache, v_cache)
    m = torch.empty(b * heads * SPLITS, dtype=torch.float32, device=qkv.device)
    denom = torch.empty_like(m)
    acc = torch.empty(b * heads * SPLITS * dim, dtype=torch.float32, device=qkv.device)
    out = block_args.output_like(qkv, k_cache)
    _split_kernel[(b * heads, SPLITS)](
        qkv, q_norm_weight, k_norm_weight, cos, sin, k_cache, v_cache, write_pos, m, denom, acc, slots,
        qkv.stride(0), cos.stride(0), sin.stride(0), *k_cache.stride()[:3], *v_cache.stride()[:3],
        write_pos.stride(0), eps=eps, scale=dim**-0.5, H=heads, G=heads // kv, D=dim, SPLITS=SPLITS, BLOCK=BLOCK_S,
        num_warps=WARPS, **NO_FMA)
    _merge_kernel[(b * heads,)](m, denom, acc, out, heads, out.stride(0), dim, SPLITS=SPLITS, D=dim,
                                num_warps=MERGE_WARPS)
    return out


@filled_slots_attention_block.register_fake
def _(qkv, q_norm_weight, k_norm_weight, cos, sin, k_cache, v_cache, write_pos, eps):
    return block_args.output_like(qkv, k_cache)
