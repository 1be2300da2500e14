"""Weight-only int8 projections for the CPU: the fast CPU path's decoder layers.

On a CPU a frame is bound by reading weights: one talker step and fifteen code-predictor steps read every
projection of 33 decoder layers' worth of weights, one row of activations each. Stored as int8 with one float
scale per output row, those weights are a quarter of their float32 bytes, and PyTorch's own CPU kernel
(``torch.ops.aten._weight_int8pack_mm``, bfloat16 activations, float32 accumulation) multiplies by them
directly. Everything else (norms, attention, embeddings, heads, sampling, the codec decoder) stays in float32.

Rounding each weight to the nearest of 255 levels of its row's range perturbs a projection's output by well
under 1% (relative RMS); tests/engine/model/test_int8.py bounds the error a frame accumulates. The exact
float32 path stays one switch away (``Engine.from_pretrained(cpu_int8=False)``, ``ORATOR_CPU_INT8=0``).
"""

from __future__ import annotations

import torch
from torch import nn

LEVELS = 127  # symmetric int8: -127..127, so that the scale maps the row's largest magnitude exactly


class Int8Weight:
    """A projection's weight [N, K] as int8 rows and a scale per row; ``matmul(x)`` is ``F.linear(x, weight)``
    for x [..., K] of any float dtype (the product runs on bfloat16 activations, the result has x's dtype)."""

    __slots__ = ("q", "scale", "shape")

    def __init__(self, weight: torch.Tensor):
        w = weight.detach().float()
        scale = w.abs().amax(dim=1).clamp(min=torch.finfo(torch.float32).tiny) / LEVELS  # [N]
        self.q = torch.round(w / scale[:, None]).clamp(-LEVELS, LEVELS).to(torch.int8).contiguous()  # [N, K]
        self.scale = scale.to(torch.bfloat16)
        self.shape = weight.shape

    @classmethod
    def placeholder(cls, shape: tuple[int, int]) -> Int8Weight:
        """A weight of ``shape`` [N, K] whose values are all one level, for timing the product without a model
        (``engine.cpu_probe``)."""
        w = cls.__new__(cls)
        w.q = torch.ones(shape, dtype=torch.int8)
        w.scale = torch.full((shape[0],), 1e-3, dtype=torch.bfloat16)
        w.shape = torch.Size(shape)
        return w

    def matmul(self, x: torch.Tensor) -> torch.Tensor:
        flat = x.reshape(-1, x.shape[-1]).to(torch.bfloat16)  # [M, K]
        y = torch.ops.aten._weight_int8pack_mm(flat, self.q, self.scale)  # [M, N] bfloat16
        return y.view(*x.shape[:-1], self.shape[0]).to(x.dtype)

    def dequantized(self) -> torch.Tensor:
        """The float32 weight these int8 values stand for [N, K] (tests compare against it)."""
        return self.q.float() * self.scale.float()[:, None]


def quantize_layers(module: nn.Module) -> int:
    """Replace the projections of every fused decoder layer under ``module`` (``fuse_projections`` first) by
    ``Int8Weight``s and drop their float weights; returns how many were replaced."""
    from engine.model.layers import MLP, Attention

    replaced = 0
    for m in module.modules():
        if isinstance(m, Attention):
            m.qkv_weight, m.out_weight = Int8Weight(m.qkv_weight), Int8Weight(m.out_weight)
            _drop(m.q_proj, m.k_proj, m.v_proj, m.o_proj)
            replaced += 2
        elif isinstance(m, MLP):
            m.gate_up_weight, m.down_weight = Int8Weight(m.gate_up_weight), Int8Weight(m.down_weight)
            _drop(m.gate_proj, m.up_proj, m.down_proj)
            replaced += 2
    return replaced


def narrow_text_embedding(talker: nn.Module, mapped: torch.Tensor | None = None) -> None:
    """Keep the talker's text embedding table (a third of the 0.6B model's weights, read a few rows a prompt) in
    bfloat16, the precision official checkpoints store it in, so its values are unchanged; rows are widened
    to float32 as they are read (``Talker.embed_text``). ``mapped``: the same table as a memory map of the
    checkpoint (``engine.checkpoint.mapped_bf16_tensor``), used instead of a copy so that only the rows read
    stay resident."""
    table = talker.model.text_embedding
    weight = mapped if mapped is not None else table.weight.detach().to(torch.bfloat16)
    table.weight = nn.Parameter(weight, requires_grad=False)


def _drop(*linears: nn.Linear) -> None:
    """Free float weights that an ``Int8Weight`` replaced (the layer reads only the int8 copy from now on)."""
    for lin in linears:
        lin.weight = None
