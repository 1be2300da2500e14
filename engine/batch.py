"""Many streams at once: every active stream advances one frame per step of one batched frame loop.

``BatchedFrames`` owns a ``StaticState`` of ``slots`` rows. Streams join between steps (the prompts
of all streams joining at once are prefilled into free slots together, in one padded talker pass,
on a GPU replayed from a graph captured for its bucket of rows and positions (``BatchedPrefill``),
while the others wait that pass), leave as soon as they end or are released, and their slots are
reused. One ``frame_step`` advances every slot (captured as one CUDA graph on a GPU) and queues the copy of
its codes to host memory; ``collect`` waits for the oldest such copy (the one synchronisation) and hands out
the frames each stream made in that step, so that the next step can be queued before the last is read back.
Sampling noise is counter-based per stream, so a stream's codes do not depend on which other
streams share its batch.

``BatchedStreams`` serves concurrent ``stream`` callers from one loop thread that steps the frames
and decodes them too: one ``decode_chunk`` per iteration over the same rows as the step, row = slot,
on a GPU on a CUDA stream of its own while the next iteration steps.
"""

from __future__ import annotations

import collections
import contextlib
import queue
import random
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import numpy as np
import torch

from engine.codec.decoder import DecoderState
from engine.engine import default_max_frames
from engine.graphs.batched_prefill import BatchedPrefill
from engine.graphs.capture import Graphed, graphs_enabled, separate_capture_stream
from engine.graphs.compile import capture_frame_step
from engine.graphs.runner import HISTORY, MAX_SEQ, MAX_TRAILING, DecodeGraph
from engine.graphs.state import NEVER, StaticState
from engine.model.talker import Talker
from engine.prompts import Prompt, build_prompts
from engine.results import SAMPLE_RATE, SAMPLES_PER_FRAME, Chunk, closing_chunk
from engine.runtime import on_device
from engine.sampling import Sampling
from engine.voices import Voice

PREFILL_TOKENS = 8192  # padded prompt positions per batched prefill pass (its scratch memory grows with them)
# frames per loop iteration of BatchedStreams once every stream has begun (1 before). 8 against 4: a frame's
# GPU time -5.7% at 64 streams (half the decodes and read-backs), 1.7B at 64 streams 475 against 446 audio-s/s;
# a request arriving mid-iteration waits longer (docs/benchmarks.md, ninth session)
LOOP_FRAMES = 8


@dataclass(slots=True)
class _Request:
    """One segment of one ``BatchedStreams.stream`` caller, for the loop thread."""

    voice: Voice  # the prompt is built by the loop thread, at admission (see BatchedStreams)
    text: str
    sampling: Sampling
    seed: int
    max_frames: int
    # the caller's 1-row state, copied into the slot's row when the segment starts; None: the row starts from
    # silence (a stream of one segment without reference audio: its caller allocates no state of its own)
    decoder_state: DecoderState | None
    keep: bool  # another segment follows: copy the row back into decoder_state when this one ends
    outbox: queue.Queue  # (codes int64 [k, 16], audio float32 [k * 1920], ended) per iteration, or an error
    cancel: threading.Event


@dataclass(slots=True)
class _Decoded:
    """One iteration's decode, launched (on a GPU, on the decode stream) and not yet handed out."""

    pieces: list[torch.Tensor]  # audio float32 [bucket, k * 1920] per cut, in host memory once ``done`` is
    done: torch.cuda.Event | None  # recorded after the copies to the host (None: already there, on a CPU)
    handouts: list[tuple[int, _Request, np.ndarray, bool]]  # (slot, request, new codes [k, 16], ended)


@dataclass(slots=True)
class _Stream:
    max_frames: int
    produced: int = 0  # frames stepped since prefill
    emitted: int = 0  # frames handed out by collect


@dataclass(slots=True)
class Fetched:
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
        self._copies: collections.deque[Fetched] = collections.deque()  # queued by steps, not fetched yet

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
            self._streams[slot] = _Stream(min(max_frames, self.state.max_seq - prompt.length))
        return slots

    def _one_pass(self, rows: int, longest: int) -> bool:
        """Whether ``rows`` prompts of up to ``longest`` positions go through the talker in one pass."""
        if self.prefill is not None:
            return self.prefill.bucket(rows, longest) is not None
        return rows * longest <= PREFILL_TOKENS

    def stepping_on(self) -> set[int]:
        """The slots whose streams have frames left to step (one that has stepped its last frame ends, whatever
        its codes)."""
        return {slot for slot, s in self._streams.items() if s.produced < s.max_frames}

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

    def _copy_back(self) -> Fetched:
        """Queue the copy of the codes and ends to host memory (pinned, asynchronous on a GPU)."""
        cuda = self.device.type == "cuda"
        sources = self.state.eos_at, self.state.codes[: self.bucket]
        eos_at, codes = (torch.empty(t.shape, dtype=t.dtype, pin_memory=cuda).copy_(t, non_blocking=cuda)
                         for t in sources)
        done = torch.cuda.current_stream(self.device).record_event() if cuda else None
        return Fetched(eos_at, codes, {slot: (s, s.produced) for slot, s in self._streams.items()}, done)

    def _fetch(self) -> Fetched:
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
            out[slot] = (codes[slot, ring], end < produced or end == s.max_frames)
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
            joining, pending = pending[: slots - len(owner)], pending[slots - len(owner) :]
            if joining:
                for slot, (index, _) in zip(batch.add_many([r for _, r in joining]), joining, strict=True):
                    owner[slot] = index
            batch.step(chunk)
            for slot, (codes, ended) in batch.collect().items():
                frames[owner[slot]].append(codes)
                if ended:
                    batch.release(slot)
                    del owner[slot]
    return [np.concatenate(frames[i]) if frames[i] else np.zeros((0, 16), np.int64) for i in range(len(prompts))]


class BatchedStreams:
    """``Engine.stream`` for many callers at once. A loop thread runs one ``BatchedFrames`` for all of them
    and decodes as well: it owns a ``DecoderState`` of ``slots`` rows (row = slot), steps every active
    slot the same number of frames and decodes the new frames of all of them in one ``decode_chunk``
    over the step's bucket of rows (a CUDA graph per (bucket, frames) on a GPU). Rows of free slots and
    frames after a stream's end decode zeros, which reach no caller and no other row. On a GPU the decode
    runs on a CUDA stream of its own, overlapping the next iteration's step (the decode's convolutions fill
    the GPU where the step's many small kernels leave it idle): an iteration's audio is handed out once the
    next step is queued, or before an admission (whose prefill would hold it back), and the decode graphs
    are captured on a stream of their own (see ``separate_capture_stream``). Once every stream has begun and
    no request could join it, the next step is queued before this one is read back, ahead of the handouts,
    the read-back, the collect and the decode's launch: the GPU steps on while the loop thread waits and does
    that host work, instead of waiting for it (a request that comes meanwhile joins the step after).

    A caller's thread sends one request per segment, with its voice and text, and regroups the (codes,
    audio) it receives into its chunk sizes. The loop thread builds the prompts: built by 64 callers' threads
    at once, the prompts' hundreds of small PyTorch calls fought the loop thread for the GIL, and an
    admission then took ~250 ms instead of tens. It builds those of requests that came while it stepped, all
    in one ``build_prompts`` (a few device operations whatever their number), right after it queues the next
    step, so that this host work overlaps the step on the GPU instead of delaying the admission; requests found
    waiting at an admission have their prompts built there. A caller whose audio runs on from earlier codes
    (several segments, or a reference's codes) keeps its decoder state in a 1-row holder: copied into the
    slot's row when a segment starts and back when it ends, so the audio runs on exactly across segments
    whichever slots they get; the other callers' rows start from silence. ``stream`` is safe to call from up
    to ``slots`` threads (more simply wait).

    ``phase_timer``, when set (a profiler: bench/profile_batch.py), is called by the loop thread with
    the name of each phase of an iteration as it begins: "wait" (taking requests, blocking while there
    are none), "admit" (prefilling the joining prompts), "step", "build" (the prompts of requests that came
    meanwhile, only when there are some and a slot for them), "handout" (the previous iteration's
    audio to the callers' outboxes, once decoded: after the step is queued, or before an admission, so
    that a prefill does not hold it back; "step" comes again before it when the next step is queued ahead,
    and the next iteration then has neither "admit" nor "step" of its own), "collect" (reading back codes and
    ends) and "decode" (launching it)."""

    def __init__(self, engine, slots: int, graphs: bool | None = None, warmup: bool | None = None,
                 warmup_progress: Callable[[int, int, str], None] | None = None):
        """``warmup`` (default: with graphs): capture every batch size before serving, minutes for a large
        model the first time; ``warmup_progress(done, total, what)`` hears of each piece as it starts."""
        self.engine, self.slots = engine, slots
        self.frames = BatchedFrames(engine.model.talker, slots, graphs=graphs)
        self.decoder_state = engine.decoder.new_state(slots, engine.device)
        self._decoders: dict[tuple[int, int], DecodeGraph] = {}
        self._pool = None  # one memory pool for every decoder graph
        cuda = engine.device.type == "cuda"
        self._decode_stream = torch.cuda.Stream(engine.device) if cuda else None
        self._rows_written: torch.cuda.Event | None = None  # see _note_rows_written
        # the decode graphs replay while a step's graph runs: captured apart, so their cuBLAS workspace is their own
        self._capture_stream = separate_capture_stream(engine.device) if cuda and self.frames.use_graphs else None
        # captured up front by default: a capture while streams run stalls them (and steps their rows)
        self.warmup_seconds = (self._warmup(warmup_progress) if (self.frames.use_graphs if warmup is None else warmup)
                               else 0.0)
        self._requests: queue.Queue = queue.Queue()
        self.phase_timer: Callable[[str], None] | None = None
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
        decoder_state = None  # only a stream whose audio runs on from earlier codes needs a state between segments
        if voice.in_context or len(segments) > 1:
            decoder_state = eng.decoder.new_state(1, eng.device)
        if voice.in_context:
            with torch.inference_mode():
                eng.decoder.decode_chunk(torch.as_tensor(voice.ref_codes, device=eng.device)[None], decoder_state)
        size, last = first_chunk_frames, None
        for index, seg in enumerate(segments):
            outbox: queue.Queue = queue.Queue()
            last_segment = index == len(segments) - 1
            self._requests.put(_Request(voice, seg.text, sampling, seed + index,
                                        max_frames or default_max_frames(seg.text), decoder_state, not last_segment,
                                        outbox, cancel))
            pending, held, frame = [], 0, 0  # audio received but not yet yielded, and its frames
            while True:
                item = outbox.get()
                if isinstance(item, BaseException):
                    raise item
                codes, audio, ended = item
                pending.append(audio)
                held += len(codes)
                while held >= size or (ended and held):
                    take = min(size, held)
                    samples = np.concatenate(pending)
                    pending, held = [samples[take * SAMPLES_PER_FRAME:]], held - take
                    final = ended and not held and last_segment
                    last = Chunk(samples[:take * SAMPLES_PER_FRAME], SAMPLE_RATE, frame, take, index,
                                 (seg.start, seg.end), time.perf_counter() - t0, final)
                    frame += take
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
        """Admit waiting requests into free slots, step, build the prompts of the requests that came meanwhile
        (while the step runs on the GPU), queue the next step at once when nobody could join it, hand out the
        previous iteration's audio (before the admission when there is one), collect, launch this iteration's
        decode; errors go to the callers concerned, never kill the loop."""
        waiting: list[_Request] = []  # taken from the queue, prompt not built yet
        ready: list[tuple[_Request, Prompt]] = []  # prompt built and checked, waiting for a slot
        running: dict[int, _Request] = {}
        fresh: set[int] = set()
        decoded: _Decoded | None = None  # the previous iteration's decode, not yet handed out
        ahead = False  # this iteration's step was queued by the last one, before its read-back
        while True:
            self._phase("wait")
            if not running and not waiting and not ready and decoded is None:
                waiting.append(self._requests.get())  # idle: block until a request comes
            self._take(waiting)
            with torch.inference_mode():
                try:
                    if not ahead:  # (a stream admitted now would miss the step queued ahead: it waits one)
                        if decoded is not None and (waiting or ready) and len(running) < self.slots:
                            self._phase("handout")  # before an admission, whose prefill would hold this audio back
                            self._hand_out(decoded)
                            decoded = None
                        self._phase("admit")
                        self._admit(waiting, ready, running, fresh)
                    n = 1 if fresh else LOOP_FRAMES  # single frames until every stream has begun
                    if running:
                        if not ahead:
                            self._phase("step")
                            self.frames.step(n)
                        # the next admission's prompts, built while the step runs (none while the batch is full)
                        room = self.slots - len(running)
                        if self._take(waiting) and len(ready) < room:
                            self._phase("build")
                            self._build(waiting, ready, room)
                    ahead = False
                    if running and not fresh:
                        cancelled = {slot for slot, request in running.items() if request.cancel.is_set()}
                        if self._may_step_ahead(len(self.frames.stepping_on() - cancelled), waiting, ready):
                            self._phase("step")  # before this step's read-back: the GPU goes on meanwhile
                            self.frames.step(LOOP_FRAMES)
                            ahead = True
                    if decoded is not None:
                        self._phase("handout")
                        self._hand_out(decoded)
                        decoded = None
                    if not running:
                        continue
                    self._phase("collect")
                    collected = self.frames.collect()  # this iteration's step, whatever was queued since
                    cancelled = {slot for slot, request in running.items() if request.cancel.is_set()}
                    ends = {slot: ended or slot in cancelled for slot, (_, ended) in collected.items()}
                    codes = np.zeros((self.frames.bucket, n, 16), np.int64)  # zeros: free rows, frames past an end
                    for slot, (new, _) in collected.items():
                        codes[slot, :len(new)] = new
                        if len(new):
                            fresh.discard(slot)
                    self._phase("decode")
                    decoded = self._decode(codes, {slot: (len(collected[slot][0]), running[slot].decoder_state)
                                                   for slot, end in ends.items() if end and running[slot].keep})
                    decoded.handouts = [(slot, running[slot], new, ends[slot]) for slot, (new, _) in collected.items()]
                    for slot, end in ends.items():
                        if end:  # the slot is free for the next admission; its last audio is in ``decoded``
                            self.frames.release(slot)
                            del running[slot]
                            fresh.discard(slot)
                except Exception as e:  # a device failure: every caller still waiting hears of it
                    if self._decode_stream is not None:  # saves into callers' holders may still be queued
                        with contextlib.suppress(Exception):
                            self._decode_stream.synchronize()
                    owed = {id(r): r for r in running.values()}
                    owed.update((id(r), r) for _, r, _, _ in (decoded.handouts if decoded else []))
                    for request in owed.values():
                        request.outbox.put(e)
                    for slot in list(running):
                        self.frames.release(slot)
                    running.clear()
                    fresh.clear()
                    decoded = None
                    ahead = False

    def _may_step_ahead(self, going_on: int, waiting: list[_Request], ready: list[tuple[_Request, Prompt]]) -> bool:
        """Whether to queue the next iteration's step before this one's codes are read back and the host work
        that follows (handouts, collecting them, the decode's launch, releases): the GPU then goes on stepping
        instead of waiting for that work. Only when ``going_on`` streams have frames left to step (not cancelled,
        not at their last frame; an EOS in the step not read back yet is not known) and no request could join
        that step: none waits, or no slot frees for it (a stream admitted after the step is queued waits an
        iteration more)."""
        if not going_on:
            return False
        return not (self._take(waiting) or ready) or going_on == self.slots

    def _note_rows_written(self) -> None:
        """Make the next decodes wait for the writes to the decoder state's rows queued on the loop's stream so
        far (admissions), and for nothing queued after (the steps, which decodes run beside)."""
        if self._decode_stream is not None:
            self._rows_written = torch.cuda.current_stream(self.engine.device).record_event()

    def _phase(self, name: str) -> None:
        if self.phase_timer is not None:
            self.phase_timer(name)

    def _warmup(self, progress: Callable[[int, int, str], None] | None) -> float:
        """Every bucket's frame step and every decode the loop can ask of it (1..LOOP_FRAMES frames: an end
        cuts an iteration's decode), captured before the loop starts, with ``progress(done, total, what)``
        told before each piece and once at the end; returns the seconds taken."""
        t0 = time.perf_counter()
        tasks = self.frames.warmup_tasks() + [
            (f"the {bucket}-stream decodes", lambda bucket=bucket: [self._decoder(bucket, n)
                                                                     for n in range(1, LOOP_FRAMES + 1)])
            for bucket in self.frames.buckets]
        with torch.inference_mode():
            for done, (what, capture) in enumerate(tasks):
                if progress is not None:
                    progress(done, len(tasks), what)
                capture()
        if progress is not None:
            progress(len(tasks), len(tasks), "done")
        return time.perf_counter() - t0

    def _take(self, waiting: list[_Request]) -> bool:
        """Move the requests sent so far into ``waiting``, without blocking; whether any is waiting."""
        while True:
            try:
                waiting.append(self._requests.get_nowait())
            except queue.Empty:
                return bool(waiting)

    def _build(self, waiting: list[_Request], ready: list[tuple[_Request, Prompt]], room: int) -> None:
        """Build the prompts of waiting requests, in order, until ``room`` are ready, all in one pass
        (``build_prompts``); a request that cannot run (its text or voice is refused, its prompt does not fit
        the slots) hears why and is dropped."""
        taken = []
        while waiting and len(ready) + len(taken) < room:
            taken.append(waiting.pop(0))
        if not taken:
            return
        eng = self.engine
        prompts = build_prompts(eng.model.talker, eng.config, eng.tokenizer, [(r.voice, r.text) for r in taken])
        for request, prompt in zip(taken, prompts, strict=True):
            try:
                if isinstance(prompt, Exception):
                    raise prompt
                self.frames.state.check(prompt)
            except Exception as e:  # the caller's error (bad text or voice, too long): only its own
                request.outbox.put(e)
                continue
            ready.append((request, prompt))

    def _admit(self, waiting: list[_Request], ready: list[tuple[_Request, Prompt]], running: dict[int, _Request],
               fresh: set[int]) -> None:
        """Move ready requests (their prompts built now if they are not yet) into free slots, prefilled
        together; a failed prefill reaches the callers it was for. Into an idle batch, requests that come while
        the prompts are built join too: a burst of callers, arriving over tens of milliseconds, is admitted in
        one prefill instead of its first caller alone and the rest an iteration later; a lone request waits for
        nothing, and running streams never wait for arrivals."""
        free = self.slots - len(running)
        self._build(waiting, ready, free)
        while not running and len(ready) < free and self._take(waiting):
            self._build(waiting, ready, free)
        joining = [request for request, _ in ready[:free]]
        prompts = [prompt for _, prompt in ready[:free]]
        del ready[:free]
        if not joining:
            return
        slots: list[int] = []
        try:
            slots = self.frames.add_many([(prompt, r.sampling, r.seed, r.max_frames)
                                          for prompt, r in zip(prompts, joining, strict=True)])
            if self._decode_stream is not None:  # a decode may still read and write these rows
                torch.cuda.current_stream(self.engine.device).wait_stream(self._decode_stream)
            states = [request.decoder_state for request in joining]
            silent = [slot for slot, state in zip(slots, states, strict=True) if state is None]
            held = [(slot, state) for slot, state in zip(slots, states, strict=True) if state is not None]
            if silent:
                self.decoder_state.clear_rows(on_device(silent, self.engine.device))
            if held:
                self.decoder_state.put_rows(on_device([slot for slot, _ in held], self.engine.device),
                                            [state for _, state in held])
            self._note_rows_written()
        except Exception as e:  # a device failure during prefill or the rows' writes
            for slot in slots:
                self.frames.release(slot)
            for request in joining:
                request.outbox.put(e)
            return
        for slot, request in zip(slots, joining, strict=True):
            running[slot] = request
            fresh.add(slot)

    def _decode(self, codes: np.ndarray, saves: dict[int, tuple[int, DecoderState]]) -> _Decoded:
        """Launch the decode of ``codes`` int64 [bucket, n, 16] through the decoder state's rows [0, bucket),
        on the decode stream after the admissions' writes to these rows (``_note_rows_written``; not after the
        steps queued since); the audio (float32 [bucket, n * 1920], in
        pieces) lands in host memory when the returned record's event completes. ``saves[row] = (k,
        holder)``: the stream of that row ended after k of these frames and continues later, so its row goes
        into ``holder`` right after frame k; the decode is cut there, so no frame past its end reaches the
        saved state."""
        bucket, n = codes.shape[:2]
        stream, cuda = self._decode_stream, self._decode_stream is not None
        if self._rows_written is not None:
            stream.wait_event(self._rows_written)
        cuts = sorted({0, n, *(k for k, _ in saves.values())})
        pieces = []
        with torch.cuda.stream(stream) if cuda else contextlib.nullcontext():
            codes = on_device(codes, self.engine.device)
            for start, stop in zip(cuts, cuts[1:] + [n], strict=True):
                for row, (k, holder) in saves.items():
                    if k == start:
                        holder.copy_(self.decoder_state.rows(row, row + 1))
                if stop > start:
                    audio = self._decoder(bucket, stop - start)(codes[:, start:stop])  # rewritten by its next replay
                    host = torch.empty(audio.shape, dtype=audio.dtype, pin_memory=cuda)
                    pieces.append(host.copy_(audio, non_blocking=cuda))  # queued before any next replay
            done = stream.record_event() if cuda else None
        return _Decoded(pieces, done, [])

    @staticmethod
    def _hand_out(decoded: _Decoded) -> None:
        """Each stream's frames and audio of a finished decode to its caller's outbox."""
        if decoded.done is not None:
            decoded.done.synchronize()
        audio = np.concatenate([piece.numpy() for piece in decoded.pieces], axis=1)
        for slot, request, new, ended in decoded.handouts:
            request.outbox.put((new, audio[slot, :len(new) * SAMPLES_PER_FRAME], ended))

    def _decoder(self, bucket: int, n: int) -> DecodeGraph:
        """The decode of n frames over rows [0, bucket), captured on first use."""
        if (bucket, n) not in self._decoders:
            decoder, device = self.engine.decoder, self.engine.device
            rows = self.decoder_state.rows(0, bucket)
            held = decoder.new_state(bucket, device)
            held.copy_(rows)  # capturing decodes on these rows: keep what their streams hold
            graph = DecodeGraph(decoder, rows, n, device, self.frames.use_graphs, self._pool, self._capture_stream)
            rows.copy_(held)
            self._pool = self._pool or graph.graph.pool
            self._decoders[bucket, n] = graph
        return self._decoders[bucket, n]
