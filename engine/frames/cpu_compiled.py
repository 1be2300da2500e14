"""The fast CPU path's one-position steps compiled with Inductor (``cpu_compile`` option): a talker step and each
code-predictor pass as one graph call instead of ~50 eager operations a layer.

On a CPU each eager operation costs microseconds of dispatch whatever its size; compiled, a layer's norms, RoPE,
cache writes and softmax become a few C++ loops between its four int8 products (still PyTorch's own
``_weight_int8pack_mm``, called from the graph). The arithmetic is ``engine.model.one_position``'s, with two
differences made so that one compiled graph serves every step: the code predictor attends over its whole 16-slot
cache, the slots not written yet masked, and its pass includes the head's product and the draw
(``engine.sampling.sample_reference``, the noise made by the caller); the talker's graph takes its cache cut at the
current length, that dimension compiled symbolic. Compiled float arithmetic rounds in another order, so the results
are within float32 rounding of the eager steps', not equal (tests/engine/frames/test_cpu_compiled.py).

A compile needs a C++ compiler (``engine.frames.compile.cpu_compile_enabled``); one that fails logs why, and the
eager steps run from then on. Inductor keeps what it compiled on disk, so a later process compiles far faster.
"""

from __future__ import annotations

import logging
import threading

import torch
import torch.nn.functional as F

from engine.model.int8 import Int8Weight
from engine.model.layers import KVCache
from engine.model.one_position import OnePosition, _rms
from engine.sampling import StageSettings, sample_reference

log = logging.getLogger(__name__)

PER_LAYER = 11  # the tensors of one layer in ``layer_tensors``' flat list, in ``stack_at``'s order


def layer_tensors(stack: OnePosition) -> list[torch.Tensor]:
    """Every layer's norm weights and int8 products of ``stack`` as one flat list, the graph's inputs."""
    out = []
    for in_norm, qkv_w, qk_weight, _eps, out_w, post_norm, gate_up_w, down_w in stack.layers:
        out += [in_norm.weight.detach(), qkv_w.q, qkv_w.scale, qk_weight, out_w.q, out_w.scale,
                post_norm.weight.detach(), gate_up_w.q, gate_up_w.scale, down_w.q, down_w.scale]
    return out


def stack_at(x: torch.Tensor, pos: torch.Tensor, cos: torch.Tensor, signed_sin: torch.Tensor, keys: torch.Tensor,
             values: torch.Tensor, weights: list[torch.Tensor], norm_weight: torch.Tensor, eps: float, heads: int,
             kv_heads: int) -> torch.Tensor:
    """``BoundStep``'s step for x [1, H] at ``pos`` (a 0-d int64 tensor) over keys and values [L, kv, S, d]
    (slot ``pos`` written, slots after it masked) -> the stack's normed output [1, H]."""
    d = keys.shape[-1]
    q_width, kv_width, half, group = heads * d, kv_heads * d, d // 2, heads // kv_heads
    at = pos.view(1)
    cos, signed_sin = cos.index_select(0, at), signed_sin.index_select(0, at)  # [1, d]
    unwritten = torch.arange(keys.shape[2]) > pos  # [S]
    for i in range(len(weights) // PER_LAYER):
        (in_w, qkv_q, qkv_s, qk_w, out_q, out_s, post_w, gu_q, gu_s, down_q, down_s) = \
            weights[i * PER_LAYER : (i + 1) * PER_LAYER]
        qkv = torch.ops.aten._weight_int8pack_mm(_rms(x, in_w, eps).to(torch.bfloat16), qkv_q, qkv_s).float()
        qk = _rms(qkv[0, : q_width + kv_width].view(-1, d), qk_w, eps)  # [heads + kv, d]
        qk = qk * cos + qk.roll(half, -1) * signed_sin
        # index_put_ on the whole cache: compiled, it writes the one slot in place (a layer's view would be copied)
        slot = (torch.full((1, 1), i, dtype=torch.int64), torch.arange(kv_heads)[:, None], at[None])
        keys.index_put_(slot, qk[heads:, None])
        values.index_put_(slot, qkv[0, q_width + kv_width :].view(kv_heads, 1, d))
        scores = torch.bmm(qk[:heads].view(kv_heads, group, d), keys[i].transpose(1, 2))  # [kv, group, S]
        out = torch.bmm(scores.masked_fill(unwritten, float("-inf")).softmax(dim=-1), values[i])
        x = x + torch.ops.aten._weight_int8pack_mm(out.reshape(1, q_width).to(torch.bfloat16), out_q, out_s)
        gate_up = torch.ops.aten._weight_int8pack_mm(_rms(x, post_w, eps).to(torch.bfloat16), gu_q, gu_s).float()
        gate, up = gate_up.chunk(2, dim=-1)
        x = x + torch.ops.aten._weight_int8pack_mm((F.silu(gate) * up).to(torch.bfloat16), down_q, down_s)
    return _rms(x, norm_weight, eps)


def predictor_code(x, pos, cos, signed_sin, keys, values, weights, norm_weight, eps: float, heads: int,
                   kv_heads: int, head_q, head_scale, settings: StageSettings, noise) -> torch.Tensor:
    """One code-predictor pass and its draw: ``stack_at``, then the head's product and ``sample_reference`` with
    the draw's ``noise`` [1, V] -> the code [1]."""
    h = stack_at(x, pos, cos, signed_sin, keys, values, weights, norm_weight, eps, heads, kv_heads)
    logits = torch.ops.aten._weight_int8pack_mm(h.to(torch.bfloat16), head_q, head_scale).float()
    return sample_reference(logits, settings, None, None, noise)  # seeds and counter: unread beside noise


_compile_lock = threading.Lock()
_compiled: dict[str, object] = {}


def _compiled_fn(name: str):
    """``stack_at`` (the talker: its cache length symbolic) or ``predictor_code`` (every shape static), compiled
    once per process; each model's shapes add one entry to its cache."""
    with _compile_lock:
        if name not in _compiled:
            torch._dynamo.config.cache_size_limit = max(torch._dynamo.config.cache_size_limit, 64)
            fn = stack_at if name == "talker" else predictor_code
            _compiled[name] = torch.compile(fn, dynamic=None if name == "talker" else False, fullgraph=True)
        return _compiled[name]


class CompiledPositions:
    """The talker's and the code predictor's compiled steps, made once per talker (``for_talker``); ``talker_over``
    and ``predictor_over`` bind them to a generator's caches. Once a compile has failed (``failed``) every step
    returns None, and the caller runs the eager one."""

    def __init__(self, talker_stack: OnePosition, predictor_stack: OnePosition, heads: list[Int8Weight],
                 predictor_positions: int):
        self.stacks = talker_stack, predictor_stack
        self.weights = layer_tensors(talker_stack), layer_tensors(predictor_stack)
        self.heads = heads
        predictor_stack.tables(predictor_positions)
        self.positions = [torch.tensor(p) for p in range(predictor_positions)]
        # position 0's pass draws a code no one reads: greedy, over constant noise
        self.unread = StageSettings.allocate(1, "cpu")
        self.unread.greedy.fill_(True)
        self.unread_noise = torch.full((1, heads[0].shape[0]), 0.5)
        self.failed = False

    @classmethod
    def for_talker(cls, talker, stacks: tuple[OnePosition, OnePosition]) -> CompiledPositions:
        made = getattr(talker, "_compiled_positions", None)
        if made is None or made.stacks[0] is not stacks[0]:
            cp = talker.code_predictor
            made = cls(*stacks, cp.head_weights, cp.config.num_code_groups)
            talker._compiled_positions = made
        return made

    def _failed(self, what: str, error: Exception) -> None:
        self.failed = True
        log.warning("compiling the %s failed; running it uncompiled: %s", what, str(error)[-2000:])

    def talker_over(self, cache: KVCache) -> CompiledTalkerStep:
        self.stacks[0].tables(cache.max_len)
        return CompiledTalkerStep(self, cache)

    def predictor_over(self, cache: KVCache) -> CompiledPredictorPass:
        return CompiledPredictorPass(self, cache)


class CompiledTalkerStep:
    """``BoundStep`` over the talker's cache, compiled: ``step(x, pos)`` -> the normed output [1, H], or None once
    compiling has failed."""

    def __init__(self, made: CompiledPositions, cache: KVCache):
        self.made = made
        self.keys, self.values = cache.k[:, 0], cache.v[:, 0]  # [L, kv, S, d]

    def __call__(self, x: torch.Tensor, pos: int) -> torch.Tensor | None:
        made = self.made
        if made.failed:
            return None
        s = made.stacks[0]
        keys, values = self.keys[:, :, : pos + 1], self.values[:, :, : pos + 1]
        torch._dynamo.mark_dynamic(keys, 2)  # one graph for every length, not one for the first and one for the rest
        torch._dynamo.mark_dynamic(values, 2)
        try:
            return _compiled_fn("talker")(x, torch.tensor(pos), s.cos, s.signed_sin, keys, values, made.weights[0],
                                          s.norm.weight, s.layers[0][3], s.heads, s.kv_heads)
        except Exception as e:  # inductor/dynamo raise many types; the eager step always works
            made._failed("talker step", e)
            return None


class CompiledPredictorPass:
    """``BoundStep`` over the code predictor's cache, compiled with each pass's head and draw. ``code(x, pos, j,
    settings, noise)``: codebook j+1 [1]; ``write(x, 0)``: position 0 into the cache. Both return None once
    compiling has failed (``write``: False)."""

    def __init__(self, made: CompiledPositions, cache: KVCache):
        self.made = made
        self.keys, self.values = cache.k[:, 0], cache.v[:, 0]  # [L, kv, 16, d]

    def code(self, x: torch.Tensor, pos: int, j: int, settings: StageSettings,
             noise: torch.Tensor) -> torch.Tensor | None:
        made = self.made
        if made.failed:
            return None
        s, head = made.stacks[1], made.heads[j]
        try:
            return _compiled_fn("predictor")(x, made.positions[pos], s.cos, s.signed_sin, self.keys, self.values,
                                             made.weights[1], s.norm.weight, s.layers[0][3], s.heads, s.kv_heads,
                                             head.q, head.scale, settings, noise)
        except Exception as e:  # inductor/dynamo raise many types; the eager step always works
            made._failed("code predictor's pass", e)
            return None

    def write(self, x: torch.Tensor, pos: int) -> bool:
        return self.code(x, pos, 0, self.made.unread, self.made.unread_noise) is not None
