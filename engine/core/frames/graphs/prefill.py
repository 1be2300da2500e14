"""Prefill of slot 0 from captured graphs, one per prompt-length bucket (32, 64, ... 512 positions).

The prompt is copied into a static buffer padded to the bucket and the whole bucket runs through
the talker; the hidden state of the prompt's last position is kept. Cache slots past the prompt
receive padding, which is harmless: a decode step writes its slot before it attends to it, and
never attends past its own position.
"""

from __future__ import annotations

import torch

from engine.core.frames.graphs.capture import Graphed
from engine.core.frames.state import CacheRows, StaticState
from engine.core.model.talker import Talker

BUCKETS = (32, 64, 128, 256, 512)


class PrefillGraphs:
    def __init__(self, talker: Talker, state: StaticState, device, enabled, pool):
        self.talker, self.state = talker, state
        self.buckets = tuple(b for b in BUCKETS if b < state.max_seq)
        self.embeds = torch.zeros(1, self.buckets[-1], talker.config.hidden_size, dtype=state.hidden.dtype,
                                  device=device)
        self.last = torch.zeros(1, dtype=torch.int64, device=device)  # index of the prompt's last position
        self.graphs = {}
        for b in self.buckets:
            self.graphs[b] = Graphed(lambda b=b: self._run(b), device, enabled, pool=pool, name=f"{b}-position prefill")
            pool = self.graphs[b].pool or pool

    def _run(self, bucket: int) -> None:
        positions = torch.arange(bucket, device=self.last.device)[None]
        hidden = self.talker.model(self.embeds[:, :bucket], positions, CacheRows(self.state.cache, 0, 1), kv_len=bucket)
        self.state.hidden[0].copy_(hidden[0].index_select(0, self.last)[0])

    def __call__(self, embeds: torch.Tensor) -> bool:
        """Prefill slot 0 with ``embeds`` [1, L, H]; False when no bucket holds L positions."""
        length = embeds.shape[1]
        bucket = next((b for b in self.buckets if b >= length), None)
        if bucket is None:
            return False
        self.embeds[:, :length].copy_(embeds)
        self.last.fill_(length - 1)
        self.graphs[bucket]()
        return True
