"""Many streams advancing together: ``BatchedFrames``, one batched frame loop over ``slots`` rows.

``BatchedFrames`` owns a ``StaticState`` of ``slots`` rows. Streams join between steps (the prompts
of all streams joining at once are prefilled into free slots together, in one padded talker pass,
on a GPU replayed from a graph captured for its bucket of rows and positions (``BatchedPrefill``),
while the others wait that pass), leave as soon as they end or are released, and their slots are
reused. One ``frame_step`` advances every slot (captured as one CUDA graph on a GPU) and queues the copy of
its codes to host memory; ``collect`` waits for the oldest such copy (the one synchronisation) and hands out
the frames each stream made in that step, so that the next step can be queued before the last is read back.
Sampling noise is counter-based per stream, so a stream's codes do not depend on which other
streams share its batch. ``generate_batch`` runs a list of prompts through it, a slot at a time.
"""

from __future__ import annotations

import collections
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import torch

from engine.core.frames.batched.prefill import BatchedPrefill
from engine.core.frames.capacity import HISTORY, MAX_SEQ, MAX_TRAILING
from engine.core.frames.compile import capture_frame_step
from engine.core.frames.graphs.capture import Graphed, graphs_enabled
from engine.core.frames.guard import FrameGuard
from engine.core.frames.state import NEVER, StaticState
from engine.core.model.talker import Talker
from engine.core.prompts import Prompt
from engine.core.sampling import Sampling

PREFILL_TOKENS = 8192  # padded prompt positions per batched prefill pass (its scratch memory grows with them)


@dataclass(slots=True)
class _Stream:
    max_frames: int
    guard: FrameGuard  # cuts the stream when it loops or reaches max_frames
    produced: int = 0  # frames stepped since prefill
    emitted: int = 0  # frames handed out by collect


@dataclass(slots=True)
class _StepCopy:
    """The codes and ends of one step, copied to host memory as soon as the step is done (``BatchedFrames.step``
    queues the copy; its ``collect`` waits for it), with each stream's frames stepped by then."""

    eos_at: torch.Tensor  # int64 [B]: the frame of each slot's EOS, or NEVER
    codes: torch.Tensor  # int64 [bucket, HISTORY, 16]: the ring of recent frames
    stepped: dict[int, tuple[_Stream, int]]  # slot -> (its stream, frames stepped since its prefill)
    done: torch.cuda.Event | None  # recorded after the copies (None: already there, off CUDA)


class BatchedFrames:
    def __init__(self, talker: Talker, slots: int, max_seq: int = MAX_SEQ, graphs: bool | None = None,
                 captured_prefill: bool | None = None):
        """``captured_prefill`` (default: with ``graphs``): admissions prefill from captured graphs of
        padded buckets (``BatchedPrefill``; run eagerly when ``graphs`` is off) instead of one eager pass."""
        self.talker = talker
        self.device = talker.codec_head.weight.device
        self.state = StaticState(talker, slots, max_seq, MAX_TRAILING, HISTORY)
        self.use_graphs = graphs_enabled(self.device) if graphs is None else graphs
        captured = self.use_graphs if captured_prefill is None else captured_prefill
        self.prefill = BatchedPrefill(talker, self.state, self.device, self.use_graphs) if captured else None
        # one step per batch bucket (1, 2, 4, ... slots) over the first rows: a few streams pay for a few
        self.buckets = sorted({min(1 << i, slots) for i in range(slots.bit_length() + 1)})
        self._steps: dict[int, Graphed] = {}
        self._free = list(range(slots))
        self._streams: dict[int, _Stream] = {}
        self._copies: collections.deque[_StepCopy] = collections.deque()  # queued by steps, not collected yet

    def _step_for(self, bucket: int) -> Graphed:
        """The frame step over slots [0, bucket), captured on first use."""
        if bucket not in self._steps:
            self._steps[bucket], _ = capture_frame_step(self.talker, self.state.first_rows(bucket), self.device,
                                                        self.use_graphs, f"{bucket}-stream frame step")
        return self._steps[bucket]

    def warmup_tasks(self) -> list[tuple[str, Callable[[], object]]]:
        """(what, capture) for the step of every bucket and the captured prefills, to run while no stream runs:
        captured on first use instead, a step stalls the streams running then (and its warm-up calls step their
        rows)."""
        steps = [(f"the {bucket}-stream frame step", lambda bucket=bucket: self._step_for(bucket))
                 for bucket in self.buckets]
        return steps + (self.prefill.warmup_tasks() if self.prefill is not None else [])

    @property
    def capacity(self) -> int:
        return self.state.batch

    @property
    def active(self) -> list[int]:
        return sorted(self._streams)

    @property
    def bucket(self) -> int:
        """The rows a step runs over, [0, bucket): the smallest bucket above the highest active slot."""
        return next(b for b in self.buckets if b > max(self._streams))

    def add(self, prompt: Prompt, sampling: Sampling, seed: int, max_frames: int) -> int:
        """Prefill a free slot with ``prompt``; returns the slot. Raises when the batch is full."""
        return self.add_many([(prompt, sampling, seed, max_frames)])[0]

    def add_many(self, requests: list[tuple[Prompt, Sampling, int, int]]) -> list[int]:
        """Prefill free slots with these (prompt, sampling, seed, max_frames), several prompts per talker
        pass (up to ``PREFILL_TOKENS`` padded positions, or a captured bucket's); returns their slots.
        Raises, adding none, when there are not enough free slots or a prompt does not fit (``ValueError``)."""
        if len(requests) > len(self._free):
            raise RuntimeError("no free stream slot: the batch is full")
        for prompt, _, _, _ in requests:
            self.state.check(prompt)
        slots = sorted(self._free)[: len(requests)]  # the lowest slots keep the active rows, and the bucket, small
        group: list[tuple[int, Prompt, Sampling, int]] = []
        for slot, (prompt, sampling, seed, _) in zip(slots, requests, strict=True):
            longest = max([prompt.length] + [p.length for _, p, _, _ in group])
            if group and not self._one_pass(len(group) + 1, longest):
                self.state.prefill_many(self.talker, group, self.prefill)
                group = []
            group.append((slot, prompt, sampling, seed))
        self.state.prefill_many(self.talker, group, self.prefill)
        for slot, (prompt, _, _, max_frames) in zip(slots, requests, strict=True):
            self._free.remove(slot)
            budget = min(max_frames, self.state.max_seq - prompt.length)
            self._streams[slot] = _Stream(budget, FrameGuard(budget, f"the stream in slot {slot}"))
        return slots

    def _one_pass(self, rows: int, longest: int) -> bool:
        """Whether ``rows`` prompts of up to ``longest`` positions go through the talker in one pass."""
        if self.prefill is not None:
            return self.prefill.bucket(rows, longest) is not None
        return rows * longest <= PREFILL_TOKENS

    def stepping_on(self) -> set[int]:
        """The slots whose streams have frames left to step (one that has stepped its last frame ends, whatever
        its codes)."""
        return {slot for slot, s in self._streams.items() if s.produced < s.max_frames and not s.guard.cut}

    def release(self, slot: int) -> None:
        """Free ``slot`` at once (stream finished or cancelled)."""
        if self._streams.pop(slot, None) is not None:
            self.state.retire(slot)
            self._free.append(slot)
        if not self._streams:  # what queued steps made is nobody's now
            self._copies.clear()

    def step(self, n: int = 1) -> None:
        """Advance every slot ``n`` frames (at most the ring's length between two collects), then queue the
        copy of the codes and ends to host memory that its ``collect`` waits for: steps can be queued ahead of the
        read-back of earlier ones, which keeps the GPU busy while the host reads back."""
        if any(s.produced + n - s.emitted > HISTORY for s in self._streams.values()):
            raise RuntimeError(f"collect at least every {HISTORY} frames")
        if not self._streams:
            return
        step = self._step_for(self.bucket)
        for _ in range(n):
            step()
        for s in self._streams.values():
            s.produced += n
        self._copies.append(self._copy_back())

    def _copy_back(self) -> _StepCopy:
        """Queue the copy of the codes and ends to host memory (pinned, asynchronous on a GPU)."""
        cuda = self.device.type == "cuda"
        sources = self.state.eos_at, self.state.codes[: self.bucket]
        eos_at, codes = (torch.empty(t.shape, dtype=t.dtype, pin_memory=cuda).copy_(t, non_blocking=cuda)
                         for t in sources)
        done = torch.cuda.current_stream(self.device).record_event() if cuda else None
        return _StepCopy(eos_at, codes, {slot: (s, s.produced) for slot, s in self._streams.items()}, done)

    def _fetch(self) -> _StepCopy:
        """The codes and ends of the oldest step not collected yet (read back now when there is none), once they
        are in host memory: the one synchronisation."""
        fetched = self._copies.popleft() if self._copies else self._copy_back()
        if fetched.done is not None:
            fetched.done.synchronize()
        return fetched

    def collect(self) -> dict[int, tuple[np.ndarray, bool]]:
        """The frames of the oldest step not collected yet, whatever steps were queued since: for each slot it
        stepped that the same stream still holds, (new frames int64 [k, 16], ended). Ended streams stay until
        released."""
        fetched = self._fetch()
        eos_at, codes = fetched.eos_at.numpy(), fetched.codes.numpy()
        out = {}
        for slot, (s, produced) in fetched.stepped.items():
            if self._streams.get(slot) is not s:  # released since
                continue
            end = min(produced, s.max_frames)
            if eos_at[slot] != NEVER:
                end = min(end, int(eos_at[slot]))
            ring = np.arange(s.emitted, max(end, s.emitted)) % HISTORY
            new = codes[slot, ring]
            new = new[:s.guard.keep(new[:, 0])]  # the guard sees every frame before it is decoded
            out[slot] = (new, end < produced or end == s.max_frames or s.guard.cut)
            s.emitted = max(end, s.emitted)
        return out

    def warning(self, slot: int) -> str | None:
        """Why the stream in ``slot`` was cut (``engine.core.frames.guard``), None when it was not."""
        stream = self._streams.get(slot)
        return stream.guard.warning if stream is not None else None
