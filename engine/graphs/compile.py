"""Optional ``torch.compile`` of the decoder layers for the captured frame step.

Inductor fuses each layer's pointwise work (norms, RoPE, residuals, SiLU) into a few Triton
kernels; the compiled kernels are then recorded inside the frame's CUDA graph. Only the frame
step uses them (fixed shapes: batch x 1 or 2 positions, whole-cache attention); prefill stays
eager. ``ORATOR_COMPILE=0`` turns it off; any compile failure falls back to the plain layers.
"""

from __future__ import annotations

import contextlib
import logging
import os
from collections.abc import Iterator

import torch
from torch import nn

from engine.model.layers import DecoderLayer

log = logging.getLogger(__name__)


def compile_enabled(device: torch.device) -> bool:
    return device.type == "cuda" and os.environ.get("ORATOR_COMPILE", "1") not in ("0", "false", "no")


@contextlib.contextmanager
def compiled_layers(module: nn.Module, enabled: bool) -> Iterator[bool]:
    """While open, every ``DecoderLayer`` under ``module`` runs a compiled forward; yields whether it does."""
    layers = [m for m in module.modules() if isinstance(m, DecoderLayer)]
    if not enabled or not layers:
        yield False
        return
    # one compiled body serves every layer of the same shapes (modules are inlined, weights are inputs)
    torch._dynamo.config.cache_size_limit = max(torch._dynamo.config.cache_size_limit, 64)
    compiled = torch.compile(DecoderLayer.forward, dynamic=False, fullgraph=True)
    for layer in layers:
        layer.forward = compiled.__get__(layer)
    try:
        yield True
    finally:
        for layer in layers:
            del layer.forward  # back to the class's plain forward
