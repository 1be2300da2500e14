"""Decoder building blocks of engine/core/model/layers.py."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from engine.core.model.layers import KVCache, decode_attention, prefill_attention, short_attention, zeros_untouched


@pytest.mark.parametrize(("attend", "slots", "positions", "dim"), [
    (decode_attention, 50, [10, 49, 0], 64),  # the talker's long cache, as two batched products
    (short_attention, 16, [3, 15], 128),  # the code predictor's 16 slots, as products and sums
], ids=["decode", "short"])
def test_one_query_attention_equals_sdpa_with_gqa_and_mask(attend, slots, positions, dim):
    """The one-query attentions a decode step uses on CUDA equal SDPA (float64)."""
    g = torch.Generator().manual_seed(slots)
    b, heads, kv = len(positions), 16, 8
    q = torch.randn(b, heads, 1, dim, generator=g, dtype=torch.float64)
    k = torch.randn(b, kv, slots, dim, generator=g, dtype=torch.float64)
    v = torch.randn(b, kv, slots, dim, generator=g, dtype=torch.float64)
    mask = (torch.arange(slots)[None, None, :] <= torch.tensor(positions)[:, None, None])[:, None]  # [B, 1, 1, S]
    expected = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, enable_gqa=True)
    torch.testing.assert_close(attend(q, k, v, mask), expected, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("kv", [8, 16], ids=["grouped", "one-to-one"])
def test_prefill_attention_equals_sdpa_with_gqa_and_mask(kv):
    """A prefill's attention with the keys and values repeated for the query heads equals SDPA's grouped
    heads: rows of different lengths, each position seeing only itself and those before (float64)."""
    g = torch.Generator().manual_seed(kv)
    lengths, slots, heads, dim = [7, 12], 12, 16, 32
    q = torch.randn(len(lengths), heads, slots, dim, generator=g, dtype=torch.float64)
    k = torch.randn(len(lengths), kv, slots, dim, generator=g, dtype=torch.float64)
    v = torch.randn(len(lengths), kv, slots, dim, generator=g, dtype=torch.float64)
    causal = torch.arange(slots)[None, :, None] >= torch.arange(slots)[None, None, :]  # [1, T, S]
    filled = torch.arange(slots)[None, None, :] < torch.tensor(lengths)[:, None, None]  # [B, 1, S]
    mask = (causal & filled)[:, None]  # [B, 1, T, S]
    expected = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, enable_gqa=True)
    torch.testing.assert_close(prefill_attention(q, k, v, mask), expected, rtol=1e-12, atol=1e-12)



def test_a_cpu_cache_becomes_resident_only_where_written(resident_mib):
    """A segment's cache is sized for its whole frame budget: on the CPU only the pages of the positions written
    become resident (448 MiB asked, a few positions written), though the whole is read (as the batched loop's
    attention reads it), and it reads as zeros everywhere else."""
    before = resident_mib()
    cache = KVCache(28, 1, 8, 2048, 128, torch.float32, "cpu")  # 2 x 224 MiB
    assert cache.k.shape == (28, 1, 8, 2048, 128) and cache.k.dtype == torch.float32 and cache.k.is_contiguous()
    cache.k[:, :, :, :16] = 1.0
    cache.v[:, :, :, :16] = 2.0
    assert float(cache.k.sum()) == 28 * 8 * 16 * 128 and float(cache.v.sum()) == 2 * 28 * 8 * 16 * 128  # read whole
    grown = resident_mib() - before
    assert grown < 40, f"{grown:.0f} MiB resident for 16 positions of a 448 MiB cache, read whole"
    assert cache.k[0, 0, 0, 16:].abs().max() == 0 and cache.v[27, 0, 7, 2047].abs().max() == 0
    assert cache.k[5, 0, 3, :16].eq(1.0).all() and cache.v[5, 0, 3, :16].eq(2.0).all()


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float64])
@pytest.mark.parametrize("shape", [(2, 1, 2, 5, 4), (3, 2, 1, 0, 8), (1, 1, 1, 1, 1)], ids=["small", "empty", "one"])
def test_zeros_untouched_are_zeros_of_the_shape_and_dtype(shape, dtype):
    z = zeros_untouched(shape, dtype, "cpu")
    assert z.shape == shape and z.dtype == dtype and z.is_contiguous() and not z.any()
    z += 1  # writable, and its own memory
    assert zeros_untouched(shape, dtype, "cpu").sum() == 0
