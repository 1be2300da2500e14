"""Weight-only int4 projections for the CPU: the fastest CPU path's decoder layers and code-predictor heads.

The same projections as ``engine.model.int8``, stored at half its bytes: each run of ``GROUP`` weights along a
row is rounded to the nearest of 16 levels between the run's smallest and largest value (a bfloat16 scale and
offset per run), and PyTorch's own CPU kernel (``torch.ops.aten._weight_int4pack_mm_for_cpu``, bfloat16
activations) multiplies by them. A one-row product reads half int8's bytes and runs faster than int8's kernel
on AVX2 and on AVX-512 CPUs alike (docs/benchmarks.md#cpu-gemv), so a frame runs faster and the model holds less
memory. The price is precision: 16 levels perturb a projection's output by several percent (relative RMS),
where int8's 255 stay under 1%; tests/engine/model/test_int4.py bounds both. Chosen with ``cpu_weights="int4"``
(``ORATOR_CPU_WEIGHTS=int4``, Settings → Processor path); int8 stays the default.
"""

from __future__ import annotations

import functools

import torch
import torch.nn.functional as F

from engine.model.int8 import GEMM_ROWS, Int8Weight
from engine.runtime import cpu_bf16_units

GROUP = 64  # weights per scale along a row: 32 is more precise and slower on AVX2 (docs/benchmarks.md#cpu-gemv)
# rows the kernel's packed layout may interleave (32 where PyTorch's CPU kernels are AVX2, 64 where AVX-512);
# ``_block_rows`` finds which, and every quantized weight's rows are a multiple of the largest
_BLOCKS = (32, 64, 16)
_ROWS = max(_BLOCKS)


def int4_available() -> bool:
    """Whether this PyTorch has the CPU int4 kernel (PyTorch 2.5+ builds it)."""
    return hasattr(torch.ops.aten, "_weight_int4pack_mm_for_cpu") and hasattr(
        torch.ops.aten, "_convert_weight_to_int4pack_for_cpu")


def quantize_groups(weight: torch.Tensor, group: int = GROUP) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """``weight`` [N, K] rounded in runs of ``group`` along K: (codes int32 [N, K] in 0..15, scale [N, K/group],
    low [N, K/group], both bfloat16), standing for ``codes * scale + low``. The range is taken after rounding
    its ends to bfloat16, so the stored scale and offset are the ones the codes were chosen against."""
    w = weight.detach().float()
    n, k = w.shape
    runs = w.view(n, k // group, group)
    low = runs.amin(-1).to(torch.bfloat16)
    scale = ((runs.amax(-1) - low.float()) / 15).clamp(min=torch.finfo(torch.bfloat16).tiny).to(torch.bfloat16)
    codes = torch.round((runs - low.float()[..., None]) / scale.float()[..., None]).clamp(0, 15)
    return codes.to(torch.int32).view(n, k), scale, low


class Int4Weight:
    """A projection's weight [N, K] as int4 codes in runs of ``GROUP`` with a bfloat16 scale and offset each;
    ``matmul(x)`` is ``F.linear(x, weight)`` for x [..., K] of any float dtype (bfloat16 activations, the result
    in x's dtype). The interface of ``engine.model.int8.Int8Weight``."""

    __slots__ = ("packed", "scale_zeros", "shape")

    def __init__(self, weight: torch.Tensor):
        codes, scale, low = quantize_groups(weight)
        self._pack(codes, scale, low)

    def _pack(self, codes: torch.Tensor, scale: torch.Tensor, low: torch.Tensor) -> None:
        self.packed = torch.ops.aten._convert_weight_to_int4pack_for_cpu(codes, 1)  # [N, K/2] uint8
        # the kernel takes, per run and row, the scale and the value at code 8: codes * scale + low
        zeros = (low.float() + 8 * scale.float()).to(torch.bfloat16)
        self.scale_zeros = torch.stack([scale, zeros], dim=-1).transpose(0, 1).contiguous()  # [K/group, N, 2]
        self.shape = torch.Size(codes.shape)

    @classmethod
    def stacked(cls, *weights: torch.Tensor) -> Int4Weight:
        """``Int4Weight(torch.cat(weights))`` without the concatenated float copy (runs lie within a row)."""
        parts = [quantize_groups(w) for w in weights]
        out = cls.__new__(cls)
        out._pack(*(torch.cat(p) for p in zip(*parts, strict=True)))
        return out

    def matmul(self, x: torch.Tensor) -> torch.Tensor:
        flat = x.reshape(-1, x.shape[-1]).to(torch.bfloat16)  # [M, K]
        if flat.shape[0] >= GEMM_ROWS and cpu_bf16_units() and _block_rows():  # a prefill: a bf16 matrix product
            y = F.linear(flat, self.widened())
        else:
            y = torch.ops.aten._weight_int4pack_mm_for_cpu(flat, self.packed, GROUP, self.scale_zeros)
        return y.view(*x.shape[:-1], self.shape[0]).to(x.dtype)

    def row(self, x: torch.Tensor) -> torch.Tensor:
        """``x @ weight.T`` for one float32 row x [1, K]: [1, N] bfloat16 (as ``Int8Weight.row``)."""
        return torch.ops.aten._weight_int4pack_mm_for_cpu(x.to(torch.bfloat16), self.packed, GROUP, self.scale_zeros)

    def widened(self) -> torch.Tensor:
        """The bfloat16 weight these codes stand for [N, K] (rounded to bfloat16 as the kernel rounds them)."""
        n, k = self.shape
        scale, zeros = self.scale_zeros.float().transpose(0, 1).unbind(-1)  # [N, K/group] each
        block = _block_rows()
        if block is None:  # a layout this code cannot read: the kernel multiplies the identity
            eye = torch.eye(k, dtype=torch.bfloat16)
            return torch.ops.aten._weight_int4pack_mm_for_cpu(eye, self.packed, GROUP, self.scale_zeros).T.contiguous()
        runs = _unpack(self.packed, n, k, block).float().view(n, k // GROUP, GROUP)
        return ((runs - 8) * scale[..., None] + zeros[..., None]).view(n, k).to(torch.bfloat16)

    def dequantized(self) -> torch.Tensor:
        """The float32 weight these codes stand for [N, K] (tests compare against it)."""
        return self.widened().float()


def int4_or_int8(*pieces: torch.Tensor) -> Int4Weight | Int8Weight:
    """``Int4Weight.stacked(*pieces)`` where the kernel takes the shape (rows in blocks of 64, columns in runs of
    ``GROUP``), else ``Int8Weight.stacked``: the ``quantize`` of ``engine.model.int8.quantize_layers`` for int4."""
    rows, cols = sum(p.shape[0] for p in pieces), pieces[0].shape[1]
    if rows % _ROWS or cols % GROUP:
        return Int8Weight.stacked(*pieces)
    return Int4Weight.stacked(*pieces)


def _unpack(packed: torch.Tensor, n: int, k: int, block: int) -> torch.Tensor:
    """The codes [N, K] of ``_convert_weight_to_int4pack_for_cpu``'s layout: rows in blocks of ``block``, each
    block [K, block / 2] bytes whose low nibbles are its first half of rows and high nibbles its second. The layout
    is the kernel's own, and its block depends on the CPU: ``_block_rows`` finds it by packing a probe."""
    blocks = packed.reshape(n // block, k, block // 2)
    both = torch.cat([blocks & 15, blocks >> 4], dim=-1)  # [N/block, K, block]
    return both.permute(0, 2, 1).reshape(n, k)


@functools.cache
def _block_rows() -> int | None:
    """The block of rows this PyTorch's packing interleaves on this CPU (``_unpack``), or None if its layout is
    none of those: checked once, on a small random weight."""
    try:
        codes = torch.randint(0, 16, (2 * _ROWS, 2 * GROUP), dtype=torch.int32,
                              generator=torch.Generator().manual_seed(0))
        packed = torch.ops.aten._convert_weight_to_int4pack_for_cpu(codes, 1)
        for block in _BLOCKS:
            if packed.numel() * 2 == codes.numel() and torch.equal(_unpack(packed, *codes.shape, block).int(), codes):
                return block
    except (RuntimeError, AttributeError):
        pass
    return None
