"""Decoder building blocks of engine/model/layers.py."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from engine.model.layers import decode_attention, prefill_attention, short_attention


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
