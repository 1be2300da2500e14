"""Optional ``torch.compile`` of the frame step's pieces for the captured CUDA graph.

Inductor fuses the pointwise work (norms, RoPE, residuals, SiLU, the sampling noise and filters)
into a few Triton kernels, which are then recorded inside the frame's CUDA graph. Compiled: each
talker layer, the whole code-predictor step (one body for all 14 steps: weights are inputs), the
frame's head (code 0, EOS, the predictor's first pass) and the next talker input. Only the frame
step uses them (fixed shapes); prefill stays eager.
``ORATOR_COMPILE=0`` turns it off; a compile failure falls back to the plain functions.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator

import torch

from engine.generate import predictor_step
from engine.graphs.step import StepKernels, frame_head, next_input
from engine.model.layers import DecoderLayer
from engine.model.talker import Talker


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
        yield StepKernels(*(torch.compile(fn, **options) for fn in (frame_head, predictor_step, next_input)))
    finally:
        for layer in layers:
            del layer.forward  # back to the class's plain forward
