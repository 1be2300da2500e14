"""Optional ``torch.compile`` of the frame step's pieces for the captured CUDA graph.

Inductor fuses the pointwise work (norms, RoPE, residuals, SiLU, the sampling noise and filters)
into a few Triton kernels, which are then recorded inside the frame's CUDA graph. Compiled: each
talker layer, the whole code-predictor step (one body for all 14 steps: weights are inputs) and
the code-0 sampler. Only the frame step uses them (fixed shapes); prefill stays eager.
``ORATOR_COMPILE=0`` turns it off; a compile failure falls back to the plain functions.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import torch

from engine.generate import predictor_step, sample_code0
from engine.model.layers import DecoderLayer
from engine.model.talker import Talker


@dataclass(frozen=True)
class StepKernels:
    """The functions ``frame_step`` calls; plain by default, compiled inside ``compiled_kernels``."""

    sample_code0: Callable = sample_code0
    predictor_step: Callable = predictor_step


def compile_enabled(device: torch.device) -> bool:
    """On CUDA unless ``ORATOR_COMPILE=0``; Triton needs compute capability 7.0 (Volta) or newer."""
    return (device.type == "cuda" and os.environ.get("ORATOR_COMPILE", "1") not in ("0", "false", "no")
            and torch.cuda.get_device_capability(device) >= (7, 0))


@contextlib.contextmanager
def compiled_kernels(talker: Talker, enabled: bool) -> Iterator[StepKernels]:
    """While open, the talker's decoder layers run compiled, and the yielded kernels are compiled (the
    predictor step is compiled whole, its layers inlined)."""
    layers = [m for m in talker.model.layers if isinstance(m, DecoderLayer)]
    if not enabled:
        yield StepKernels()
        return
    # one compiled body serves every layer of the same shapes (modules are inlined, weights are inputs)
    torch._dynamo.config.cache_size_limit = max(torch._dynamo.config.cache_size_limit, 64)
    options = dict(dynamic=False, fullgraph=True)
    layer_forward = torch.compile(DecoderLayer.forward, **options)
    for layer in layers:
        layer.forward = layer_forward.__get__(layer)
    try:
        yield StepKernels(torch.compile(sample_code0, **options), torch.compile(predictor_step, **options))
    finally:
        for layer in layers:
            del layer.forward  # back to the class's plain forward
