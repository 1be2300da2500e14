"""Many streams at once: every active stream advances one frame per step of one batched frame loop.

``BatchedFrames`` owns a ``StaticState`` of ``slots`` rows. A stream joins between steps (its prompt
is prefilled into a free slot while the others wait one prefill), leaves as soon as it ends or is
released, and its slot is reused. One ``frame_step`` advances every slot (captured as one CUDA
graph on a GPU); ``collect`` then reads back, in one synchronisation, the frames each stream made
since the last collect. Sampling noise is counter-based per stream, so a stream's codes do not
depend on which other streams share its batch.
"""

from __future__ import annotations

import queue
import random
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
import torch

from engine.engine import default_max_frames
from engine.graphs.capture import Graphed, graphs_enabled
from engine.graphs.compile import compile_enabled, compiled_kernels
from engine.graphs.runner import HISTORY, MAX_SEQ, MAX_TRAILING
from engine.graphs.state import NEVER, StaticState
from engine.graphs.step import frame_step
from engine.model.talker import Talker
from engine.prompts import Prompt, build_prompt
from engine.results import SAMPLE_RATE, Chunk, closing_chunk
from engine.sampling import Sampling


@dataclass(slots=True)
class _Stream:
    max_frames: int
    produced: int = 0  # frames stepped since prefill
    emitted: int = 0  # frames handed out by collect


class BatchedFrames:
    def __init__(self, talker: Talker, slots: int, max_seq: int = MAX_SEQ, graphs: bool | None = None):
        self.talker = talker
        self.device = talker.codec_head.weight.device
        self.state = StaticState(talker, slots, max_seq, MAX_TRAILING, HISTORY)
        self.use_graphs = graphs_enabled(self.device) if graphs is None else graphs
        # one step per batch bucket (1, 2, 4, ... slots) over the first rows: a few streams pay for a few
        self.buckets = sorted({min(1 << i, slots) for i in range(slots.bit_length() + 1)})
        self._steps: dict[int, Graphed] = {}
        self._free = list(range(slots))
        self._streams: dict[int, _Stream] = {}

    def _step_for(self, bucket: int) -> Graphed:
        """The frame step over slots [0, bucket), captured on first use."""
        if bucket not in self._steps:
            rows = self.state.first_rows(bucket)
            with compiled_kernels(self.talker, self.use_graphs and compile_enabled(self.device)) as kernels:
                self._steps[bucket] = Graphed(lambda: frame_step(self.talker, rows, kernels), self.device,
                                              self.use_graphs, name=f"{bucket}-stream frame step")
        return self._steps[bucket]

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
        slot = min(self._free)  # the lowest slot keeps the active rows, and so the bucket, small
        self._free.remove(slot)
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
        if not self._streams:
            return
        step = self._step_for(next(b for b in self.buckets if b > max(self._streams)))
        for _ in range(n):
            step()
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


class BatchedStreams:
    """``Engine.stream`` for many callers at once: a loop thread runs one ``BatchedFrames`` for all of
    them; each caller's thread builds its prompts, receives its frames and decodes them with its own
    decoder state. ``stream`` is safe to call from up to ``slots`` threads (more simply wait)."""

    def __init__(self, engine, slots: int, graphs: bool | None = None):
        self.engine, self.slots = engine, slots
        self.frames = BatchedFrames(engine.model.talker, slots, graphs=graphs)
        self._requests: queue.Queue = queue.Queue()
        self._loop = threading.Thread(target=self._run_loop, name="orator-batch", daemon=True)
        self._loop.start()

    # ---- caller side ------------------------------------------------------------------------------
    def stream(self, text: str, voice, chunk_frames: int = 4, first_chunk_frames: int = 1,
               sampling: Sampling | None = None, cancel: threading.Event | None = None,
               max_frames: int | None = None) -> Iterator[Chunk]:
        eng = self.engine
        t0 = time.perf_counter()
        stop = threading.Event()  # set when this generator is closed early, so the slot frees at once
        try:
            yield from self._stream(eng, t0, text, voice, chunk_frames, first_chunk_frames, sampling,
                                    cancel or stop, max_frames)
        finally:
            stop.set()

    def _stream(self, eng, t0, text, voice, chunk_frames, first_chunk_frames, sampling, cancel,
                max_frames) -> Iterator[Chunk]:
        sampling = sampling or eng.defaults
        voice, segments = eng.plan(text, voice)
        seed = sampling.seed if sampling.seed is not None else random.getrandbits(62)
        decoder_state = eng.decoder.new_state(1, eng.device)
        with torch.inference_mode():
            if voice.in_context:
                eng.decoder.decode_chunk(torch.as_tensor(voice.ref_codes, device=eng.device)[None], decoder_state)
        size, last = first_chunk_frames, None
        for index, seg in enumerate(segments):
            prompt = build_prompt(eng.model.talker, eng.config, eng.tokenizer, voice, seg.text)
            outbox: queue.Queue = queue.Queue()
            self._requests.put((prompt, sampling, seed + index, max_frames or default_max_frames(seg.text), outbox,
                                cancel))
            buf, frame = [], 0
            while True:
                item = outbox.get()
                if isinstance(item, BaseException):
                    raise item
                codes, ended = item
                buf.extend(codes)
                while len(buf) >= size or (ended and buf):
                    take, buf = buf[:size], buf[size:]
                    with torch.inference_mode():
                        audio = eng.decoder.decode_chunk(torch.as_tensor(np.stack(take), device=eng.device)[None],
                                                         decoder_state)
                    final = ended and not buf and index == len(segments) - 1
                    last = Chunk(audio[0].float().cpu().numpy(), SAMPLE_RATE, frame, len(take), index,
                                 (seg.start, seg.end), time.perf_counter() - t0, final)
                    frame += len(take)
                    size = chunk_frames
                    yield last
                if ended:
                    break
            if cancel.is_set():
                return
        if last is not None and not last.final:
            yield closing_chunk(last)

    # ---- the loop thread --------------------------------------------------------------------------
    def _run_loop(self) -> None:
        """Admit waiting requests into free slots, step, hand each stream its frames; errors go to the
        callers concerned, never kill the loop."""
        waiting: list = []
        outboxes: dict[int, tuple[queue.Queue, threading.Event | None]] = {}
        fresh: set[int] = set()
        while True:
            if not outboxes and not waiting:
                waiting.append(self._requests.get())  # idle: block until a request comes
            while True:
                try:
                    waiting.append(self._requests.get_nowait())
                except queue.Empty:
                    break
            with torch.inference_mode():
                while waiting and len(outboxes) < self.slots:
                    prompt, sampling, seed, max_frames, outbox, cancel = waiting.pop(0)
                    try:
                        slot = self.frames.add(prompt, sampling, seed, max_frames)
                    except Exception as e:  # e.g. a prompt longer than the cache: that caller's error
                        outbox.put(e)
                        continue
                    outboxes[slot] = (outbox, cancel)
                    fresh.add(slot)
                if not outboxes:
                    continue
                try:
                    self.frames.step(1 if fresh else 4)  # single frames until every stream has begun
                    collected = self.frames.collect()
                except Exception as e:  # a device failure: every running caller hears of it
                    for slot, (outbox, _) in list(outboxes.items()):
                        outbox.put(e)
                        self.frames.release(slot)
                    outboxes.clear()
                    fresh.clear()
                    continue
                for slot, (codes, ended) in collected.items():
                    outbox, cancel = outboxes[slot]
                    cancelled = cancel.is_set()
                    if len(codes):
                        fresh.discard(slot)
                    outbox.put((list(codes), ended or cancelled))
                    if ended or cancelled:
                        self.frames.release(slot)
                        del outboxes[slot]
                        fresh.discard(slot)
