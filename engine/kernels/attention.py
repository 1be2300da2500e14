"""The talker's attention step in two kernels: q/k RMSNorm, RoPE, the cache write and the attention over
the filled slots of each row's long cache, from the fused q/k/v projection's output to the input of the
output projection.

A talker decode step attends from one position per row to the slots before it. The cache has a fixed
length (2,048 slots) so that the step can be captured once; attention over the whole cache with a mask
reads all of it every step, for every row. Here each row's new slot (its position) is read on the
device. The cache is cut into chunks of ``CHUNK`` slots, and one program per (row, query head, chunk)
normalises and rotates its query head, then runs an online softmax over the chunk's slots before the new
one. The programs whose chunk holds the new slot also normalise and rotate the new key and take it and
the new value from registers (nothing the launch writes is read back: its programs run in any order);
one of them per (row, key/value head) writes the two into the cache. A chunk past the new slot only
stores the empty partial result. A second kernel merges the chunks' partial results in a fixed order,
so the result is deterministic.

Compiled, the same step was ~6-8 small kernels per layer before the attention's two (the per-head norms,
RoPE, ``index_put_`` of the new key and value), each a launch of a microsecond or two. Numerics follow
``engine.model.layers.Attention`` as ``short_attention.py`` (the code predictor's step, one kernel) does:
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

from engine.kernels import block_args
from engine.kernels.rope_norm import NO_FMA, normed_rotated

CHUNK = 64  # cache slots per program: short, so that a step's few hundred filled slots spread over many SMs
BLOCK_S = 32  # slots per inner step
MANY_PROGRAMS = 256  # rows x query heads from which a program takes several chunks (16 heads: 16 rows)


def chunks_per_program(rows_by_heads: int) -> int:
    """Chunks a program of the first kernel takes in turn: one for a few rows, whose few hundred filled slots
    should spread over many SMs; four from MANY_PROGRAMS (row, head) pairs, where one chunk a program made
    32 programs per pair, most of them with nothing but an empty result to store (at 64 rows: 32,768
    programs, 23 us a layer on the H200). Each chunk keeps its own partial result: the same sums either way."""
    return 1 if rows_by_heads < MANY_PROGRAMS else 4


@triton.jit
def _chunk_kernel(qkv_ptr, qw_ptr, kw_ptr, cos_ptr, sin_ptr, k_ptr, v_ptr, pos_ptr, m_ptr, sum_ptr, acc_ptr, S,
                  SPLITS, s_qkv, s_cos, s_sin, sk_b, sk_h, sk_s, sv_b, sv_h, sv_s, s_pos,  # last dims contiguous
                  eps: tl.constexpr, scale: tl.constexpr,  # the model's constants, compiled in
                  H: tl.constexpr, G: tl.constexpr, D: tl.constexpr, CHUNK_S: tl.constexpr, BLOCK: tl.constexpr,
                  PER_PROGRAM: tl.constexpr):
    for i in tl.static_range(PER_PROGRAM):  # consecutive chunks, each with its own partial result
        _chunk(qkv_ptr, qw_ptr, kw_ptr, cos_ptr, sin_ptr, k_ptr, v_ptr, pos_ptr, m_ptr, sum_ptr, acc_ptr, S,
               SPLITS, tl.program_id(1) * PER_PROGRAM + i, s_qkv, s_cos, s_sin, sk_b, sk_h, sk_s, sv_b, sv_h, sv_s,
               s_pos, eps, scale, H, G, D, CHUNK_S, BLOCK)


@triton.jit
def _chunk(qkv_ptr, qw_ptr, kw_ptr, cos_ptr, sin_ptr, k_ptr, v_ptr, pos_ptr, m_ptr, sum_ptr, acc_ptr, S, SPLITS,
           split, s_qkv, s_cos, s_sin, sk_b, sk_h, sk_s, sv_b, sv_h, sv_s, s_pos, eps: tl.constexpr,
           scale: tl.constexpr, H: tl.constexpr, G: tl.constexpr, D: tl.constexpr, CHUNK_S: tl.constexpr,
           BLOCK: tl.constexpr):
    pid = tl.program_id(0)  # row * H + query head
    b = (pid // H).to(tl.int64)
    head = pid % H
    kv = head // G  # the key/value head this query head shares (its other readers find it in L2)
    wp = tl.minimum(tl.load(pos_ptr + b * s_pos), S - 1)  # this row's new slot (never past the cache)
    start = split * CHUNK_S
    m = tl.full([], float("-inf"), tl.float32)
    denom = tl.zeros([], tl.float32)  # sum of exp(score - m)
    acc = tl.zeros([D], tl.float32)
    if start <= wp:  # the chunk holds attended slots
        d = tl.arange(0, D)
        cos = tl.load(cos_ptr + b * s_cos + d).to(tl.float32)
        sin = tl.load(sin_ptr + b * s_sin + d).to(tl.float32)
        row = qkv_ptr + b * s_qkv  # [q heads | k heads | v heads] x D
        q = normed_rotated(row + head * D, qw_ptr, cos, sin, eps, D).to(tl.float32) * scale
        k_row = k_ptr + b * sk_b + kv * sk_h
        v_row = v_ptr + b * sv_b + kv * sv_h
        before = tl.minimum(start + CHUNK_S, wp)  # the chunk's slots filled by earlier steps
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
        if wp < start + CHUNK_S:  # the chunk holds the new slot: its key and value from registers
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
    if split < SPLITS:  # the last program's chunks may run past the cache
        tl.store(m_ptr + at, m)
        tl.store(sum_ptr + at, denom)
        tl.store(acc_ptr + at * D + tl.arange(0, D), acc)


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
    w = tl.exp(m - top)  # chunks past the row's new slot weigh 0
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
    splits = triton.cdiv(slots, CHUNK)
    m = torch.empty(b * heads * splits, dtype=torch.float32, device=qkv.device)
    denom = torch.empty_like(m)
    acc = torch.empty(b * heads * splits * dim, dtype=torch.float32, device=qkv.device)
    out = block_args.output_like(qkv, k_cache)
    per_program = chunks_per_program(b * heads)
    _chunk_kernel[(b * heads, triton.cdiv(splits, per_program))](
        qkv, q_norm_weight, k_norm_weight, cos, sin, k_cache, v_cache, write_pos, m, denom, acc, slots, splits,
        qkv.stride(0), cos.stride(0), sin.stride(0), *k_cache.stride()[:3], *v_cache.stride()[:3],
        write_pos.stride(0), eps=eps, scale=dim**-0.5, H=heads, G=heads // kv, D=dim, CHUNK_S=CHUNK, BLOCK=BLOCK_S,
        PER_PROGRAM=per_program, num_warps=4, **NO_FMA)
    _merge_kernel[(b * heads,)](
        m, denom, acc, out, heads, splits, out.stride(0), dim, SPLITS_PAD=triton.next_power_of_2(splits), D=dim,
        num_warps=4)
    return out


@filled_slots_attention_block.register_fake
def _(qkv, q_norm_weight, k_norm_weight, cos, sin, k_cache, v_cache, write_pos, eps):
    return block_args.output_like(qkv, k_cache)
