"""Decoder building blocks of engine/model/layers.py."""

from __future__ import annotations

import torch
import torch.nn.functional as F

from engine.model.layers import decode_attention, short_attention


def test_decode_attention_equals_sdpa_with_gqa_and_mask():
    """The deterministic one-query attention used on CUDA for the talker's long cache equals SDPA."""
    g = torch.Generator().manual_seed(0)
    b, heads, kv, s, d = 3, 16, 8, 50, 64
    q = torch.randn(b, heads, 1, d, generator=g, dtype=torch.float64)
    k = torch.randn(b, kv, s, d, generator=g, dtype=torch.float64)
    v = torch.randn(b, kv, s, d, generator=g, dtype=torch.float64)
    mask = (torch.arange(s)[None, None, :] <= torch.tensor([10, 49, 0])[:, None, None])[:, None]  # [B, 1, 1, S]
    expected = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, enable_gqa=True)
    torch.testing.assert_close(decode_attention(q, k, v, mask), expected, rtol=1e-12, atol=1e-12)


def test_short_attention_equals_sdpa_with_gqa_and_mask():
    """The code predictor's 16-slot attention as plain products and sums equals SDPA."""
    g = torch.Generator().manual_seed(1)
    b, heads, kv, s, d = 2, 16, 8, 16, 128
    q = torch.randn(b, heads, 1, d, generator=g, dtype=torch.float64)
    k = torch.randn(b, kv, s, d, generator=g, dtype=torch.float64)
    v = torch.randn(b, kv, s, d, generator=g, dtype=torch.float64)
    mask = (torch.arange(s)[None, None, :] <= torch.tensor([3, 15])[:, None, None])[:, None]
    expected = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, enable_gqa=True)
    torch.testing.assert_close(short_attention(q, k, v, mask), expected, rtol=1e-12, atol=1e-12)
