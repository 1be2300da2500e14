"""One-query attention over the talker's key/value cache that reads only the filled slots of each row.

A decode step attends from one position per row to the slots before it. The cache has a fixed
length (2,048 slots) so that the step can be captured once; attention over the whole cache with a
mask reads all of it every step, for every row of a batch. Here each row's length (its position
+ 1) is read on the device: the cache is cut into chunks of ``CHUNK`` slots, one program per
(row, query head, chunk) runs an online softmax over the chunk's filled slots (and stops at once
past the row's length), and a second kernel
merges the chunks' partial results in a fixed order, so the result is deterministic.

Replaces ``engine.model.layers.decode_attention`` (the PyTorch reference) on CUDA; softmax and
sums in float32. ``orator::filled_slots_attention`` is a ``torch.library.triton_op``: traceable by
``torch.compile`` and capturable in a CUDA graph. On CPU it runs in Triton's interpreter for tests.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

CHUNK = 64  # cache slots per program: short, so that a step's few hundred filled slots spread over many SMs
BLOCK_S = 32  # slots per inner step


@triton.jit
def _chunk_kernel(q_ptr, k_ptr, v_ptr, len_ptr, m_ptr, sum_ptr, acc_ptr, H, G, S, SPLITS,
                  sq_b, sq_h, sk_b, sk_h, sk_s, sv_b, sv_h, sv_s,  # the last dimension is contiguous
                  scale: tl.constexpr,  # a constant: Inductor would pass a float argument as fp64
                  D: tl.constexpr, CHUNK_S: tl.constexpr, BLOCK: tl.constexpr):
    pid = tl.program_id(0)  # row * H + query head
    split = tl.program_id(1)
    b = (pid // H).to(tl.int64)
    head = (pid % H).to(tl.int64)
    kv = head // G  # the key/value head this query head shares (its second reader finds it in L2)
    d = tl.arange(0, D)
    q = tl.load(q_ptr + b * sq_b + head * sq_h + d).to(tl.float32) * scale  # [D]
    length = tl.minimum(tl.load(len_ptr + b).to(tl.int64), S)  # never past the slots given
    start = split * CHUNK_S
    end = tl.minimum(start + CHUNK_S, length)
    m = tl.full([], float("-inf"), tl.float32)
    denom = tl.zeros([], tl.float32)  # sum of exp(score - m)
    acc = tl.zeros([D], tl.float32)
    for s0 in range(start, end, BLOCK):  # no iteration at all past the row's length
        s = s0 + tl.arange(0, BLOCK)
        ok = s < end
        k = tl.load(k_ptr + b * sk_b + kv * sk_h + s[:, None] * sk_s + d[None, :], mask=ok[:, None],
                    other=0.0).to(tl.float32)  # [BLOCK, D]
        v = tl.load(v_ptr + b * sv_b + kv * sv_h + s[:, None] * sv_s + d[None, :], mask=ok[:, None],
                    other=0.0).to(tl.float32)
        scores = tl.where(ok, tl.sum(k * q[None, :], axis=1), float("-inf"))  # [BLOCK]
        m_new = tl.maximum(m, tl.max(scores, axis=0))  # finite: the block holds a filled slot
        alpha = tl.exp(m - m_new)
        p = tl.exp(scores - m_new)
        denom = denom * alpha + tl.sum(p, axis=0)
        acc = acc * alpha + tl.sum(p[:, None] * v, axis=0)
        m = m_new
    at = pid * SPLITS + split
    tl.store(m_ptr + at, m)
    tl.store(sum_ptr + at, denom)
    tl.store(acc_ptr + at * D + d, acc)


@triton.jit
def _merge_kernel(m_ptr, sum_ptr, acc_ptr, out_ptr, H, SPLITS, so_b, so_h,
                  SPLITS_PAD: tl.constexpr, D: tl.constexpr):
    pid = tl.program_id(0)  # row * H + query head
    b = (pid // H).to(tl.int64)
    head = (pid % H).to(tl.int64)
    sp = tl.arange(0, SPLITS_PAD)
    d = tl.arange(0, D)
    sp_ok = sp < SPLITS
    at = pid * SPLITS + sp  # [SPLITS_PAD]
    m = tl.load(m_ptr + at, mask=sp_ok, other=float("-inf"))
    denom = tl.load(sum_ptr + at, mask=sp_ok, other=0.0)
    acc = tl.load(acc_ptr + at[:, None] * D + d[None, :], mask=sp_ok[:, None], other=0.0)  # [SPLITS_PAD, D]
    top = tl.max(m, axis=0)  # finite: the first chunk always holds slot 0
    w = tl.exp(m - top)  # chunks past the row's length weigh 0
    out = tl.sum(acc * w[:, None], axis=0) / tl.sum(denom * w, axis=0)  # [D]
    tl.store(out_ptr + b * so_b + head * so_h + d, out.to(out_ptr.dtype.element_ty))


@torch.library.triton_op("orator::filled_slots_attention", mutates_args=())
def filled_slots_attention(q: torch.Tensor, keys: torch.Tensor, values: torch.Tensor,
                           lengths: torch.Tensor) -> torch.Tensor:
    """q [B, H, D] (one position per row); keys, values [B, KV, S, D]; lengths [B] int64 (>= 1): row b
    attends to slots [0, lengths[b]) -> [B, H, D] in q's dtype."""
    b, heads, dim = q.shape
    if not (q.stride(-1) == keys.stride(-1) == values.stride(-1) == 1):
        raise ValueError("filled_slots_attention needs q, keys and values contiguous in their last dimension")
    kv, slots = keys.shape[1], keys.shape[2]
    splits = triton.cdiv(slots, CHUNK)
    m = torch.empty(b * heads * splits, dtype=torch.float32, device=q.device)
    denom = torch.empty_like(m)
    acc = torch.empty(b * heads * splits * dim, dtype=torch.float32, device=q.device)
    out = torch.empty(b, heads, dim, dtype=q.dtype, device=q.device)
    torch.library.wrap_triton(_chunk_kernel)[(b * heads, splits)](
        q, keys, values, lengths, m, denom, acc, heads, heads // kv, slots, splits, *q.stride()[:2], *keys.stride()[:3],
        *values.stride()[:3], scale=dim**-0.5, D=dim, CHUNK_S=CHUNK, BLOCK=BLOCK_S, num_warps=4)
    torch.library.wrap_triton(_merge_kernel)[(b * heads,)](
        m, denom, acc, out, heads, splits, *out.stride()[:2], SPLITS_PAD=triton.next_power_of_2(splits), D=dim,
        num_warps=4)
    return out
