"""Weight-only int4 projections for the CPU: the small CPU path's decoder layers and code-predictor heads.

The same projections as ``engine.model.int8``, stored in a little over half its bytes: each run of ``GROUP``
weights along a row is rounded to the nearest of 16 levels between the run's smallest and largest value (a
bfloat16 scale and offset per run), and PyTorch's own CPU kernel (``torch.ops.aten._weight_int4pack_mm_for_cpu``,
bfloat16 activations) multiplies by them. The 0.6B model then holds 0.2-0.3 GB less, and on an AVX2 processor
(most desktops: Intel's Core chips, AMD's before Zen 4) its frames run about a quarter faster than int8's; on
an AVX-512 server Xeon int8's kernel is as fast or faster (docs/benchmarks.md#cpu-int4). The price is precision:
16 levels perturb a projection's output by several percent (relative RMS), where int8's 255 stay under 1%;
tests/engine/model/test_int4.py bounds both. Chosen with ``Engine.from_pretrained(cpu_int4=True)``
(``ORATOR_CPU_INT4=1``, Settings → Processor path → Small); int8 stays the default.
"""

from __future__ import annotations

import torch

from engine.model.int8 import Int8Weight

GROUP = 64  # weights per scale along a row: 32 is more precise and slower on AVX2 (docs/benchmarks.md#cpu-gemv)
# the kernel packs rows in blocks of 32 (AVX2 builds) or 64 (AVX-512 builds): rows come in multiples of 64
_ROWS = 64


def int4_available() -> bool:
    """Whether this PyTorch has the CPU int4 kernel (PyTorch 2.5+ builds it)."""
    return all(hasattr(torch.ops.aten, op) for op in ("_weight_int4pack_mm_for_cpu",
                                                       "_convert_weight_to_int4pack_for_cpu"))


def quantize_groups(weight: torch.Tensor, group: int = GROUP) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """``weight`` [N, K] rounded in runs of ``group`` along K: (codes int32 [N, K] in 0..15, scale [N, K/group],
    zero [N, K/group], both bfloat16), standing for ``(codes - 8) * scale + zero``, the kernel's form. The scale
    spans the run's range in 15 steps; zero, the value at code 8, is rounded to bfloat16 before the codes are
    chosen against it, so the codes are the nearest levels to the weights as the kernel reads them."""
    w = weight.detach().float()
    n, k = w.shape
    runs = w.view(n, k // group, group)
    low = runs.amin(-1)
    scale = ((runs.amax(-1) - low) / 15).clamp(min=torch.finfo(torch.bfloat16).tiny).to(torch.bfloat16)
    zero = (low + 8 * scale.float()).to(torch.bfloat16)
    codes = torch.round((runs - zero.float()[..., None]) / scale.float()[..., None]) + 8
    return codes.clamp(0, 15).to(torch.int32).view(n, k), scale, zero


class Int4Weight:
    """A projection's weight [N, K] as int4 codes in runs of ``GROUP`` with a bfloat16 scale and offset each;
    ``matmul(x)`` is ``F.linear(x, weight)`` for x [..., K] of any float dtype (bfloat16 activations, the result
    in x's dtype). The interface of ``engine.model.int8.Int8Weight``."""

    __slots__ = ("packed", "scale_zeros", "shape")

    def __init__(self, weight: torch.Tensor):
        self._pack(*quantize_groups(weight))

    def _pack(self, codes: torch.Tensor, scale: torch.Tensor, zero: torch.Tensor) -> None:
        self.packed = torch.ops.aten._convert_weight_to_int4pack_for_cpu(codes, 1)  # [N, K/2] uint8
        # per run and row, the scale and the value at code 8
        self.scale_zeros = torch.stack([scale, zero], dim=-1).transpose(0, 1).contiguous()  # [K/group, N, 2]
        self.shape = torch.Size(codes.shape)

    @classmethod
    def stacked(cls, *weights: torch.Tensor) -> Int4Weight:
        """``Int4Weight(torch.cat(weights))`` without the concatenated float copy (runs lie within a row)."""
        parts = [quantize_groups(w) for w in weights]
        out = cls.__new__(cls)
        out._pack(*(torch.cat(p) for p in zip(*parts, strict=True)))
        return out

    def matmul(self, x: torch.Tensor) -> torch.Tensor:
        # every row count through the kernel: widening the codes for a bfloat16 matrix product for a prefill made the
        # Xeon's first audio three times later (docs/benchmarks.md#cpu-int4)
        flat = x.reshape(-1, x.shape[-1]).to(torch.bfloat16)  # [M, K]
        y = torch.ops.aten._weight_int4pack_mm_for_cpu(flat, self.packed, GROUP, self.scale_zeros)
        return y.view(*x.shape[:-1], self.shape[0]).to(x.dtype)

    def row(self, x: torch.Tensor) -> torch.Tensor:
        """``x @ weight.T`` for one float32 row x [1, K]: [1, N] bfloat16 (as ``Int8Weight.row``)."""
        return torch.ops.aten._weight_int4pack_mm_for_cpu(x.to(torch.bfloat16), self.packed, GROUP, self.scale_zeros)

    def dequantized(self) -> torch.Tensor:
        """The weight these codes stand for [N, K], as the kernel reads it (rounded to bfloat16), in float32: the
        kernel's product with the identity (tests compare against it)."""
        eye = torch.eye(self.shape[1], dtype=torch.bfloat16)
        return torch.ops.aten._weight_int4pack_mm_for_cpu(eye, self.packed, GROUP, self.scale_zeros).T.float()


def int4_or_int8(*pieces: torch.Tensor) -> Int4Weight | Int8Weight:
    """``Int4Weight.stacked(*pieces)`` where the kernel takes the shape (rows in multiples of 64, columns in runs of
    ``GROUP``), else ``Int8Weight.stacked``: the ``quantize`` of ``engine.model.int8.quantize_layers`` for int4."""
    rows, cols = sum(p.shape[0] for p in pieces), pieces[0].shape[1]
    if rows % _ROWS or cols % GROUP:
        return Int8Weight.stacked(*pieces)
    return Int4Weight.stacked(*pieces)
