"""One Triton kernel per ``sample`` call: temperature, top-k, top-p and the Gumbel-max draw, without a sort.

Replaces the PyTorch reference ``engine.core.sampling.sample`` on CUDA (a stable radix sort of every row,
then about ten more kernels). One program per row holds the whole row (V <= 4096) in registers:

- top-k: the k-th largest value is found exactly by bisection over the float's order-preserving
  32-bit integer key (counting ``key >= mid``), stopping as soon as exactly k values lie above the
  bracket; every token >= the k-th value stays, ties included, as the reference keeps them.
- top-p: bisection over the same keys for the lowest cut whose mass strictly above it is < p; the
  boundary value's ties are then kept in index order while the mass before each is < p, which is what
  the reference's stable descending sort and cumulative sum do.
- the draw: argmax of (filtered value + Gumbel noise), with ``uniform_noise``'s counter-based splitmix64
  hash reproduced bit for bit, so each token gets the same noise as in the reference.

Greedy rows return the argmax of the raw logits. The result can differ from the reference only where
float rounding decides (a top-p mass exactly at p, two noisy scores within an ulp of each other).

``sample_rows`` is the ``orator::sample_rows`` custom op (``torch.library.triton_op``): traceable by
``torch.compile(fullgraph=True)``, capturable in a CUDA graph, no host sync. On CPU it runs under
Triton's interpreter (``TRITON_INTERPRET=1``), which is how the tests check it against the reference.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import torch
import triton
import triton.language as tl

from engine.core import noise

if TYPE_CHECKING:
    from engine.core.sampling import StageSettings

MAX_VOCAB = 4096  # one row lives in registers; wider rows take the PyTorch path
# warps a program; None: 4 up to 1,024 logits a row, 8 above (docs/benchmarks.md#sampler-warps)
WARPS: int | None = None

# The order-preserving int32 key of a float32: its bits, with the magnitude bits flipped when negative.
_KEY_NEG_INF = tl.constexpr(-2139095041)  # key(-inf)
_KEY_POS_INF = tl.constexpr(2139095040)  # key(+inf)
_KEY_MAX = tl.constexpr(2**31 - 1)

_M0 = tl.constexpr(noise.M0)
_M1 = tl.constexpr(noise.M1)
_M2 = tl.constexpr(noise.M2)
_M3 = tl.constexpr(noise.M3)
_GOLDEN = tl.constexpr(noise.GOLDEN)
_LOW33 = tl.constexpr(noise.LOW33)
_LOW34 = tl.constexpr(noise.LOW34)
_LOW37 = tl.constexpr(noise.LOW37)


@triton.jit
def _uniform_noise(seed, counter, idx):
    """``engine.core.noise.uniform_noise`` for one row: int64 seed and counter, int64 token ids -> (0, 1)."""
    z = (seed * _M0 + counter * _M1 + idx) * _GOLDEN
    z = (z ^ ((z >> 30) & _LOW34)) * _M2
    z = (z ^ ((z >> 27) & _LOW37)) * _M3
    z = z ^ ((z >> 31) & _LOW33)
    return (((z >> 41) & 0x7FFFFF).to(tl.float32) + 0.5) / 8388608.0


@triton.jit
def sample_rows_kernel(
    logits_ptr, out_ptr, greedy_ptr, temperature_ptr, top_k_ptr, top_p_ptr, seeds_ptr, counter_ptr,
    vocab, stride_row, stride_col, stride_greedy, stride_temperature, stride_top_k, stride_top_p,
    stride_seed, stride_counter,
    BLOCK: tl.constexpr,
):
    row = tl.program_id(0).to(tl.int64)
    offs = tl.arange(0, BLOCK)
    valid = offs < vocab
    x = tl.load(logits_ptr + row * stride_row + offs * stride_col, mask=valid, other=float("-inf")).to(tl.float32)
    greedy = tl.load(greedy_ptr + row * stride_greedy) != 0
    if greedy:
        tl.store(out_ptr + row, tl.argmax(x, axis=0).to(tl.int64))
    else:
        v = tl.math.div_rn(x, tl.load(temperature_ptr + row * stride_temperature).to(tl.float32))
        bits = v.to(tl.int32, bitcast=True)
        key = tl.where(v == 0.0, 0, bits ^ ((bits >> 31) & 0x7FFFFFFF))  # -0.0 and +0.0 share a key
        key = tl.where(valid, key, _KEY_NEG_INF)

        # top-k: the largest key T with count(key >= T) >= k is exactly the k-th largest value.
        top_k = tl.load(top_k_ptr + row * stride_top_k).to(tl.int64)
        cut = tl.full([], _KEY_NEG_INF, tl.int32)
        if (top_k > 0) & (top_k < vocab):
            lo = tl.full([], _KEY_NEG_INF, tl.int64)  # count(key >= lo) >= k
            hi = tl.full([], _KEY_POS_INF + 1, tl.int64)  # count(key >= hi) < k
            n_lo = tl.full([], 0, tl.int64) + vocab
            while (hi - lo > 1) & (n_lo != top_k):
                mid = lo + ((hi - lo) >> 1)
                n = tl.sum((key >= mid.to(tl.int32)).to(tl.int32), axis=0).to(tl.int64)
                up = n >= top_k
                lo = tl.where(up, mid, lo)
                n_lo = tl.where(up, n, n_lo)
                hi = tl.where(up, hi, mid)
            # either exactly k keys are >= lo, or [lo, hi) is one key: the k-th is the least key >= lo
            cut = tl.min(tl.where(key >= lo.to(tl.int32), key, _KEY_MAX), axis=0)
        kept = key >= cut

        # top-p: the least T whose mass strictly above it is < p; every key >= T stays (mass before < p).
        top_p = tl.load(top_p_ptr + row * stride_top_p).to(tl.float32)
        if top_p < 1.0:
            vk = tl.where(kept, v, float("-inf"))
            peak = tl.max(vk, axis=0)
            e = tl.exp(vk - tl.where(peak == float("-inf"), 0.0, peak))
            prob = e / tl.sum(e, axis=0)
            lo = cut.to(tl.int64) - 1
            hi = tl.max(key, axis=0).to(tl.int64)  # nothing lies above the top key: mass 0 < p
            while hi - lo > 1:
                mid = lo + ((hi - lo) >> 1)
                below_p = tl.sum(tl.where(key > mid.to(tl.int32), prob, 0.0), axis=0) < top_p
                lo = tl.where(below_p, lo, mid)
                hi = tl.where(below_p, mid, hi)
            # the least kept value may be tied: in index order (the stable sort's), keep while mass before < p
            last = tl.min(tl.where(key >= hi.to(tl.int32), key, _KEY_MAX), axis=0)
            above = tl.sum(tl.where(key > last, prob, 0.0), axis=0)
            tied = key == last
            rank = tl.cumsum(tied.to(tl.int32), axis=0) - 1
            keep_tie = (rank == 0) | (above + rank.to(tl.float32) * prob < top_p)
            kept = (key > last) | (tied & keep_tie)

        idx = offs.to(tl.int64)
        seed = tl.load(seeds_ptr + row * stride_seed).to(tl.int64)
        counter = tl.load(counter_ptr + row * stride_counter).to(tl.int64)
        noise = _uniform_noise(seed, counter, idx)
        # filtered ids get -inf outright (the noise is below 1, so every kept score is finite)
        score = tl.where(kept & valid, v - tl.log(-tl.log(noise)), float("-inf"))
        tl.store(out_ptr + row, tl.argmax(score, axis=0).to(tl.int64))


@torch.library.triton_op("orator::sample_rows", mutates_args=())
def sample_rows(logits: torch.Tensor, greedy: torch.Tensor, temperature: torch.Tensor, top_k: torch.Tensor,
                top_p: torch.Tensor, seeds: torch.Tensor, counter: torch.Tensor) -> torch.Tensor:
    """``engine.core.sampling.sample`` in one kernel: logits [B, V] (V <= 4096), per-row settings, seeds and
    counters [B] -> ids [B] int64."""
    batch, vocab = logits.shape
    if vocab > MAX_VOCAB:
        raise ValueError(f"sample_rows takes at most {MAX_VOCAB} logits a row, got {vocab}")
    out = torch.empty(batch, dtype=torch.int64, device=logits.device)
    if batch == 0:
        return out
    block = max(triton.next_power_of_2(vocab), 16)
    torch.library.wrap_triton(sample_rows_kernel)[(batch,)](
        logits, out, greedy, temperature, top_k, top_p, seeds, counter,
        vocab, logits.stride(0), logits.stride(1), greedy.stride(0), temperature.stride(0), top_k.stride(0),
        top_p.stride(0), seeds.stride(0), counter.stride(0),
        BLOCK=block, num_warps=warps_for(block),
    )
    return out


def warps_for(block: int) -> int:
    """Warps a program for rows of ``block`` (a power of two) logits: ``WARPS``, or by default 4 up to 1,024, 8
    above."""
    return WARPS or (4 if block <= 1024 else 8)


def sample_triton(logits: torch.Tensor, s: StageSettings, seeds: torch.Tensor,
                  counter: torch.Tensor) -> torch.Tensor:
    """``engine.core.sampling.sample`` through the kernel (any device Triton runs on: CUDA, or the interpreter)."""
    return sample_rows(logits, s.greedy, s.temperature, s.top_k, s.top_p, seeds, counter)
