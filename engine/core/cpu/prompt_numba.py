"""A prompt's pass through an int8 decoder stack on the CPU (one stream) in ~12 calls a layer: the four integer
matrix products (``torch._int_mm``), PyTorch's attention, and Numba loops for everything between them.

``DecoderStack.forward`` spends ~70 PyTorch operations a layer on a prompt: norms, the q and k heads' norms and
rotations, cache writes, splits, SiLU, residual adds, and the rounding around each integer product; at 8 threads
each costs tens of microseconds whatever its size, and together they took longer than the products
(docs/benchmarks.md#cpu-prompt-layers). Here each row's norm is fused with its rounding into a product's two int8
parts (``engine.core.cpu.prompt_rows_numba``'s rule), a product's int32 sums are joined with the residual add and
the next norm, the SiLU, or the heads' norms, rotations and cache writes. The arithmetic is ``DecoderStack``'s
with ``integer_rows`` products; the norms' sums are plain float32 loops instead of PyTorch's reductions, so the
outputs agree within float32 rounding (tests/engine/model/test_prompt_numba.py).
"""

from __future__ import annotations

import functools
import logging

import numpy as np
import torch
import torch.nn.functional as F

from engine.core.cpu import int8, prompt_rows_numba
from engine.core.cpu.int8 import Int8Weight
from engine.core.cpu.numba_layer import cacheable, normed_rotated, numba, rms, silu
from engine.core.cpu.one_position_numba import KERNEL_LOCK, follow_torch_threads
from engine.core.cpu.prompt_rows_numba import joined, rounded_row, split

log = logging.getLogger(__name__)

if numba is not None:
    from numba import njit, prange

    _JIT = {"cache": cacheable(), "nogil": True, "boundscheck": False}

    @njit(parallel=True, **_JIT)
    def norm_split(x, weight, eps, parts, sx):
        """Each row of x [M, K] normed (``weight``) and rounded into parts [2M, K] with its scale sx[i]."""
        m, k = x.shape
        for i in prange(m):
            normed = np.empty(k, np.float32)
            rms(x[i], weight, eps, normed)
            sx[i] = rounded_row(normed, parts[i], parts[m + i])

    @njit(parallel=True, **_JIT)
    def add_norm_split(sums, sx, scale, x, weight, eps, parts, sx_next):
        """x [M, N] += the product joined from sums [2M, N] (``prompt_rows_numba.joined``); then each row
        of x normed (``weight``) and rounded into parts [2M, N] and sx_next for the next product."""
        m, n = x.shape
        for i in prange(m):
            row, high, low, s = x[i], sums[i], sums[m + i], sx[i]
            for j in range(n):
                row[j] = row[j] + joined(high, low, s, scale, j)
            normed = np.empty(n, np.float32)
            rms(row, weight, eps, normed)
            sx_next[i] = rounded_row(normed, parts[i], parts[m + i])

    @njit(parallel=True, **_JIT)
    def add(sums, sx, scale, x):
        """x [M, N] += the product joined from sums [2M, N]."""
        m, n = x.shape
        for i in prange(m):
            row, high, low, s = x[i], sums[i], sums[m + i], sx[i]
            for j in range(n):
                row[j] = row[j] + joined(high, low, s, scale, j)

    @njit(parallel=True, **_JIT)
    def silu_split(sums, sx, scale, parts, sx_next):
        """The gate and up product joined from sums [2M, 2I], silu(gate) * up rounded into parts [2M, I]."""
        m, inter = sums.shape[0] // 2, sums.shape[1] // 2
        for i in prange(m):
            high, low, s = sums[i], sums[m + i], sx[i]
            act = np.empty(inter, np.float32)
            for j in range(inter):
                gate = joined(high, low, s, scale, j)
                act[j] = silu(gate) * joined(high, low, s, scale, inter + j)
            sx_next[i] = rounded_row(act, parts[i], parts[m + i])

    @njit(parallel=True, **_JIT)
    def heads_rotated(qkv, q_weight, k_weight, eps, cos, signed_sin, slots, q, keys, values):
        """From qkv [T, (H + 2 KV) d]: each q head normed (``q_weight``) and rotated into q [H, T, d], each k head
        the same into keys [KV, S, d] at its row's slot, each v head into values; cos and signed_sin [T, d]
        (``OnePosition.tables``' form)."""
        t_len = qkv.shape[0]
        heads, d = q.shape[0], q.shape[2]
        kv = keys.shape[0]
        for task in prange(t_len * (heads + 2 * kv)):
            t, r = task // (heads + 2 * kv), task % (heads + 2 * kv)
            row = qkv[t, r * d : (r + 1) * d]
            if r >= heads + kv:
                target = values[r - heads - kv, slots[t]]
                for i in range(d):
                    target[i] = row[i]
                continue
            target = q[r, t] if r < heads else keys[r - heads, slots[t]]
            weight = q_weight if r < heads else k_weight
            normed_rotated(row, weight, eps, cos[t], signed_sin[t], np.empty(d, np.float32), target)


def takes(stack, x: torch.Tensor, positions: torch.Tensor, cache, kv_len: int) -> bool:
    """Whether this pass runs here: a CPU prompt of one stream (``int8.GEMM_ROWS`` rows or more) in float32
    through a stack of int8 weights whose products take the integer form, at positions inside the cache (the loops
    do not check their indices), with Numba's loops running, compiled, and cached on disk (a frozen app, which
    compiles at each start, keeps PyTorch's pass: the compile would cost more than it saves in a short session)."""
    layer = stack.layers[0]
    return (x.device.type == "cpu" and x.dim() == 3 and x.shape[0] == 1 and x.shape[1] >= int8.GEMM_ROWS
            and x.dtype == torch.float32 and cache.k.dtype == torch.float32 and cache.k.shape[1] == 1
            and isinstance(layer.self_attn.qkv_weight, Int8Weight) and int8.prefill_form() == "integer"
            and 0 < kv_len <= cache.max_len and int(positions.min()) >= 0 and int(positions.max()) < cache.max_len
            and prompt_rows_numba.runs_here() and cacheable() and _compiled())


@functools.cache
def _compiled() -> bool:
    """Compile the loops once (a row or two each); False, logged, where Numba cannot (PyTorch's pass then runs)."""
    f32, i8 = np.float32, np.int8
    try:
        with KERNEL_LOCK:
            norm_split(np.ones((1, 4), f32), np.ones(4, f32), 1e-6, np.empty((2, 4), i8), np.empty(1, f32))
            sums = np.ones((2, 4), np.int32)
            add_norm_split(sums, np.ones(1, f32), np.ones(4, f32), np.ones((1, 4), f32), np.ones(4, f32), 1e-6,
                           np.empty((2, 4), i8), np.empty(1, f32))
            add(sums, np.ones(1, f32), np.ones(4, f32), np.ones((1, 4), f32))
            silu_split(sums, np.ones(1, f32), np.ones(4, f32), np.empty((2, 2), i8), np.empty(1, f32))
            heads_rotated(np.ones((1, 8), f32), np.ones(2, f32), np.ones(2, f32), 1e-6, np.ones((1, 2), f32),
                          np.ones((1, 2), f32), np.zeros(1, np.int64), np.empty((2, 1, 2), f32),
                          np.empty((1, 1, 2), f32), np.empty((1, 1, 2), f32))
        return True
    except Exception as e:  # numba raises many types (typing, lowering, LLVM)
        log.warning("compiling the Numba prompt pass failed; prompts run PyTorch's: %s", str(e)[-2000:])
        return False


def _numba(kernel, *args) -> None:
    with KERNEL_LOCK:
        follow_torch_threads()
        kernel(*args)


def _product(parts: torch.Tensor, weight: Int8Weight) -> tuple[torch.Tensor, np.ndarray]:
    """The int32 sums [2M, N] of parts with the weight, and its row scales as float32."""
    return torch._int_mm(parts, weight.q.t()), weight.scale.float().numpy()


def forward(stack, x: torch.Tensor, positions: torch.Tensor, cache, kv_len: int) -> torch.Tensor:
    """``stack(x, positions, cache, kv_len)`` for a prompt that ``takes`` says runs here: x [1, T, H] -> normed
    [1, T, H]; the keys and values written into ``cache`` at ``positions``."""
    t_len, width = x.shape[1], x.shape[2]
    attn = stack.layers[0].self_attn
    heads, d = attn.heads, attn.head_dim
    cos, sin = stack.rotary(positions, torch.float32)
    half = sin.shape[-1] // 2
    cos, signed_sin = cos[0, 0].contiguous().numpy(), torch.cat([-sin[0, 0, :, :half], sin[0, 0, :, half:]], -1).numpy()
    slots = positions[0].to(torch.int64).contiguous().numpy()
    mask = (torch.arange(kv_len)[None, None, :] <= positions[:, :, None])[:, None]  # [1, 1, T, kv_len]
    h = x[0].float().contiguous().clone()  # the residual stream [T, H], changed in place
    hn = h.numpy()
    parts, sx = torch.empty(2 * t_len, width, dtype=torch.int8), np.empty(t_len, np.float32)
    q = torch.empty(1, heads, t_len, d)
    first = stack.layers[0]
    _numba(norm_split, hn, first.input_layernorm.weight.detach().float().numpy(), first.input_layernorm.eps,
           parts.numpy(), sx)
    for i, layer in enumerate(stack.layers):
        a, mlp = layer.self_attn, layer.mlp
        keys, values = cache.k[i][0], cache.v[i][0]  # [KV, S, d]
        sums, scale = _product(parts, a.qkv_weight)
        qkv = np.empty((t_len, sums.shape[1]), np.float32)
        _numba(prompt_rows_numba.join, sums.numpy(), sx, scale, qkv)
        _numba(heads_rotated, qkv, a.q_norm.weight.detach().float().numpy(),
               a.k_norm.weight.detach().float().numpy(), a.q_norm.eps, cos, signed_sin, slots, q[0].numpy(),
               keys.numpy(), values.numpy())
        out = F.scaled_dot_product_attention(q, keys[None, :, :kv_len], values[None, :, :kv_len], attn_mask=mask,
                                             enable_gqa=True)  # [1, heads, T, d]
        out = out[0].transpose(0, 1).reshape(t_len, heads * d).contiguous()
        attn_parts = torch.empty(2 * t_len, heads * d, dtype=torch.int8)
        _numba(split, out.numpy(), attn_parts.numpy(), sx)
        sums, scale = _product(attn_parts, a.out_weight)
        post = layer.post_attention_layernorm
        _numba(add_norm_split, sums.numpy(), sx, scale, hn, post.weight.detach().float().numpy(), post.eps,
               parts.numpy(), sx)
        sums, scale = _product(parts, mlp.gate_up_weight)
        act_parts = torch.empty(2 * t_len, sums.shape[1] // 2, dtype=torch.int8)
        _numba(silu_split, sums.numpy(), sx, scale, act_parts.numpy(), sx)
        sums, scale = _product(act_parts, mlp.down_weight)
        if i + 1 < len(stack.layers):
            norm = stack.layers[i + 1].input_layernorm
            _numba(add_norm_split, sums.numpy(), sx, scale, hn, norm.weight.detach().float().numpy(), norm.eps,
                   parts.numpy(), sx)
        else:
            _numba(add, sums.numpy(), sx, scale, hn)
    return stack.norm(h[None])
