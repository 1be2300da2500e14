"""Weight-only int8 projections for the CPU: the fast CPU path's decoder layers and code-predictor heads.

On a CPU a frame is bound by reading weights: one talker step and fifteen code-predictor steps read every
projection of 33 decoder layers' worth of weights, and a head, one row of activations each. Stored as int8 with
one float scale per output row, those weights are a quarter of their float32 bytes, and PyTorch's own CPU kernel
(``torch.ops.aten._weight_int8pack_mm``, bfloat16 activations, float32 accumulation) multiplies one row by them
directly; in PyTorch's passes a prompt's many rows go through int8 matrix products of their 15-bit integer
activations (``integer_rows``); where Numba's steps run, one stream's prompt goes through their kernel instead
(``engine.core.cpu.numba_layer``). The embedding tables stay in the checkpoint's bfloat16 (rows widened as read);
everything else (norms, attention, the talker's head, sampling) is float32, and the codec decoder is
``engine.core.runtime``'s choice.

Rounding each weight to the nearest of 255 levels of its row's range perturbs a projection's output by at most
half a level a weight; tests/engine/model/test_int8.py derives what that makes of a product and bounds the error a
frame accumulates. The exact float32 plan is the other precision (``Engine.from_pretrained(precision="exact")``).
"""

from __future__ import annotations

import functools
from collections.abc import Callable

import torch
import torch.nn.functional as F
from torch import nn

from engine.core.runtime import cpu_bf16_units, cpu_dot_product_units

LEVELS = 127  # symmetric int8: -127..127, so that the scale maps the row's largest magnitude exactly
# A product's activations, where the integer forms take them, as integers within +-ACTIVATION_MAX of one scale a row
# (15 bits: the form the processors' 16-bit multiply-adds and the 8-bit dot products of its two bytes take), or
# zeros where the row's largest magnitude is under TINY (its scale would underflow).
# (the Numba steps read both: Numba's cache folder is keyed on this file too, ``engine.core.cpu.numba_cache``)
ACTIVATION_MAX = 16383
TINY = 1e-30
# From this many rows (a prompt's prefill) a product is a matrix product (``prefill_form``), whose time grows far
# less with the rows than the one-row kernel's (docs/benchmarks.md#cpu-prefill).
GEMM_ROWS = 16


class Int8Weight:
    """A projection's weight [N, K] as int8 rows and a scale per row; ``matmul(x)`` is ``F.linear(x, weight)``
    for x [..., K] of any float dtype (fewer than ``GEMM_ROWS`` rows on bfloat16 activations, more in
    ``prefill_form``'s form; the result has x's dtype)."""

    __slots__ = ("q", "scale", "shape")

    def __init__(self, weight: torch.Tensor):
        w = weight.detach().float()
        scale = w.abs().amax(dim=1).clamp(min=torch.finfo(torch.float32).tiny) / LEVELS  # [N]
        self.q = torch.round(w / scale[:, None]).clamp(-LEVELS, LEVELS).to(torch.int8).contiguous()  # [N, K]
        self.scale = scale.to(torch.bfloat16)
        self.shape = weight.shape

    @classmethod
    def stacked(cls, *weights: torch.Tensor) -> Int8Weight:
        """``Int8Weight(torch.cat(weights))`` without the concatenated copy: each row has its own scale, so the
        pieces quantize apart (q, k and v; gate and up; each read once from the checkpoint)."""
        if len(weights) == 1:
            return cls(weights[0])
        parts = [cls(w) for w in weights]
        out = cls.__new__(cls)
        out.q = torch.cat([p.q for p in parts])
        out.scale = torch.cat([p.scale for p in parts])
        out.shape = out.q.shape
        return out

    @classmethod
    def placeholder(cls, shape: tuple[int, int]) -> Int8Weight:
        """A weight of ``shape`` [N, K] whose values are all one level, for timing the product without a model
        (``engine.core.cpu.speed_probe``)."""
        w = cls.__new__(cls)
        w.q = torch.ones(shape, dtype=torch.int8)
        w.scale = torch.full((shape[0],), 1e-3, dtype=torch.bfloat16)
        w.shape = torch.Size(shape)
        return w

    def matmul(self, x: torch.Tensor) -> torch.Tensor:
        flat = x.reshape(-1, x.shape[-1])  # [M, K]
        form = prefill_form() if flat.shape[0] >= GEMM_ROWS else "kernel"
        if form == "integer":
            y = integer_rows(flat.float(), self.q, self.scale)
        elif form == "bf16":
            y = F.linear(flat.to(torch.bfloat16), self.q.to(torch.bfloat16)) * self.scale  # int8 is exact in bf16
        else:
            y = torch.ops.aten._weight_int8pack_mm(flat.to(torch.bfloat16), self.q, self.scale)  # [M, N] bfloat16
        return y.view(*x.shape[:-1], self.shape[0]).to(x.dtype)

    def row(self, x: torch.Tensor) -> torch.Tensor:
        """``x @ weight.T`` for one float32 row x [1, K]: [1, N] bfloat16, the kernel's own output (a float32 sum with
        it widens it exactly): ``matmul`` without its reshapes and casts, for the one-position steps."""
        return torch.ops.aten._weight_int8pack_mm(x.to(torch.bfloat16), self.q, self.scale)

    def dequantized(self) -> torch.Tensor:
        """The float32 weight these int8 values stand for [N, K] (tests compare against it)."""
        return self.q.float() * self.scale.float()[:, None]


PREFILL_FORMS = ("integer", "bf16", "kernel")


def prefill_forms() -> list[str]:
    """The forms a product of ``GEMM_ROWS`` rows or more can take here, the engine's first: ``integer``
    (``integer_rows``) wherever PyTorch has the exact int8 matrix product, ``bf16`` (a bfloat16 matrix product of the
    int8 values widened) where the processor multiplies bfloat16, and ``kernel`` (the one-row kernel's, row after
    row) always."""
    return [f for f in PREFILL_FORMS if (f != "integer" or int_products()) and (f != "bf16" or cpu_bf16_units())]


@functools.cache
def prefill_form() -> str:
    """The form the engine's products of ``GEMM_ROWS`` rows or more take: the first of ``prefill_forms``.
    Integers wherever they run, though bfloat16 ran a long prompt of the 0.6B faster on a Xeon with AMX
    (docs/benchmarks.md#cpu-prefill): one rule gives one machine the same audio from run to run whatever its load,
    the integers follow the Numba steps' rounding rule, and they ran short prompts and the 1.7B's faster (the same
    row)."""
    return prefill_forms()[0]


@functools.cache
def int_products() -> bool:
    """Whether this PyTorch multiplies int8 matrices on the CPU into int32 (``torch._int_mm``) through oneDNN, on a
    processor with 8-bit dot products (VNNI, AMX), and exactly for ``integer_rows``' values. Without those units
    oneDNN either multiply-adds byte pairs into 16-bit sums, which saturate for these values, or runs a plain loop,
    slower than any other form (docs/benchmarks.md#cpu-prefill); so does PyTorch without oneDNN."""
    if not (torch.backends.mkldnn.is_available() and torch.backends.mkldnn.enabled and cpu_dot_product_units()):
        return False
    try:
        g = torch.Generator().manual_seed(0)
        a = torch.randint(-128, 128, (2 * GEMM_ROWS, 256), generator=g, dtype=torch.int8)
        a[:4] = torch.tensor([[127], [-128], [64], [-64]], dtype=torch.int8)  # the halves' extremes, whole rows
        w = torch.randint(0, 2, (48, 256), generator=g, dtype=torch.int8) * 254 - 127  # +-127
        w[:2] = torch.tensor([[127], [-127]], dtype=torch.int8)
        return torch.equal(torch._int_mm(a, w.t()).long(), a.long() @ w.long().t())
    except (AttributeError, RuntimeError, NotImplementedError):
        return False


def integer_rows(x: torch.Tensor, q: torch.Tensor, scale: torch.Tensor) -> torch.Tensor:
    """x [M, K] float32 times int8 weights q [N, K] with row scales [N] -> [M, N] float32, in integers: each row of x
    rounded to integers within +-ACTIVATION_MAX of one scale (the Numba steps' rule,
    ``engine.core.cpu.one_position_numba``, whose fast-math code rounds about 2 values in 10,000 to the neighbouring
    integer instead), split into a high part within +-64 and a low byte, both as rows of one int8 matrix product
    summed exactly in int32, joined and scaled in float32. No float copy of the weights is made,
    and a prompt's rows are rounded as each later position's are. A row holding a NaN or an infinity gives NaNs; a
    row all under TINY gives zeros. In PyTorch's operations: the prompts of the plan without Numba's steps, of the
    cold-start bridge and of batches (where Numba's steps run, one stream's prompt goes through their kernel,
    ``NumbaBoundStep.rows``)."""
    m = x.shape[0]
    top = x.abs().amax(dim=1, keepdim=True)  # [M, 1]; NaN where the row has one
    finite = torch.isfinite(top)
    sx = torch.where(top < TINY, 1.0, top / ACTIVATION_MAX)
    xi = torch.where(finite, x / sx, 0.0).round_().clamp_(-ACTIVATION_MAX, ACTIVATION_MAX).to(torch.int16)
    hi = (xi + 128) >> 8  # xi = 256 hi + lo with lo in [-128, 127]
    parts = torch.cat([hi, xi - (hi << 8)]).to(torch.int8)  # [2M, K]
    sums = torch._int_mm(parts, q.t())  # [2M, N]; q.t() is a view, the product's fast layout
    y = sums[:m].float().mul_(256.0).add_(sums[m:])
    return y.mul_(torch.where(finite, sx, torch.nan)).mul_(scale.float())


def quantize_layers(module: nn.Module, quantize: Callable[..., Int8Weight] = Int8Weight.stacked) -> int:
    """Give every decoder layer under ``module`` its fused projections as ``quantize(*pieces)`` (an ``Int8Weight``
    of the pieces' rows stacked: q, k, v; o; gate, up; down) and the code predictor its 15 heads as
    ``quantize(weight)``, and drop the float weights; returns how many were made. Quantized before
    ``fuse_projections``, no float copy of a fused matrix is ever made. The heads are one-row products like the
    layers', one a predictor pass (docs/benchmarks.md#cpu-frame)."""
    from engine.core.model.layers import MLP, Attention
    from engine.core.model.predictor import CodePredictor

    made = 0
    for m in module.modules():
        if isinstance(m, Attention):
            m.qkv_weight = quantize(m.q_proj.weight, m.k_proj.weight, m.v_proj.weight)
            m.out_weight = quantize(m.o_proj.weight)
            _drop(m.q_proj, m.k_proj, m.v_proj, m.o_proj)
            made += 2
        elif isinstance(m, MLP):
            m.gate_up_weight = quantize(m.gate_proj.weight, m.up_proj.weight)
            m.down_weight = quantize(m.down_proj.weight)
            _drop(m.gate_proj, m.up_proj, m.down_proj)
            made += 2
        elif isinstance(m, CodePredictor):
            m.head_weights = [quantize(head.weight) for head in m.lm_head]
            _drop(*m.lm_head)
            made += len(m.lm_head)
    return made


def narrow_tables(talker: nn.Module) -> dict[nn.Embedding, torch.Tensor]:
    """The code predictor's 15 codebook tables that the checkpoint stores in bfloat16, as they are now: kept in that
    precision by ``keep_narrow`` (they are read a row at a time; widening a row as it is read gives the same
    values a widened table would). Copies: a loaded tensor may be a view of the checkpoint's memory map, which
    would keep every page of the file read so far resident."""
    return {emb: emb.weight.detach().clone() for emb in talker.code_predictor.model.codec_embedding
            if emb.weight.dtype == torch.bfloat16}


def keep_narrow(tables: dict[nn.Embedding, torch.Tensor]) -> None:
    """Put back the bfloat16 tables ``narrow_tables`` kept (after the model was cast to float32)."""
    for emb, weight in tables.items():
        emb.weight = nn.Parameter(weight, requires_grad=False)


def narrow_text_embedding(talker: nn.Module, table: torch.Tensor) -> None:
    """Make ``table`` the talker's text embedding table (a third of the 0.6B model's weights, read a few rows a
    prompt) in bfloat16, the precision official checkpoints store it in, so its values are unchanged; rows are
    widened to float32 as they are read (``Talker.embed_text``). ``table``: the one loaded, or the same table as a
    memory map of the checkpoint (``engine.core.checkpoint.mapped_bf16_tensors``), so that only the rows read stay
    resident."""
    talker.model.text_embedding.weight = nn.Parameter(table.to(torch.bfloat16), requires_grad=False)


def _drop(*linears: nn.Linear) -> None:
    """Free float weights that an ``Int8Weight`` replaced (the layer reads only the int8 copy from now on)."""
    for lin in linears:
        lin.weight = None
