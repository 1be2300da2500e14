"""Optional ``torch.compile`` of what the captured CUDA graphs run.

Inductor fuses the pointwise work (norms, RoPE, residuals, SiLU, the sampling noise and filters)
into a few Triton kernels, which are then recorded inside the graph. Compiled: each talker layer, the
whole code-predictor step (one body for all 14 steps: weights are inputs), the frame's head (code 0,
EOS, the predictor's first pass) and the next talker input. The frame steps use all of them; the
many-streams prefill's graphs use the talker layers (``capture_compiled``): eager, its norms, RoPE and
SiLU are a dozen passes a layer over every padded position, as long as its matrix products at 64
prompts. The ``compile`` option turns it off (``engine.core.options``); a compile failure falls back to the plain
functions.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable, Iterator

import torch

from engine.core import options
from engine.core.frames.codes import predictor_step
from engine.core.frames.graphs.capture import Graphed
from engine.core.frames.state import StaticState
from engine.core.frames.step import StepKernels, frame_head, frame_step, next_input
from engine.core.model.layers import DecoderLayer
from engine.core.model.talker import Talker

log = logging.getLogger(__name__)


def compile_enabled(device: torch.device) -> bool:
    """On CUDA while the ``compile`` option is on (``engine.core.options``); Inductor's Triton code needs compute
    capability 7.0 (Volta) or newer."""
    return device.type == "cuda" and options.current().compile and torch.cuda.get_device_capability(device) >= (7, 0)


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
    # the first shape compiles static (one stream: the fastest kernels); the next batch size recompiles
    # with the batch dimension symbolic and that body serves every further bucket (Dynamo's automatic
    # dynamic shapes), so capturing 8 buckets costs about 2 compiles, not 8
    options = dict(dynamic=None, fullgraph=True)
    layer_forward = torch.compile(DecoderLayer.forward, **options)
    for layer in layers:
        layer.forward = layer_forward.__get__(layer)
    try:
        yield StepKernels(*(torch.compile(fn, **options) for fn in (frame_head, predictor_step, next_input)))
    finally:
        for layer in layers:
            del layer.forward  # back to the class's plain forward


def capture_frame_step(talker: Talker, state: StaticState, device: torch.device, use_graphs: bool,
                       name: str) -> tuple[Graphed, bool]:
    """``frame_step`` over ``state`` as a graph (or eager when ``use_graphs`` is False), with compiled
    pieces where ``compile_enabled``; without them if compiling fails. Returns (the step, compiled)."""
    return capture_compiled(talker, lambda kernels: lambda: frame_step(talker, state, kernels), device, use_graphs,
                            use_graphs and compile_enabled(device), name)


def capture_compiled(talker: Talker, make_fn: Callable[[StepKernels], Callable[[], None]], device: torch.device,
                     use_graphs: bool, compile_layers: bool, name: str, pool=None) -> tuple[Graphed, bool]:
    """``make_fn(kernels)`` as a graph (or eager when ``use_graphs`` is False) captured inside
    ``compiled_kernels`` when ``compile_layers``; captured again without them if compiling fails. Returns
    (the graph, compiled)."""
    try:
        with compiled_kernels(talker, compile_layers) as kernels:
            return Graphed(make_fn(kernels), device, use_graphs, pool=pool, name=name), compile_layers
    except Exception as e:  # inductor/dynamo raise many types; the plain functions always work
        if not compile_layers:
            raise
        log.warning("compiling the %s failed; capturing it without compilation: %s", name, str(e)[-3000:])
    with compiled_kernels(talker, False) as kernels:
        return Graphed(make_fn(kernels), device, use_graphs, pool=pool, name=name), False
