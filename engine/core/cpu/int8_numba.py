"""The CPU int8 plan's model: its decoder layers and heads quantized (``engine.core.cpu.int8.quantize_layers``) with
the Numba passes of a prompt installed where they run: each decoder stack's ``prompt_pass``
(``engine.core.cpu.prompt_numba``) and each weight's integer products (``Int8Weight.rows``:
``engine.core.cpu.prompt_rows_numba``'s loops).

The model's modules and ``int8`` do not import those passes, which import them: the plan installs them here, once
its weights are quantized, and each checks at every call whether it runs (the ``cpu_numba`` option, the cold-start
bridge, the compile), keeping PyTorch's operations, with the same values, where it does not.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import nn

from engine.core.cpu import int8, prompt_numba, prompt_rows_numba
from engine.core.cpu.int8 import Int8Weight
from engine.core.model.layers import DecoderStack


def quantize_layers(module: nn.Module, quantize: Callable[..., Int8Weight] = Int8Weight.stacked) -> int:
    """``int8.quantize_layers(module, quantize)`` with the Numba passes installed on every weight it makes and on
    every decoder stack under ``module``; returns how many weights were made."""
    made = int8.quantize_layers(module, lambda *pieces: with_loops(quantize(*pieces)))
    for m in module.modules():
        if isinstance(m, DecoderStack):
            m.prompt_pass = prompt_pass
    return made


def with_loops(weight: Int8Weight) -> Int8Weight:
    """``weight`` with its integer products through ``prompt_rows_numba``'s loops where they run."""
    weight.rows = integer_rows
    return weight


def integer_rows(x: torch.Tensor, q: torch.Tensor, scale: torch.Tensor) -> torch.Tensor:
    """``int8.integer_rows`` through ``prompt_rows_numba``'s loops where they run (the same values), else PyTorch's."""
    if prompt_rows_numba.runs_here():
        return prompt_rows_numba.integer_rows(x, q, scale)
    return int8.integer_rows(x, q, scale)


def prompt_pass(stack: DecoderStack, x: torch.Tensor, positions: torch.Tensor, cache,
                kv_len: int) -> torch.Tensor | None:
    """``prompt_numba``'s pass of a prompt through ``stack`` where it takes it, else None (the stack's own pass)."""
    if prompt_numba.takes(stack, x, positions, cache, kv_len):
        return prompt_numba.forward(stack, x, positions, cache, kv_len)
    return None
