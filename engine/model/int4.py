"""Weight-only int4 projections for the CPU: the small CPU path's decoder layers and code-predictor heads.

The same projections as ``engine.model.int8``, in about 60% of its bytes: each run of ``GROUP`` weights along
a row is rounded to the nearest of 16 levels between the run's smallest and largest value (a scale and offset per
run, rounded to bfloat16), two codes a byte (``engine.model.int4_numba`` holds the layout and its loops). The Numba
steps (``engine.model.one_position_numba``) multiply one row by the codes directly, a prompt's many rows go through
the widened weights in a matrix product. It does more arithmetic a byte than int8: faster only where reading bounds
the processor (docs/benchmarks.md#cpu-int4). The price is precision: 16 levels perturb a
projection's output by several percent (relative RMS), where int8's 255 stay under 1%; tests/engine/model/test_int4.py
bounds both.
Chosen with ``Engine.from_pretrained(cpu_int4=True)`` (``ORATOR_CPU_INT4=1``, Settings → Processor path → Small);
int8 stays the default.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from engine.model.int4_numba import GROUP, HALF
from engine.model.int8 import GEMM_ROWS, Int8Weight, quantize_layers
from engine.runtime import cpu_bf16_units


def quantize_groups(weight: torch.Tensor, group: int = GROUP) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """``weight`` [N, K] rounded in runs of ``group`` along K: (codes int32 [N, K] in 0..15, scale [N, K/group],
    zero [N, K/group], both bfloat16), standing for ``(codes - 8) * scale + zero``. The scale spans the run's range
    in 15 steps; zero, the value at code 8, is rounded to bfloat16 before the codes are chosen against it, so the
    codes are the nearest levels to the weights as they are read."""
    w = weight.detach().float()
    n, k = w.shape
    runs = w.view(n, k // group, group)
    low = runs.amin(-1)
    scale = ((runs.amax(-1) - low) / 15).clamp(min=torch.finfo(torch.bfloat16).tiny).to(torch.bfloat16)
    zero = (low + 8 * scale.float()).to(torch.bfloat16)
    codes = torch.round((runs - zero.float()[..., None]) / scale.float()[..., None]) + 8
    return codes.clamp(0, 15).to(torch.int32).view(n, k), scale, zero


class Int4Weight:
    """A projection's weight [N, K] as int4 codes in runs of ``GROUP``: ``q`` uint8 [N, K/2] (the layout of
    ``engine.model.int4_numba``) and ``scale`` float32 [N, K/GROUP, 2], each run's scale and zero. ``matmul(x)`` is
    ``F.linear(x, weight)`` for x [..., K] of any float dtype (the result in x's dtype). The interface of
    ``engine.model.int8.Int8Weight``."""

    __slots__ = ("q", "scale", "shape")

    def __init__(self, weight: torch.Tensor):
        self._set(*quantize_groups(weight))

    def _set(self, codes: torch.Tensor, scale: torch.Tensor, zero: torch.Tensor) -> None:
        n, k = codes.shape
        halves = codes.to(torch.uint8).view(n, k // GROUP, 2, HALF)
        self.q = (halves[:, :, 0] | (halves[:, :, 1] << 4)).reshape(n, k // 2).contiguous()
        self.scale = torch.stack([scale.float(), zero.float()], dim=-1).contiguous()
        self.shape = torch.Size((n, k))

    @classmethod
    def stacked(cls, *weights: torch.Tensor) -> Int4Weight:
        """``Int4Weight(torch.cat(weights))`` without the concatenated float copy (runs lie within a row)."""
        parts = [quantize_groups(w) for w in weights]
        out = cls.__new__(cls)
        out._set(*(torch.cat(p) for p in zip(*parts, strict=True)))
        return out

    def matmul(self, x: torch.Tensor) -> torch.Tensor:
        flat = x.reshape(-1, x.shape[-1])  # [M, K]
        if flat.shape[0] < GEMM_ROWS:
            rows = [self.row(r[None]) for r in flat.float()]
            y = torch.cat(rows) if rows else flat.new_empty(0, self.shape[0])
        else:  # a prompt: the widened weights' matrix product, in bfloat16 where the processor multiplies it
            w = self.dequantized()
            y = F.linear(flat.bfloat16(), w.bfloat16()) if cpu_bf16_units() else F.linear(flat.float(), w)
        return y.reshape(*x.shape[:-1], self.shape[0]).to(x.dtype)

    def row(self, x: torch.Tensor) -> torch.Tensor:
        """``x @ weight.T`` for one float32 row x [1, K]: [1, N] float32, through the Numba product (as the Numba
        steps compute it), or the widened weights where Numba is not usable."""
        jit = _numba_loops()
        return F.linear(x.float(), self.dequantized()) if jit is None else jit.product_row(self, x)

    def dequantized(self) -> torch.Tensor:
        """The weight these codes stand for [N, K], float32: ``(code - 8) * scale + zero``."""
        jit = _numba_loops()
        if jit is not None:
            return jit.widened(self)
        n, k = self.shape
        q = self.q.view(n, k // GROUP, HALF)
        codes = torch.cat([q & 15, q >> 4], dim=-1).float()  # [N, runs, GROUP]
        return ((codes - 8) * self.scale[..., :1] + self.scale[..., 1:]).view(n, k)


def _numba_loops():
    """``engine.model.one_position_numba`` where its Numba loops run here (loaded, none failed to compile), else
    None (the PyTorch forms then run)."""
    from engine.model import one_position_numba as jit

    return jit if jit.numba is not None and not jit._failed else None


def int4_available() -> bool:
    """Whether the int4 path runs here: its products are Numba's loops, so Numba must load and the ``cpu_numba``
    option be on (without them every product would widen its whole weight first)."""
    from engine import options

    return _numba_loops() is not None and options.current().cpu_numba


def quantize_int4(talker: nn.Module) -> None:
    """``engine.model.int8.quantize_layers`` for int4: the talker's decoder stack, and its code predictor's with the
    heads, each int4 where every projection's columns come in runs of ``GROUP`` (the real models'), else int8. A
    stack is of one kind: the Numba steps take int8 or int4 stacks, not a mix."""
    from engine.model.layers import MLP, Attention

    for part in (talker.model, talker.code_predictor):
        linears = [lin for m in part.modules() if isinstance(m, Attention | MLP) for lin in m.children()
                   if isinstance(lin, nn.Linear)] + list(getattr(part, "lm_head", []))
        runs = all(lin.in_features % GROUP == 0 for lin in linears)
        quantize_layers(part, Int4Weight.stacked if runs else Int8Weight.stacked)
