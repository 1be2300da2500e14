"""Many streams at once: every active stream advances one frame per step of one batched frame loop.

``BatchedFrames`` owns a ``StaticState`` of ``slots`` rows. A stream joins between steps (its prompt
is prefilled into a free slot while the others wait one prefill), leaves as soon as it ends or is
released, and its slot is reused. One ``frame_step`` advances every slot (captured as one CUDA
graph on a GPU); ``collect`` then reads back, in one synchronisation, the frames each stream made
since the last collect. Sampling noise is counter-based per stream, so a stream's codes do not
depend on which other streams share its batch.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from engine.graphs.capture import Graphed, graphs_enabled
from engine.graphs.compile import compile_enabled, compiled_kernels
from engine.graphs.runner import HISTORY, MAX_SEQ, MAX_TRAILING
from engine.graphs.state import NEVER, StaticState
from engine.graphs.step import frame_step
from engine.model.talker import Talker
from engine.prompts import Prompt
from engine.sampling import Sampling


@dataclass(slots=True)
class _Stream:
    max_frames: int
    produced: int = 0  # frames stepped since prefill
    emitted: int = 0  # frames handed out by collect


class BatchedFrames:
    def __init__(self, talker: Talker, slots: int, max_seq: int = MAX_SEQ, graphs: bool | None = None):
        self.talker = talker
        device = talker.codec_head.weight.device
        self.state = StaticState(talker, slots, max_seq, MAX_TRAILING, HISTORY)
        use_graphs = graphs_enabled(device) if graphs is None else graphs
        with compiled_kernels(talker, use_graphs and compile_enabled(device)) as kernels:
            self._step = Graphed(lambda: frame_step(talker, self.state, kernels), device, use_graphs,
                                 name=f"{slots}-stream frame step")
        self._free = list(range(slots))
        self._streams: dict[int, _Stream] = {}

    @property
    def capacity(self) -> int:
        return self.state.batch

    @property
    def active(self) -> list[int]:
        return sorted(self._streams)

    def add(self, prompt: Prompt, sampling: Sampling, seed: int, max_frames: int) -> int:
        """Prefill a free slot with ``prompt``; returns the slot. Raises when the batch is full."""
        if not self._free:
            raise RuntimeError("no free stream slot: the batch is full")
        slot = self._free.pop(0)
        max_frames = min(max_frames, self.state.max_seq - prompt.length)
        self.state.prefill(self.talker, slot, prompt, sampling, seed)
        self._streams[slot] = _Stream(max_frames)
        return slot

    def release(self, slot: int) -> None:
        """Free ``slot`` at once (stream finished or cancelled)."""
        if self._streams.pop(slot, None) is not None:
            self._free.append(slot)

    def step(self, n: int = 1) -> None:
        """Advance every slot ``n`` frames (at most the ring's length between two collects)."""
        if any(s.produced + n - s.emitted > HISTORY for s in self._streams.values()):
            raise RuntimeError(f"collect at least every {HISTORY} frames")
        for _ in range(n):
            self._step()
        for s in self._streams.values():
            s.produced += n

    def collect(self) -> dict[int, tuple[np.ndarray, bool]]:
        """For each active slot: (new frames int64 [k, 16], ended). Ended streams stay until released."""
        eos_at = self.state.eos_at.cpu().numpy()  # the one synchronisation
        codes = self.state.codes.cpu().numpy()  # [B, HISTORY, 16]
        out = {}
        for slot, s in self._streams.items():
            end = min(s.produced, s.max_frames)
            if eos_at[slot] != NEVER:
                end = min(end, int(eos_at[slot]))
            ring = np.arange(s.emitted, max(end, s.emitted)) % HISTORY
            out[slot] = (codes[slot, ring], end < s.produced or end == s.max_frames)
            s.emitted = max(end, s.emitted)
        return out


def generate_batch(talker: Talker, prompts: list[tuple[Prompt, Sampling, int, int]], slots: int,
                   chunk: int = 8, graphs: bool | None = None) -> list[np.ndarray]:
    """Codes of every (prompt, sampling, seed, max_frames), run ``slots`` at a time; a new stream joins as
    soon as a slot frees. Returns int64 [T_i, 16] per prompt, in order."""
    batch = BatchedFrames(talker, slots, graphs=graphs)
    pending = list(enumerate(prompts))
    owner: dict[int, int] = {}
    frames: dict[int, list[np.ndarray]] = {i: [] for i in range(len(prompts))}
    with torch.inference_mode():
        while pending or owner:
            while pending and len(owner) < slots:
                index, (prompt, sampling, seed, max_frames) = pending.pop(0)
                owner[batch.add(prompt, sampling, seed, max_frames)] = index
            batch.step(chunk)
            for slot, (codes, ended) in batch.collect().items():
                frames[owner[slot]].append(codes)
                if ended:
                    batch.release(slot)
                    del owner[slot]
    return [np.concatenate(frames[i]) if frames[i] else np.zeros((0, 16), np.int64) for i in range(len(prompts))]
