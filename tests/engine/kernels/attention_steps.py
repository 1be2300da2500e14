"""Helpers of the attention-block tests (engine/core/gpu_kernels/short_attention.py, attention.py): the PyTorch code of
``engine.core.model.layers`` that a block replaces, the inputs of one decode step, and a small decoder stack with its
decode loop."""

from __future__ import annotations

import torch

from engine.core.model import layers
from engine.core.model.layers import DecoderStack, RMSNorm, RotaryEmbedding, fuse_projections, rotate_half

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"
EPS = 1e-6
TOL = {torch.float32: 1e-5, torch.bfloat16: 3e-2}


def reference(qkv, q_norm, k_norm, cos, sin, k_cache, v_cache, write_pos, heads):
    """``Attention.forward``'s steps between the projections for one position per row (writes the caches): the
    norms and RoPE in qkv's dtype, the attention (``one_query_attention``: products and sums over a few slots,
    two matrix products over more) in float32, its output rounded once."""
    b = qkv.shape[0]
    kv, slots, dim = k_cache.shape[1:]
    q, k, v = qkv.split([heads * dim, kv * dim, kv * dim], dim=-1)
    q, k = q_norm(q.view(b, heads, dim)), k_norm(k.view(b, kv, dim))
    cos, sin = cos[:, None], sin[:, None]
    q = q * cos + rotate_half(q) * sin
    k = k * cos + rotate_half(k) * sin
    rows = torch.arange(b, device=qkv.device)
    k_cache[rows, :, write_pos] = k
    v_cache[rows, :, write_pos] = v.view(b, kv, dim)
    mask = (torch.arange(slots, device=qkv.device)[None, :] <= write_pos[:, None]).view(b, 1, 1, slots)
    out = layers.one_query_attention(q[:, :, None].float(), k_cache.float(), v_cache.float(), mask)
    return out.to(qkv.dtype).reshape(b, heads * dim)


def step_inputs(groups, dtype, write_pos, kv=2, dim=128, slots=16, seed=0):
    """One decode step of len(write_pos) rows, kv * groups query heads: qkv, the q and k norms, cos and sin at
    the rows' positions (write_pos), and key and value caches of len(write_pos) + 2 rows, whose rows 1..B the
    step takes (a view skipping a row at each end, as a batch bucket of a bigger cache is)."""
    g = torch.Generator().manual_seed(seed)
    b, heads = len(write_pos), kv * groups
    qkv = (2 * torch.randn(b, (heads + 2 * kv) * dim, generator=g)).to(dtype)
    q_norm, k_norm = RMSNorm(dim, EPS), RMSNorm(dim, EPS)
    with torch.no_grad():
        q_norm.weight.copy_(1 + 0.2 * torch.randn(dim, generator=g))
        k_norm.weight.copy_(1 + 0.2 * torch.randn(dim, generator=g))
    q_norm, k_norm = (n.to(DEVICE, dtype).requires_grad_(False) for n in (q_norm, k_norm))
    pos = torch.tensor(write_pos, device=DEVICE)
    cos, sin = RotaryEmbedding(dim, 10000.0).to(DEVICE)(pos[:, None], dtype)  # [B, 1, 1, D]
    k_big = torch.randn(b + 2, kv, slots, dim, generator=g).to(DEVICE, dtype)
    v_big = torch.randn(b + 2, kv, slots, dim, generator=g).to(DEVICE, dtype)
    return qkv.to(DEVICE), q_norm, k_norm, cos[:, 0, 0], sin[:, 0, 0], k_big, v_big, pos


def check_block(block, groups, dtype, write_pos, **shape):
    """``block`` (a one-position attention op) on ``step_inputs`` equals ``reference`` within TOL, and writes the
    caches at each row's slot and nowhere else: the keys as the reference writes them, the values exactly."""
    qkv, q_norm, k_norm, cos, sin, k_big, v_big, pos = step_inputs(groups, dtype, write_pos, **shape)
    heads = groups * k_big.shape[1]
    k_ref, v_ref = k_big.clone(), v_big.clone()
    expected = reference(qkv, q_norm, k_norm, cos, sin, k_ref[1:-1], v_ref[1:-1], pos, heads)
    k_got, v_got = k_big.clone(), v_big.clone()
    got = block(qkv, q_norm.weight, k_norm.weight, cos, sin, k_got[1:-1], v_got[1:-1], pos, EPS)
    assert got.dtype == dtype and got.shape == expected.shape
    tol = TOL[dtype]
    torch.testing.assert_close(got.float(), expected.float(), atol=tol, rtol=tol)

    written = torch.zeros(k_big.shape[:3], dtype=torch.bool, device=DEVICE)  # [rows, kv, slots]
    written[torch.arange(len(write_pos), device=DEVICE) + 1, :, pos] = True
    assert torch.equal(k_got[~written], k_big[~written]) and torch.equal(v_got[~written], v_big[~written])
    torch.testing.assert_close(k_got[written].float(), k_ref[written].float(), atol=tol, rtol=tol)
    assert torch.equal(v_got[written], v_ref[written])  # the values are copied as they are


def check_rounding(block, groups, write_pos, **shape):
    """bf16: ``block``'s output and the keys and values it writes are the reference's bits, now and then one ulp
    off (the order of float32 sums): the norms, RoPE and the output are rounded where the layer code rounds
    them. A failure names the tensor and how many of its values differ."""
    qkv, q_norm, k_norm, cos, sin, k_big, v_big, pos = step_inputs(groups, torch.bfloat16, write_pos, **shape)
    k_ref, v_ref = k_big.clone(), v_big.clone()
    expected = reference(qkv, q_norm, k_norm, cos, sin, k_ref[1:-1], v_ref[1:-1], pos, groups * k_big.shape[1])
    got = block(qkv, q_norm.weight, k_norm.weight, cos, sin, k_big[1:-1], v_big[1:-1], pos, EPS)
    rows = torch.arange(len(write_pos), device=DEVICE) + 1
    pairs = {"output": (got, expected), "written keys": (k_big[rows, :, pos], k_ref[rows, :, pos]),
             "written values": (v_big[rows, :, pos], v_ref[rows, :, pos])}
    differ = {name: (a != b).float().mean().item() for name, (a, b) in pairs.items()}
    assert max(differ.values()) < 0.01, "share of values unlike the layer code's: " + ", ".join(
        f"{name} {share:.2%}" for name, share in differ.items())
    for name, (a, b) in pairs.items():
        torch.testing.assert_close(a, b, atol=1e-3, rtol=2**-7, msg=lambda m, name=name: f"{name}: {m}")  # one ulp


def check_later_slots_unread(block, write_pos, **shape):
    """NaN in every slot from each row's new slot on (the new one is overwritten) changes nothing."""
    qkv, q_norm, k_norm, cos, sin, k_big, v_big, pos = step_inputs(2, torch.float32, write_pos, seed=7, **shape)
    clean = block(qkv, q_norm.weight, k_norm.weight, cos, sin, k_big.clone(), v_big.clone(), pos, EPS)
    for row, p in enumerate(write_pos):
        k_big[row, :, p:] = float("nan")
        v_big[row, :, p:] = float("nan")
    got = block(qkv, q_norm.weight, k_norm.weight, cos, sin, k_big, v_big, pos, EPS)
    torch.testing.assert_close(got, clean, atol=0, rtol=0)


def decoder_stack(dtype, layers_=2, hidden=256, heads=4, kv_heads=2, head_dim=64) -> DecoderStack:
    """A DecoderStack with fused projections, its weights bf16 values whatever ``dtype``."""
    torch.manual_seed(0)
    stack = DecoderStack(layers_, hidden, 2 * hidden, heads, kv_heads, head_dim, EPS, 1000000.0).eval()
    with torch.no_grad():
        for p in stack.parameters():
            p.normal_(0, 0.1)
        for m in stack.modules():
            if isinstance(m, RMSNorm):
                m.weight.add_(1.0)
        for p in stack.parameters():  # bf16 values: a float32 stack holds the weights of the bf16 one
            p.copy_(p.bfloat16())
    stack.to(DEVICE, dtype)
    fuse_projections(stack)  # after the move: the fused matrices are plain tensors, not parameters
    return stack


def decode(stack: DecoderStack, xs: torch.Tensor, first: int, slots: int, forward=None):
    """Positions 0.. of xs [B, N, H] through a fresh cache of ``slots`` slots: the first pass over ``first``
    positions (the plain code), then one position per call over the whole masked cache, as the frame step
    runs them -> the last hidden state of each call [B, N - first + 1, H], and the cache."""
    forward = stack if forward is None else forward
    b, n, _ = xs.shape
    cache = stack.new_cache(b, slots, xs.dtype, xs.device)
    positions = torch.arange(n, device=xs.device).expand(b, n)
    out = [stack(xs[:, :first], positions[:, :first], cache)[:, -1]]
    for j in range(first, n):
        out.append(forward(xs[:, j : j + 1], positions[:, j : j + 1], cache)[:, -1])
    return torch.stack(out, dim=1), cache
