"""The host side the two attention blocks (``attention.py``, ``short_attention.py``) share: their arguments'
shapes checked and unpacked, and their output's shape (the fake implementation ``torch.compile`` traces).

Both take qkv [B, (H + 2 KV) D] (one position per row, [q | k | v] heads), the q and k norm weights [D],
cos and sin [B, D], the layer's key and value caches [B, KV, S, D] and the new slots write_pos [B].
"""

from __future__ import annotations

import torch


def unpack(name: str, qkv: torch.Tensor, q_norm_weight: torch.Tensor, k_norm_weight: torch.Tensor,
           cos: torch.Tensor, sin: torch.Tensor, k_cache: torch.Tensor,
           v_cache: torch.Tensor) -> tuple[int, int, int, int, int]:
    """(rows B, query heads H, key/value heads KV, cache slots S, head dim D); ``ValueError`` naming the op
    ``name`` when the shapes disagree or a last dimension is not contiguous."""
    b, width = qkv.shape
    kv, slots, dim = k_cache.shape[1:]
    heads = width // dim - 2 * kv
    if heads <= 0 or heads % kv or width != (heads + 2 * kv) * dim or v_cache.shape != k_cache.shape:
        raise ValueError(f"{name}: qkv width {width} does not fit the cache {tuple(k_cache.shape)}")
    if not all(t.stride(-1) == 1 for t in (qkv, cos, sin, k_cache, v_cache, q_norm_weight, k_norm_weight)):
        raise ValueError(f"{name} needs its tensors contiguous in their last dimension")
    return b, heads, kv, slots, dim


def output_like(qkv: torch.Tensor, k_cache: torch.Tensor) -> torch.Tensor:
    """An empty [B, H D] in qkv's dtype: the attention output of every query head."""
    kv, _, dim = k_cache.shape[1:]
    return qkv.new_empty(qkv.shape[0], qkv.shape[1] - 2 * kv * dim)
