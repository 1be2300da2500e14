"""The fast CPU path's one-position steps as machine code compiled by Numba: a whole decoder stack's step for one
position of one stream in one call, instead of ~40 PyTorch operations a layer.

A CPU frame of the 0.6B model is ~110 layer steps, and through ``engine.model.one_position`` each is ~40 eager
operations around four int8 products: their dispatch costs as much as the products, and PyTorch's int8 kernel for one
row reads its weights at well under the memory's speed. Here each layer is a few loops in one compiled function: the
norms, RoPE, the cache writes and the attention as plain float32 loops, and each product as rows of int8 weights
(the same ``Int8Weight`` values and row scales) times float32 activations, split over the cores in blocks of rows
(docs/benchmarks.md#cpu-numba). The arithmetic is ``one_position``'s in float32 except that the products' activations
stay float32 (PyTorch's kernel rounds them to bfloat16) and sums run in another order; tests/engine/model/
test_one_position_numba.py holds the two together.

Numba compiles these functions once per machine (seconds) and keeps them in its cache; where Numba is missing or a
compile fails, ``numba_stacks`` returns None and the PyTorch steps run. Calls are serialised by a lock: one
stream steps at a time, and Numba's thread pool then never sees two callers.
"""

from __future__ import annotations

import logging
import threading
from pathlib import Path

import numpy as np
import torch

from engine.model.int8 import Int8Weight
from engine.model.layers import DecoderStack, KVCache
from engine.model.one_position import OnePosition

log = logging.getLogger(__name__)

ROW_BLOCK = 16  # rows of a product one task computes (docs/benchmarks.md#cpu-numba)

try:
    import numba
    from numba import njit, prange
except Exception as _error:  # missing, or its LLVM library does not load here: the PyTorch steps run instead
    log.info("Numba is not usable here (%s); the CPU frames run through PyTorch", _error)
    numba = None

_lock = threading.Lock()
_failed: list[str] = []


def _cacheable() -> bool:
    """Numba caches what it compiled beside a module's source file (in the user's cache folder where that folder
    is read-only); a frozen app has no source, so it compiles in each process there."""
    return Path(__file__).is_file()


if numba is not None:
    _JIT = {"fastmath": True, "cache": _cacheable(), "nogil": True, "boundscheck": False}

    @njit(inline="always", **_JIT)
    def _rows(q, scale, x, y, block, add):
        """y[n] (+)= scale[n] * (q[n] . x) for the rows of ``block``."""
        n_rows, k = q.shape
        for n in range(block * ROW_BLOCK, min(n_rows, block * ROW_BLOCK + ROW_BLOCK)):
            acc = np.float32(0.0)
            for i in range(k):
                acc += np.float32(q[n, i]) * x[i]
            if add:
                y[n] += acc * scale[n]
            else:
                y[n] = acc * scale[n]

    @njit(inline="always", **_JIT)
    def _rms(x, weight, eps, out):
        """out = weight * x / sqrt(mean(x^2) + eps)."""
        s = np.float32(0.0)
        for i in range(x.shape[0]):
            s += x[i] * x[i]
        r = np.float32(1.0) / np.sqrt(s / np.float32(x.shape[0]) + np.float32(eps))
        for i in range(x.shape[0]):
            out[i] = weight[i] * (x[i] * r)

    @njit(parallel=True, **_JIT)
    def _product(q, scale, x, y):
        """y = (q * scale[:, None]) @ x: one int8 product of one row, split over the cores."""
        for block in prange((q.shape[0] + ROW_BLOCK - 1) // ROW_BLOCK):
            _rows(q, scale, x, y, block, False)

    @njit(parallel=True, **_JIT)
    def _stack_step(x, pos, cos, signed_sin, keys, values, in_w, qkv_q, qkv_s, qk_w, out_q, out_s, post_w, gu_q,
                    gu_s, down_q, down_s, norm_w, eps, heads, final_norm, out,
                    h, qkv, qk, attn, scores, gu, act):
        """One position through every layer: x [H] (changed in place: the residual stream) at ``pos`` over keys
        and values [L, kv, S, d]; with ``final_norm`` the normed output into ``out`` [H]. The rest are scratch."""
        n_layers, kv, _, d = keys.shape
        half, group, q_width = d // 2, heads // kv, heads * d
        inter = gu.shape[0] // 2
        length = pos + 1
        for layer in range(n_layers):
            _rms(x, in_w[layer], eps, h)
            wq, ws = qkv_q[layer], qkv_s[layer]  # read from the lists once, not in every task
            for block in prange((wq.shape[0] + ROW_BLOCK - 1) // ROW_BLOCK):
                _rows(wq, ws, h, qkv, block, False)
            # q and k: each head normed, then rotated; k and v written at pos
            for r in range(heads + kv):
                row = qkv[r * d : (r + 1) * d]
                s = np.float32(0.0)
                for i in range(d):
                    s += row[i] * row[i]
                inv = np.float32(1.0) / np.sqrt(s / np.float32(d) + np.float32(eps))
                w = qk_w[layer, r]
                for i in range(d):
                    qk[i] = w[i] * (row[i] * inv)
                target = attn[r * d : (r + 1) * d] if r < heads else keys[layer, r - heads, pos]
                for i in range(d):
                    j = i + half if i < half else i - half
                    target[i] = qk[i] * cos[pos, i] + qk[j] * signed_sin[pos, i]
            v_start = q_width + kv * d
            for g in range(kv):
                for i in range(d):
                    values[layer, g, pos, i] = qkv[v_start + g * d + i]
            # attention of each query head over the filled slots; its output replaces the head's query in attn
            for head in prange(heads):
                g = head // group
                q = attn[head * d : (head + 1) * d]
                sc = scores[head]
                top = np.float32(-np.inf)
                for t in range(length):
                    acc = np.float32(0.0)
                    kt = keys[layer, g, t]
                    for i in range(d):
                        acc += q[i] * kt[i]
                    sc[t] = acc
                    top = max(top, acc)
                total = np.float32(0.0)
                for t in range(length):
                    sc[t] = np.exp(sc[t] - top)
                    total += sc[t]
                for i in range(d):
                    q[i] = np.float32(0.0)
                for t in range(length):
                    p = sc[t] / total
                    vt = values[layer, g, t]
                    for i in range(d):
                        q[i] += p * vt[i]
            wq, ws = out_q[layer], out_s[layer]
            for block in prange((wq.shape[0] + ROW_BLOCK - 1) // ROW_BLOCK):
                _rows(wq, ws, attn, x, block, True)
            _rms(x, post_w[layer], eps, h)
            wq, ws = gu_q[layer], gu_s[layer]
            for block in prange((wq.shape[0] + ROW_BLOCK - 1) // ROW_BLOCK):
                _rows(wq, ws, h, gu, block, False)
            for i in range(inter):
                gate = gu[i]
                act[i] = gate / (np.float32(1.0) + np.exp(-gate)) * gu[inter + i]
            wq, ws = down_q[layer], down_s[layer]
            for block in prange((wq.shape[0] + ROW_BLOCK - 1) // ROW_BLOCK):
                _rows(wq, ws, act, x, block, True)
        if final_norm:
            _rms(x, norm_w, eps, out)


def _listed(weights: list[Int8Weight]) -> tuple[object, np.ndarray]:
    """The layers' int8 values as a Numba list of [N, K] arrays over the weights' own memory (a copy would stay
    resident: the allocator keeps what the originals freed) and their row scales as float32 [L, N]."""
    q = numba.typed.List()
    for w in weights:
        q.append(w.q.numpy())
    return q, torch.stack([w.scale for w in weights]).float().numpy()


class NumbaPosition:
    """``OnePosition`` as one Numba call a step; ``over(cache)`` binds a cache like ``OnePosition.over``."""

    def __init__(self, stack: OnePosition):
        self.positions = stack
        layers = stack.layers
        self.eps = float(layers[0][3])
        self.heads = stack.heads
        self.in_w = np.stack([layer[0].weight.detach().float().numpy() for layer in layers])
        self.qkv = _listed([layer[1] for layer in layers])
        self.qk_w = torch.stack([layer[2] for layer in layers]).numpy()  # q's rows carry the attention's 1/sqrt(d)
        self.out = _listed([layer[4] for layer in layers])
        self.post_w = np.stack([layer[5].weight.detach().float().numpy() for layer in layers])
        self.gate_up = _listed([layer[6] for layer in layers])
        self.down = _listed([layer[7] for layer in layers])
        self.norm_w = stack.norm.weight.detach().float().numpy()

    def over(self, cache: KVCache) -> NumbaBoundStep:
        self.positions.tables(cache.max_len)
        return NumbaBoundStep(self, cache)


class NumbaBoundStep:
    """``BoundStep``'s ``step(x, pos, final_norm)`` through the Numba kernel."""

    def __init__(self, stack: NumbaPosition, cache: KVCache):
        self.stack = stack
        k, v = cache.k[:, 0], cache.v[:, 0]  # [L, kv, S, d], one stream: contiguous
        if not (k.is_contiguous() and v.is_contiguous() and k.dtype == torch.float32):
            raise ValueError("the Numba step needs a float32 cache of one stream")
        self.keys, self.values = k.numpy(), v.numpy()
        s, d = stack.positions, stack.positions.head_dim
        width = stack.in_w.shape[1]
        self.x = np.empty(width, np.float32)
        self.h = np.empty(width, np.float32)
        self.qkv = np.empty(stack.qkv[1].shape[1], np.float32)
        self.qk = np.empty(d, np.float32)
        self.attn = np.empty(s.heads * d, np.float32)
        self.scores = np.empty((s.heads, cache.max_len), np.float32)
        self.gu = np.empty(stack.gate_up[1].shape[1], np.float32)
        self.act = np.empty(self.gu.shape[0] // 2, np.float32)

    def __call__(self, x: torch.Tensor, pos: int, final_norm: bool = True) -> torch.Tensor | None:
        s, p = self.stack, self.stack.positions
        if not 0 <= pos < self.keys.shape[2]:  # the kernel does not check its indices
            raise IndexError(f"position {pos} is outside this cache's {self.keys.shape[2]} slots")
        out = np.empty(self.x.shape[0], np.float32)
        self.x[:] = x.reshape(-1).numpy()
        with _lock:
            _follow_torch_threads()
            _stack_step(self.x, pos, p.cos.numpy(), p.signed_sin.numpy(), self.keys, self.values, s.in_w, *s.qkv,
                        s.qk_w, *s.out, s.post_w, *s.gate_up, *s.down, s.norm_w, s.eps, s.heads, final_norm, out,
                        self.h, self.qkv, self.qk, self.attn, self.scores, self.gu, self.act)
        return torch.from_numpy(out)[None] if final_norm else None


class NumbaHead:
    """A code-predictor head's ``Int8Weight`` as ``row(x)`` -> float32 logits [1, N] through the Numba product."""

    def __init__(self, weight: Int8Weight):
        self.q, self.scale = weight.q.numpy(), weight.scale.float().numpy()

    def row(self, x: torch.Tensor) -> torch.Tensor:
        y = np.empty(self.q.shape[0], np.float32)
        with _lock:
            _follow_torch_threads()
            _product(self.q, self.scale, np.ascontiguousarray(x.reshape(-1).numpy(), np.float32), y)
        return torch.from_numpy(y)[None]


def runs_numba(stack: DecoderStack) -> bool:
    """Whether Numba is here and ``stack``'s projections are all ``Int8Weight`` (int4 keeps the PyTorch steps)."""
    if numba is None or _failed:
        return False
    return all(isinstance(w, Int8Weight) for layer in stack.layers
               for w in (layer.self_attn.qkv_weight, layer.self_attn.out_weight, layer.mlp.gate_up_weight,
                         layer.mlp.down_weight))


def _follow_torch_threads() -> None:
    """Numba's threads for the calling thread's next kernels: PyTorch's count (which ``engine.frames.threads``
    chooses frame by frame), at most Numba's pool."""
    numba.set_num_threads(max(1, min(torch.get_num_threads(), numba.config.NUMBA_NUM_THREADS)))


def numba_stacks(talker, stacks: tuple[OnePosition, OnePosition]) -> tuple[NumbaPosition, NumbaPosition,
                                                                           list[NumbaHead]] | None:
    """The talker's and its code predictor's Numba steps and the predictor's heads, made and compiled once per
    talker; None where the ``cpu_numba`` option is off, Numba is missing, a projection is not int8, or a compile
    failed (the PyTorch steps then run)."""
    from engine import options

    if not options.current().cpu_numba:
        return None
    made = getattr(talker, "_numba_stacks", None)
    if made is not None and made[0] is stacks:
        return made[1]
    steps = None
    cp = talker.code_predictor
    if (runs_numba(talker.model) and runs_numba(cp.model)
            and all(isinstance(w, Int8Weight) for w in cp.head_weights or [None])):
        built = NumbaPosition(stacks[0]), NumbaPosition(stacks[1])
        if compile_check(built):
            steps = (*built, [NumbaHead(w) for w in cp.head_weights])
    talker._numba_stacks = (stacks, steps)
    return steps


def compile_check(stacks: tuple[NumbaPosition, NumbaPosition]) -> bool:
    """Compile the kernels now (a step of a scratch cache each) so that a failure falls back before the first
    frame; False, logged, when Numba cannot compile them here."""
    try:
        for stack in stacks:
            width = stack.in_w.shape[1]
            n_layers, kv, d = stack.in_w.shape[0], stack.positions.kv_heads, stack.positions.head_dim
            cache = KVCache(n_layers, 1, kv, 2, d, torch.float32, "cpu")
            stack.over(cache)(torch.ones(1, width), 0)
        q = np.zeros((ROW_BLOCK, 8), np.int8)
        _product(q, np.ones(ROW_BLOCK, np.float32), np.zeros(8, np.float32), np.empty(ROW_BLOCK, np.float32))
        return True
    except Exception as e:  # numba raises many types (typing, lowering, LLVM); the PyTorch steps always work
        _failed.append(str(e))
        log.warning("compiling the Numba CPU steps failed; running the PyTorch steps: %s", str(e)[-2000:])
        return False
