"""Prefill of several slots at once from captured graphs, one per bucket of rows and positions.

The many-streams loop admits the streams joining between two steps together (``BatchedFrames.add_many``).
Run eagerly, that talker pass over the padded prompts is hundreds of kernel launches and allocations, which
every running stream waits for (docs/benchmarks.md#batched-prefill). Here the prompts are copied into a
static buffer padded to a bucket (rows 1, 2, 4, ... up to the batch; positions 32 ... 512; at most ``TOKENS``
positions in all),
one captured graph runs the bucket through the talker into a static scratch cache and keeps each row's
last hidden state, and the rows' keys, values and hidden states are copied into their slots (three
indexed copies). Padding rows and positions compute values nobody reads; a slot's cache positions past its
prompt receive padding, which a decode step overwrites before it attends to them. The talker layers run
compiled in these graphs where the frame steps' do (``compile.capture_compiled``; after a failed compile,
without); a bucket whose capture fails is left to the eager prefill (logged).
"""

from __future__ import annotations

import logging
from collections.abc import Callable

import torch

from engine.core.frames.compile import capture_compiled, compile_enabled
from engine.core.frames.graphs.capture import Graphed, graphs_enabled
from engine.core.frames.graphs.prefill import BUCKETS as POSITION_BUCKETS
from engine.core.frames.state import StaticState
from engine.core.model.talker import Talker
from engine.core.prompts import Prompt
from engine.core.runtime import on_device
from engine.errors import UnsupportedError

TOKENS = 8192  # padded positions of the largest bucket: the static buffers' size

log = logging.getLogger(__name__)


class _Scratch:
    """Keys and values of a bucket of rows: views of the first rows x positions of flat buffers."""

    def __init__(self, k: torch.Tensor, v: torch.Tensor, layers: int, rows: int, kv_heads: int, positions: int,
                 head_dim: int):
        shape = (layers, rows, kv_heads, positions, head_dim)
        size = layers * rows * kv_heads * positions * head_dim
        self.k, self.v = k[:size].view(shape), v[:size].view(shape)

    @property
    def max_len(self) -> int:
        return self.k.shape[3]


class BatchedPrefill:
    """``__call__(slots, prompts)`` prefills ``slots`` (a device tensor) with ``prompts`` from the graph of the
    smallest bucket holding them, or returns False (too many rows or positions for any bucket)."""

    def __init__(self, talker: Talker, state: StaticState, device: torch.device, enabled: bool | None, pool=None):
        self.talker, self.state, self.device = talker, state, device
        self.enabled = graphs_enabled(device) if enabled is None else enabled
        c, dtype = talker.config, state.hidden.dtype
        self.rows = [r for r in (1 << i for i in range(state.batch.bit_length() + 1)) if r <= state.batch]
        self.positions = [p for p in POSITION_BUCKETS if p < state.max_seq]
        model = talker.model
        self._shape = (len(model.layers), model.kv_heads, model.head_dim)
        layers, kv_heads, head_dim = self._shape
        self.embeds = torch.zeros(TOKENS * c.hidden_size, dtype=dtype, device=device)
        self.k = torch.zeros(layers * TOKENS * kv_heads * head_dim, dtype=dtype, device=device)
        self.v = torch.zeros_like(self.k)
        self.last = torch.zeros(self.rows[-1], dtype=torch.int64, device=device)  # each row's last position
        self.hidden = torch.zeros(self.rows[-1], c.hidden_size, dtype=dtype, device=device)
        self._graphs: dict[tuple[int, int], Graphed | None] = {}  # None: its capture failed
        self._pool = pool
        self._compile = self.enabled and compile_enabled(device)  # off for good once a compile fails

    @property
    def buckets(self) -> list[tuple[int, int]]:
        """Every (rows, positions) bucket, in the order ``bucket`` tries them."""
        return [(r, p) for r in self.rows for p in self.positions if r * p <= TOKENS]

    def bucket(self, rows: int, longest: int) -> tuple[int, int] | None:
        """The bucket of fewest padded positions holding ``rows`` prompts of up to ``longest`` positions."""
        fits = [(r, p) for r, p in self.buckets if r >= rows and p >= longest]
        return min(fits, key=lambda b: (b[0] * b[1], b[0])) if fits else None

    def warmup_tasks(self) -> list[tuple[str, Callable[[], object]]]:
        """(what, capture) for every bucket's graph, to run before serving: a capture during an admission stalls
        the running streams."""
        return [(f"the prefill of {rows} prompts of up to {positions} positions",
                 lambda rows=rows, positions=positions: self._graph(rows, positions))
                for rows, positions in self.buckets]

    def __call__(self, slots: torch.Tensor, prompts: list[Prompt]) -> bool:
        bucket = self.bucket(len(prompts), max(p.length for p in prompts))
        if bucket is None:
            return False
        rows, positions = bucket
        graph = self._graph(rows, positions)
        if graph is None:
            return False
        embeds = self._embeds(rows, positions)
        for i, prompt in enumerate(prompts):
            embeds[i, : prompt.length].copy_(prompt.embeds[0])
        lengths = [p.length for p in prompts] + [1] * (rows - len(prompts))  # padding rows read position 0
        self.last[:rows].copy_(on_device(lengths, self.device) - 1)
        graph()
        n, scratch = len(prompts), self._scratch(rows, positions)
        self.state.cache.k[:, :, :, :positions].index_copy_(1, slots, scratch.k[:, :n])
        self.state.cache.v[:, :, :, :positions].index_copy_(1, slots, scratch.v[:, :n])
        self.state.hidden.index_copy_(0, slots, self.hidden[:n])
        return True

    def _embeds(self, rows: int, positions: int) -> torch.Tensor:
        return self.embeds[: rows * positions * self.hidden.shape[1]].view(rows, positions, -1)

    def _scratch(self, rows: int, positions: int) -> _Scratch:
        layers, kv_heads, head_dim = self._shape
        return _Scratch(self.k, self.v, layers, rows, kv_heads, positions, head_dim)

    def _graph(self, rows: int, positions: int) -> Graphed | None:
        """The bucket's graph, captured on first use; None when its capture failed."""
        if (rows, positions) not in self._graphs:
            try:
                graph, self._compile = capture_compiled(self.talker, lambda _: lambda: self._run(rows, positions),
                                                        self.device, self.enabled, self._compile,
                                                        f"{rows}-row {positions}-position prefill", self._pool)
            except UnsupportedError as e:
                log.warning("%s; admissions of this size are prefilled eagerly", e)
                graph = None
            else:
                self._pool = self._pool or graph.pool
            self._graphs[rows, positions] = graph
        return self._graphs[rows, positions]

    def _run(self, rows: int, positions: int) -> None:
        at = torch.arange(positions, device=self.device).expand(rows, positions)
        hidden = self.talker.model(self._embeds(rows, positions), at, self._scratch(rows, positions),
                                   kv_len=positions)  # [rows, positions, H]
        self.hidden[:rows].copy_(hidden[torch.arange(rows, device=self.device), self.last[:rows]])
