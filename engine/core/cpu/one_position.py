"""One-position steps of a decoder stack on the fast CPU path: the talker's step and the code predictor's passes
of one stream, a frame of the 0.6B model in ~14,500 PyTorch operations instead of ~23,500.

On a CPU each eager operation costs microseconds of dispatch whatever its size, and through ``DecoderStack.forward``
the frame's ~108 layer steps (15 predictor passes of 5 layers, 28 talker layers) are each ~200 of them: as much time
as the int8 products on 8 cores (docs/benchmarks.md#cpu-one-position). For one position of one stream most of that
work has a shorter form: rotary tables read by position instead of computed, q and k normalised together, the
cache written at a slot the host knows, the attention over the filled slots as two small products instead of a
masked fused kernel, the int8 products called directly. The arithmetic is ``DecoderStack.forward``'s, operation for
operation, except the attention's (its scale, softmax and sums in another order); tests/engine/model/
test_one_position.py holds the two together.

Only for layers whose projections are ``engine.core.cpu.int8.Int8Weight`` (``engine.core.cpu.int8.quantize_layers``),
float32 activations, batch 1.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from engine.core.cpu.int8 import Int8Weight
from engine.core.model.layers import DecoderStack, KVCache


def runs_one_position(stack: DecoderStack) -> bool:
    """Whether ``stack`` can step through ``OnePosition``: every projection int8, float32 norms, on the
    CPU."""
    for layer in stack.layers:
        a, m = layer.self_attn, layer.mlp
        weights = (a.qkv_weight, a.out_weight, m.gate_up_weight, m.down_weight)
        if not all(isinstance(w, Int8Weight) for w in weights):
            return False
    norm = stack.norm.weight
    return norm.device.type == "cpu" and norm.dtype == torch.float32


class OnePosition:
    """``DecoderStack.forward`` for one position of one stream, int8 projections. ``over(cache)`` binds a cache;
    the result steps ``x`` [1, H] at ``pos`` (an int) -> the stack's normed output [1, H]."""

    def __init__(self, stack: DecoderStack):
        a = stack.layers[0].self_attn
        self.heads, self.kv_heads, self.head_dim = a.heads, a.kv_heads, a.head_dim
        self.q_width, self.kv_width = a.heads * a.head_dim, a.kv_heads * a.head_dim
        self.rotary, self.norm = stack.rotary, stack.norm
        self.layers = [self._layer(layer) for layer in stack.layers]
        self.cos = self.signed_sin = torch.empty(0, a.head_dim)

    def _layer(self, layer) -> tuple:
        a, m = layer.self_attn, layer.mlp
        # q's rows carry the attention's 1/sqrt(d): scaling q before its products scales every score
        qk_weight = torch.cat([a.q_norm.weight.detach().float().expand(a.heads, -1) * a.head_dim**-0.5,
                               a.k_norm.weight.detach().float().expand(a.kv_heads, -1)])  # [heads + kv, d]
        return (layer.input_layernorm, a.qkv_weight, qk_weight, a.q_norm.eps, a.out_weight,
                layer.post_attention_layernorm, m.gate_up_weight, m.down_weight)

    def tables(self, length: int) -> None:
        """Rotary cos and signed sin for positions [0, length) (each row as ``RotaryEmbedding`` computes it):
        ``x * cos + x.roll(d/2) * signed_sin`` is ``x * cos + rotate_half(x) * sin``."""
        if self.cos.shape[0] >= length:
            return
        length = max(length, 2 * self.cos.shape[0])
        cos, sin = self.rotary(torch.arange(length)[None], torch.float32)  # [1, 1, length, d]
        half = self.head_dim // 2
        self.cos, sin = cos[0, 0], sin[0, 0]
        self.signed_sin = torch.cat([-sin[:, :half], sin[:, half:]], dim=-1)

    def over(self, cache: KVCache) -> BoundStep:
        """Steps that read and write row 0 of ``cache``."""
        self.tables(cache.max_len)
        return BoundStep(self, cache)


class BoundStep:
    """``OnePosition`` over one cache: ``step(x, pos)``."""

    def __init__(self, stack: OnePosition, cache: KVCache):
        self.stack = stack
        self.keys, self.values = cache.k[:, 0].unbind(0), cache.v[:, 0].unbind(0)  # a [kv, max_len, d] a layer

    def __call__(self, x: torch.Tensor, pos: int, final_norm: bool = True) -> torch.Tensor | None:
        """x [1, H] float32 at position ``pos``: the stack's output there, normed [1, H] (None when not
        ``final_norm``: a position only written into the cache)."""
        s = self.stack
        cos, signed_sin = s.cos[pos], s.signed_sin[pos]
        half, kv, d = s.head_dim // 2, s.kv_heads, s.head_dim
        group = s.heads // kv
        for (in_norm, qkv_w, qk_weight, qk_eps, out_w, post_norm, gate_up_w, down_w), keys, values in zip(
                s.layers, self.keys, self.values, strict=True):
            qkv = qkv_w.row(_rms(x, in_norm.weight, in_norm.eps)).float()
            qk = _rms(qkv[0, : s.q_width + s.kv_width].view(-1, d), qk_weight, qk_eps)  # [heads + kv, d]
            qk = qk * cos + qk.roll(half, -1) * signed_sin
            keys[:, pos] = qk[s.heads:]
            values[:, pos] = qkv[0, s.q_width + s.kv_width :].view(kv, d)
            scores = torch.bmm(qk[: s.heads].view(kv, group, d), keys[:, : pos + 1].transpose(1, 2))
            out = torch.bmm(scores.softmax(dim=-1), values[:, : pos + 1])  # [kv, group, d]
            x = x + out_w.row(out.view(1, s.q_width))
            gate_up = gate_up_w.row(_rms(x, post_norm.weight, post_norm.eps)).float()
            gate, up = gate_up.chunk(2, dim=-1)
            x = x + down_w.row(F.silu(gate) * up)
        return _rms(x, s.norm.weight, s.norm.eps) if final_norm else None

    def rows(self, x: torch.Tensor, pos0: int, every: bool = False) -> torch.Tensor:
        """Rows x [R, H] (or [1, R, H]) at positions pos0 .. pos0 + R - 1, one step after another
        (``NumbaBoundStep.rows``' form): the normed output of the last row [1, H], or with ``every`` of each [R, H]."""
        rows = x.reshape(-1, x.shape[-1])
        n = rows.shape[0]
        outs = [self(rows[r : r + 1], pos0 + r, final_norm=every or r == n - 1) for r in range(n)]
        return torch.cat(outs) if every else outs[-1]


def _rms(x: torch.Tensor, weight: torch.Tensor, eps: float) -> torch.Tensor:
    """``RMSNorm`` of float32 rows, as its module computes it."""
    # sum, then divide: what ``mean`` computes, in fewer operations
    return weight * (x * torch.rsqrt(x.pow(2).sum(-1, keepdim=True).div_(x.shape[-1]) + eps))


def one_position_stacks(talker) -> tuple[OnePosition, OnePosition] | None:
    """The talker's and its code predictor's ``OnePosition`` (made once per talker), or None where either stack
    cannot step through it (``runs_one_position``)."""
    stacks = talker.model, talker.code_predictor.model
    made = getattr(talker, "_one_position", None)
    if made is not None and made[0] is stacks[0].layers[0].self_attn.qkv_weight:
        return made[1]
    steps = tuple(OnePosition(s) for s in stacks) if all(runs_one_position(s) for s in stacks) else None
    talker._one_position = (stacks[0].layers[0].self_attn.qkv_weight, steps)
    return steps
