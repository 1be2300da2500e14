"""One-query attention over the talker's key/value cache that reads only the filled slots of each row.

A decode step attends from one position per row to the slots before it. The cache has a fixed
length (2,048 slots) so that the step can be captured once; attention over the whole cache with a
mask reads all of it every step, for every row of a batch. Here each row's length (its position
+ 1) is read on the device: the cache is cut into chunks of ``CHUNK`` slots, one program per
(row, key/value head, chunk) runs an online softmax over the chunk's filled slots for the query
heads sharing that key/value head (and stops at once past the row's length), and a second kernel
merges the chunks' partial results in a fixed order, so the result is deterministic.

Replaces ``engine.model.layers.decode_attention`` (the PyTorch reference) on CUDA; softmax and
sums in float32. ``orator::filled_slots_attention`` is a ``torch.library.triton_op``: traceable by
``torch.compile`` and capturable in a CUDA graph. On CPU it runs in Triton's interpreter for tests.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

CHUNK = 256  # cache slots per program
BLOCK_S = 32  # slots per inner step


@triton.jit
def _chunk_kernel(q_ptr, k_ptr, v_ptr, len_ptr, m_ptr, sum_ptr, acc_ptr, KV, G, S, SPLITS,
                  sq_b, sq_h, sq_d, sk_b, sk_h, sk_s, sk_d, sv_b, sv_h, sv_s, sv_d,
                  scale: tl.constexpr,  # a constant: Inductor would pass a float argument as fp64
                  G_PAD: tl.constexpr, D: tl.constexpr, CHUNK_S: tl.constexpr, BLOCK: tl.constexpr):
    pid = tl.program_id(0)  # row * KV + key/value head
    split = tl.program_id(1)
    b = (pid // KV).to(tl.int64)
    h = (pid % KV).to(tl.int64)
    g = tl.arange(0, G_PAD)
    d = tl.arange(0, D)
    g_ok = g < G
    q = tl.load(q_ptr + b * sq_b + (h * G + g)[:, None] * sq_h + d[None, :] * sq_d, mask=g_ok[:, None],
                other=0.0).to(tl.float32) * scale  # [G_PAD, D]
    length = tl.minimum(tl.load(len_ptr + b).to(tl.int64), S)  # never past the slots given
    start = split * CHUNK_S
    end = tl.minimum(start + CHUNK_S, length)
    m = tl.full([G_PAD], float("-inf"), tl.float32)
    denom = tl.zeros([G_PAD], tl.float32)  # sum of exp(score - m)
    acc = tl.zeros([G_PAD, D], tl.float32)
    for s0 in range(start, end, BLOCK):  # no iteration at all past the row's length
        s = s0 + tl.arange(0, BLOCK)
        ok = s < end
        k = tl.load(k_ptr + b * sk_b + h * sk_h + s[:, None] * sk_s + d[None, :] * sk_d, mask=ok[:, None],
                    other=0.0).to(tl.float32)  # [BLOCK, D]
        scores = tl.sum(q[:, None, :] * k[None, :, :], axis=2)  # [G_PAD, BLOCK]
        scores = tl.where(ok[None, :], scores, float("-inf"))
        m_new = tl.maximum(m, tl.max(scores, axis=1))  # finite: the block holds a filled slot
        alpha = tl.exp(m - m_new)
        p = tl.exp(scores - m_new[:, None])
        v = tl.load(v_ptr + b * sv_b + h * sv_h + s[:, None] * sv_s + d[None, :] * sv_d, mask=ok[:, None],
                    other=0.0).to(tl.float32)
        denom = denom * alpha + tl.sum(p, axis=1)
        acc = acc * alpha[:, None] + tl.sum(p[:, :, None] * v[None, :, :], axis=1)
        m = m_new
    at = (pid * SPLITS + split) * G_PAD + g
    tl.store(m_ptr + at, m)
    tl.store(sum_ptr + at, denom)
    tl.store(acc_ptr + at[:, None] * D + d[None, :], acc)


@triton.jit
def _merge_kernel(m_ptr, sum_ptr, acc_ptr, out_ptr, KV, G, SPLITS, so_b, so_h, so_d,
                  SPLITS_PAD: tl.constexpr, G_PAD: tl.constexpr, D: tl.constexpr):
    pid = tl.program_id(0)
    b = (pid // KV).to(tl.int64)
    h = (pid % KV).to(tl.int64)
    sp = tl.arange(0, SPLITS_PAD)
    g = tl.arange(0, G_PAD)
    d = tl.arange(0, D)
    sp_ok = sp < SPLITS
    at = (pid * SPLITS + sp[:, None]) * G_PAD + g[None, :]  # [SPLITS_PAD, G_PAD]
    m = tl.load(m_ptr + at, mask=sp_ok[:, None], other=float("-inf"))
    denom = tl.load(sum_ptr + at, mask=sp_ok[:, None], other=0.0)
    acc = tl.load(acc_ptr + at[:, :, None] * D + d[None, None, :], mask=sp_ok[:, None, None], other=0.0)
    top = tl.max(m, axis=0)  # [G_PAD]: finite, the first chunk always holds slot 0
    w = tl.exp(m - top[None, :])  # chunks past the row's length weigh 0
    total = tl.sum(denom * w, axis=0)
    out = tl.sum(acc * w[:, :, None], axis=0) / total[:, None]  # [G_PAD, D]
    tl.store(out_ptr + b * so_b + (h * G + g)[:, None] * so_h + d[None, :] * so_d, out.to(out_ptr.dtype.element_ty),
             mask=(g < G)[:, None])


@torch.library.triton_op("orator::filled_slots_attention", mutates_args=())
def filled_slots_attention(q: torch.Tensor, keys: torch.Tensor, values: torch.Tensor,
                           lengths: torch.Tensor) -> torch.Tensor:
    """q [B, H, D] (one position per row); keys, values [B, KV, S, D]; lengths [B] int64 (>= 1): row b
    attends to slots [0, lengths[b]) -> [B, H, D] in q's dtype."""
    b, heads, dim = q.shape
    kv, slots = keys.shape[1], keys.shape[2]
    g = heads // kv
    splits = triton.cdiv(slots, CHUNK)
    g_pad = triton.next_power_of_2(g)
    m = torch.empty(b * kv * splits * g_pad, dtype=torch.float32, device=q.device)
    denom = torch.empty_like(m)
    acc = torch.empty(b * kv * splits * g_pad * dim, dtype=torch.float32, device=q.device)
    out = torch.empty(b, heads, dim, dtype=q.dtype, device=q.device)
    torch.library.wrap_triton(_chunk_kernel)[(b * kv, splits)](
        q, keys, values, lengths, m, denom, acc, kv, g, slots, splits, *q.stride(), *keys.stride(),
        *values.stride(), scale=dim**-0.5, G_PAD=g_pad, D=dim, CHUNK_S=CHUNK, BLOCK=BLOCK_S, num_warps=4)
    torch.library.wrap_triton(_merge_kernel)[(b * kv,)](
        m, denom, acc, out, kv, g, splits, *out.stride(), SPLITS_PAD=triton.next_power_of_2(splits),
        G_PAD=g_pad, D=dim, num_warps=4)
    return out
