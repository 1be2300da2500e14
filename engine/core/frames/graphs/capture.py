"""A small CUDA-graph wrapper: warm up, capture once, replay; or run eagerly.

The ``graphs`` option off (``engine.core.options``) or ``enabled=False`` runs every call eagerly, e.g. to debug or to
compare against the graph. The captured function must read and write only static buffers.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import torch

from engine.core import options
from engine.errors import UnsupportedError


def graphs_enabled(device: torch.device) -> bool:
    """Graphs by default: on a CUDA device while the ``graphs`` option is on."""
    return device.type == "cuda" and options.current().graphs


def separate_capture_stream(device: torch.device) -> torch.cuda.Stream:
    """A stream to capture graphs on that is not the one every other graph is captured on. PyTorch keeps a
    cuBLAS workspace per (thread, stream) and a graph keeps the one of its capture stream: graphs captured
    on one stream must never run at the same time (pytorch#193402), and the many-streams loop replays its
    decode graphs while a frame step's graph runs."""
    if torch.cuda.graph.default_capture_stream is None:  # what torch.cuda.graph would create on first use
        torch.cuda.graph.default_capture_stream = torch.cuda.Stream(device)
    stream = torch.cuda.Stream(device)
    while stream == torch.cuda.graph.default_capture_stream:  # streams come from a pool, in turn
        stream = torch.cuda.Stream(device)
    return stream


class Graphed:
    """``fn()`` captured as one CUDA graph after ``warmup`` eager calls (all on a side stream)."""

    def __init__(self, fn: Callable[[], None], device: torch.device, enabled: bool | None = None,
                 warmup: int = 2, pool=None, name: str = "graph", capture_stream: torch.cuda.Stream | None = None):
        self.fn, self.name = fn, name
        self.enabled = graphs_enabled(device) if enabled is None else enabled
        self.graph = None
        self.capture_seconds = 0.0
        if self.enabled:
            self._capture(warmup, pool, capture_stream)

    def _capture(self, warmup: int, pool, capture_stream) -> None:
        t0 = time.perf_counter()
        stream = torch.cuda.Stream()
        stream.wait_stream(torch.cuda.current_stream())
        try:
            with torch.cuda.stream(stream), torch.inference_mode():
                for _ in range(warmup):
                    self.fn()
            torch.cuda.current_stream().wait_stream(stream)
            self.graph = torch.cuda.CUDAGraph()
            # thread_local: other threads (callers building prompts, decoding) may use the GPU meanwhile
            with torch.cuda.graph(self.graph, pool=pool, stream=capture_stream, capture_error_mode="thread_local"), \
                    torch.inference_mode():
                self.fn()
        except RuntimeError as e:
            raise UnsupportedError(
                f"capturing the {self.name} CUDA graph failed ({e}). Set ORATOR_EAGER=1 to run without graphs; "
                "PyTorch 2.5.1 or newer is required for capture."
            ) from None
        torch.cuda.synchronize()
        self.capture_seconds = time.perf_counter() - t0

    @property
    def pool(self):
        return self.graph.pool() if self.graph is not None else None

    def __call__(self) -> None:
        if self.graph is not None:
            self.graph.replay()
        else:
            with torch.inference_mode():
                self.fn()
