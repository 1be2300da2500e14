"""Concurrent callers of one batched engine: ``BatchedStreams``, ``Engine.stream`` for many callers at once, on
threads of their own or on an asyncio event loop.

One loop thread steps a ``BatchedFrames`` for every caller and decodes the new frames too: one ``decode_chunk``
per iteration over the same rows as the step, row = slot, on a GPU on a CUDA stream of its own while the next
iteration steps. Callers (threads, or coroutines on an event loop) send requests and regroup what they receive into
their chunk sizes.
"""

from __future__ import annotations

import asyncio
import queue
import threading
import time
from collections.abc import AsyncIterator, Callable, Iterator

import numpy as np
import torch

from engine.core.chunks import Chunk
from engine.core.codec.decoder import SpeechDecoder
from engine.core.context import VoiceContext
from engine.core.frames.batched.callers import Call, Chunker, LoopOutbox, Request
from engine.core.frames.batched.frames import BatchedFrames
from engine.core.frames.batched.loop_decoder import LoopDecoder
from engine.core.frames.batched.loop_state import LOOP_FRAMES, LoopState
from engine.core.model.talker import Talker
from engine.core.prompts import Prompt
from engine.core.sampling import Sampling
from engine.core.speech_plan import Plan
from engine.core.voice import Voice

_CLOSE = object()  # put on the request queue by ``close``: wakes an idle loop to end


def _first_or_error(build: Callable[[list], list], requests: list):
    """The first of ``build(requests)``, or the exception it raised."""
    try:
        return build(requests)[0]
    except Exception as e:
        return e


class BatchedStreams:
    """``Engine.stream`` for many callers at once (``Engine.batched``); safe to call ``stream`` from any number of
    threads and ``stream_async`` from coroutines on any event loop (beyond ``slots`` callers, they wait).

    A caller sends one request per segment of its plan and regroups what it receives into its chunk sizes
    (``Chunker``). One loop thread (``_run_loop``) runs a ``BatchedFrames`` for every caller and decodes too
    (``LoopDecoder``, a ``DecoderState`` row per slot): each iteration (``_iterate``) steps every running slot the
    same number of frames and decodes their new frames in one ``decode_chunk`` over the step's bucket of rows (a
    CUDA graph per (bucket, frames) on a GPU). Rows of free slots and frames after a stream's end decode zeros,
    which reach no caller and no other row. On a GPU the decode runs on a CUDA stream of its own, beside the next
    iteration's step (the decode's convolutions fill the GPU where the step's many small kernels leave it idle).

    A caller whose audio runs on from earlier codes (several segments, or a reference's codes) keeps its decoder
    state in a 1-row holder, copied into its slot's row when a segment starts and back when it ends, so its audio
    runs on exactly whichever slots its segments get; the other callers' rows start from silence.

    ``phase_timer``, when set (a profiler), is called by the loop thread with the name of each phase as it
    begins: "wait", "admit", "step", "build", "handout", "collect", "decode" (see the methods of those names)."""

    def __init__(self, talker: Talker, decoder: SpeechDecoder, plan: Callable[..., Plan],
                 build_prompts: Callable[[list[tuple[Voice, str]]], list[Prompt | Exception]], slots: int,
                 graphs: bool | None = None, warmup: bool | None = None,
                 warmup_progress: Callable[[int, int, str], None] | None = None,
                 prompt_positions: Callable[[Plan], Callable[[Voice, str], int | None]] | None = None):
        """Made by ``Engine.batched``: ``plan(text, voice, sampling, max_frames, pronunciation=...)`` checks and plans
        a call as the engine does; ``build_prompts`` turns [(voice, text)] into a prompt or an error each.
        ``warmup`` (default: with graphs): capture every batch size before serving, minutes for a large model the
        first time; ``warmup_progress(done, total, what)`` hears of each piece as it starts. ``prompt_positions(plan)``:
        how a call's later segments measure their prompts, to carry its voice as the engine does
        (``engine.core.context``; None: they carry none)."""
        self.slots, self.decoder, self._plan, self._build_prompts = slots, decoder, plan, build_prompts
        self._prompt_positions = prompt_positions
        self.device = talker.codec_head.weight.device
        self.frames = BatchedFrames(talker, slots, graphs=graphs)
        self.decoding = LoopDecoder(decoder, slots, self.device, self.frames.use_graphs)
        self.decoder_state = self.decoding.state  # a row per slot
        # captured up front by default: a capture while streams run stalls them (and steps their rows)
        self.warmup_seconds = (self._warmup(warmup_progress) if (self.frames.use_graphs if warmup is None else warmup)
                               else 0.0)
        self._requests: queue.Queue = queue.Queue()
        self.phase_timer: Callable[[str], None] | None = None
        self._closed = False
        self._loop = threading.Thread(target=self._run_loop, name="orator-batch", daemon=True)
        self._loop.start()

    def close(self, timeout: float | None = None) -> bool:
        """End the loop thread once the requests it holds are done (a server shutting down cancels them first);
        a stream begun afterwards is refused. Whether the thread ended within ``timeout`` seconds."""
        self._closed = True
        self._requests.put(_CLOSE)
        self._loop.join(timeout)
        return not self._loop.is_alive()

    # ---- caller side ------------------------------------------------------------------------------
    def stream(self, text: str, voice, chunk_frames: int = 4, first_chunk_frames: int = 1,
               sampling: Sampling | None = None, cancel: threading.Event | None = None,
               max_frames: int | None = None, pronunciation=None) -> Iterator[Chunk]:
        t0 = time.perf_counter()
        stop = threading.Event()  # set when this generator is closed early, so the slot frees at once
        try:
            call = self._begin(text, voice, sampling, cancel or stop, max_frames, pronunciation)
            chunker = Chunker(t0, first_chunk_frames, chunk_frames)
            for outbox in self._segments(call, chunker, queue.Queue):
                while not chunker.segment_ended:
                    yield from chunker.take(outbox.get())
            if not call.cancel.is_set():
                yield from chunker.closing()
        finally:
            stop.set()

    async def stream_async(self, text: str, voice, chunk_frames: int = 4, first_chunk_frames: int = 1,
                           sampling: Sampling | None = None, cancel: threading.Event | None = None,
                           max_frames: int | None = None, pronunciation=None) -> AsyncIterator[Chunk]:
        """``stream`` for a caller on an asyncio event loop (a server's request), without a thread of its own: the
        request goes to the loop thread at once, and what the loop thread hands out comes back through the event
        loop (a worker thread per stream would contend for the GIL with the event loop in a burst of requests, and
        delay their admission: docs/benchmarks.md#async-handoff). A cloned voice, whose reference may need encoding
        or decoding, is prepared on a worker thread."""
        t0 = time.perf_counter()
        stop = threading.Event()
        loop = asyncio.get_running_loop()
        try:
            if getattr(voice, "kind", None) == "clone":
                call = await asyncio.to_thread(self._begin, text, voice, sampling, cancel or stop, max_frames,
                                               pronunciation)
            else:
                call = self._begin(text, voice, sampling, cancel or stop, max_frames, pronunciation)
            chunker = Chunker(t0, first_chunk_frames, chunk_frames)
            for outbox in self._segments(call, chunker, lambda: LoopOutbox(loop)):
                while not chunker.segment_ended:
                    for chunk in chunker.take(await outbox.get()):
                        yield chunk
            if not call.cancel.is_set():
                for chunk in chunker.closing():
                    yield chunk
        finally:
            stop.set()

    def _begin(self, text: str, voice, sampling: Sampling | None, cancel: threading.Event,
               max_frames: int | None, pronunciation=None) -> Call:
        """A caller's stream planned (checked, cut into segments, the pronunciation rules applied, its seed
        drawn), with the 1-row decoder state its audio runs on from when it needs one (several segments, or a
        reference's codes, decoded into it now)."""
        if self._closed:
            raise RuntimeError("these batched streams are closed")
        plan = self._plan(text, voice, sampling, max_frames, pronunciation=pronunciation)
        decoder_state = None  # only a stream whose audio runs on from earlier codes needs a state between segments
        if plan.keeps_decoder_state:
            decoder_state = self.decoder.new_state(1, self.device)
        if plan.voice.in_context:
            with torch.inference_mode():
                self.decoder.decode_chunk(torch.as_tensor(plan.voice.ref_codes, device=self.device)[None],
                                          decoder_state)
        return Call(plan, decoder_state, cancel)

    def _segments(self, call: Call, chunker: Chunker, new_outbox: Callable[[], queue.Queue | LoopOutbox]
                  ) -> Iterator[queue.Queue | LoopOutbox]:
        """Each segment of ``call`` sent to the loop thread in turn, with ``chunker`` started on it: yields the
        outbox (``new_outbox()``) the loop thread answers that segment into, for the caller to read until
        ``chunker.segment_ended``; no further segment once the call is cancelled."""
        plan = call.plan
        context = VoiceContext(plan.voice, self._prompt_positions(plan) if self._prompt_positions else None)
        for index, segment in enumerate(plan.segments):
            outbox = new_outbox()
            last = index == len(plan.segments) - 1
            voice = context.voice_for(segment.speech, plan.frame_budget(segment))
            self._requests.put(Request(voice, segment.speech, plan.sampling, plan.segment_seed(index),
                                        plan.frame_budget(segment), call.decoder_state, not last, outbox,
                                        call.cancel))
            chunker.start(index, segment, last=last)
            yield outbox
            if call.cancel.is_set():
                return
            context.offer(segment.speech, chunker.codes, chunker.warning)

    # ---- the loop thread --------------------------------------------------------------------------
    def _run_loop(self) -> None:
        """One iteration after another (``_iterate``), for as long as the process runs; a failure goes to the
        callers it concerns (``_fail``), never ends the loop."""
        state = LoopState()
        while True:
            self._phase("wait")
            if state.idle:
                if self._closed:
                    return
                state.waiting.append(self._requests.get())  # block until a request comes
            self._take(state.waiting)
            state.waiting[:] = [r for r in state.waiting if r is not _CLOSE]
            if state.idle:
                continue
            with torch.inference_mode():
                try:
                    self._iterate(state)
                except Exception as e:  # a device failure: every caller still waiting hears of it
                    self._fail(state, e)

    def _iterate(self, s: LoopState) -> None:
        """Admit waiting requests into free slots, step, build the prompts of the requests that came meanwhile
        (while the step runs on the GPU), queue the next step at once when nobody could join it, hand out the
        previous iteration's audio (before the admission when there is one), collect, launch this iteration's
        decode."""
        if not s.ahead:  # (a stream admitted now would miss the step queued ahead: it waits one)
            if s.decoded is not None and (s.waiting or s.ready) and len(s.running) < self.slots:
                self._hand_out_previous(s)  # before an admission, whose prefill would hold this audio back
            self._phase("admit")
            self._admit(s.waiting, s.ready, s.running, s.fresh)
        n = s.frames_per_step
        if s.running:
            if not s.ahead:
                self._phase("step")
                self.frames.step(n)
            # the next admission's prompts, built while the step runs (none while the batch is full)
            room = self.slots - len(s.running)
            if self._take(s.waiting) and len(s.ready) < room:
                self._phase("build")
                self._build(s.waiting, s.ready, room)
        s.ahead = self._step_ahead(s)
        self._hand_out_previous(s)
        if s.running:
            self._collect_and_decode(s, n)

    def _step_ahead(self, s: LoopState) -> bool:
        """Queue the next iteration's step now, before this one is read back, when ``_may_step_ahead``; whether
        it was."""
        if not s.running or s.fresh:
            return False
        going_on = self.frames.stepping_on() - self._cancelled(s.running)
        if not self._may_step_ahead(len(going_on), s.waiting, s.ready):
            return False
        self._phase("step")  # before this step's read-back: the GPU goes on meanwhile
        self.frames.step(LOOP_FRAMES)
        return True

    def _hand_out_previous(self, s: LoopState) -> None:
        """The previous iteration's decoded audio to its callers, if any is owed."""
        if s.decoded is not None:
            self._phase("handout")
            self.decoding.hand_out(s.decoded)
            s.decoded = None

    def _collect_and_decode(self, s: LoopState, n: int) -> None:
        """Read back this iteration's step (of ``n`` frames), launch the decode of the new frames, and free the
        slots of the streams that ended or whose callers left (their last audio is in the launched decode)."""
        self._phase("collect")
        collected = self.frames.collect()  # this iteration's step, whatever was queued since
        cancelled = self._cancelled(s.running)  # read again: a caller may have left meanwhile
        ends = {slot: ended or slot in cancelled for slot, (_, ended) in collected.items()}
        codes = np.zeros((self.frames.bucket, n, 16), np.int64)  # zeros: free rows, frames past an end
        for slot, (new, _) in collected.items():
            codes[slot, :len(new)] = new
            if len(new):
                s.fresh.discard(slot)
        self._phase("decode")
        s.decoded = self.decoding.launch(codes, {slot: (len(collected[slot][0]), s.running[slot].decoder_state)
                                         for slot, end in ends.items() if end and s.running[slot].keep})
        s.decoded.handouts = [(slot, s.running[slot], new, ends[slot], self.frames.warning(slot))
                              for slot, (new, _) in collected.items()]
        for slot, end in ends.items():
            if end:
                self.frames.release(slot)
                del s.running[slot]
                s.fresh.discard(slot)

    def _fail(self, s: LoopState, error: Exception) -> None:
        """Give ``error`` to every caller with a stream running or audio owed, and start afresh with every slot
        free."""
        self.decoding.synchronize()  # saves into callers' holders may still be queued
        owed = {id(r): r for r in s.running.values()}
        owed.update((id(r), r) for _, r, *_ in (s.decoded.handouts if s.decoded else []))
        for request in owed.values():
            request.outbox.put(error)
        for slot in list(s.running):
            self.frames.release(slot)
        s.running.clear()
        s.fresh.clear()
        s.decoded = None
        s.ahead = False

    def _may_step_ahead(self, going_on: int, waiting: list[Request], ready: list[tuple[Request, Prompt]]) -> bool:
        """Whether to queue the next iteration's step before this one's codes are read back and the host work
        that follows (handouts, collecting them, the decode's launch, releases): the GPU then goes on stepping
        instead of waiting for that work. Only when ``going_on`` streams have frames left to step (not cancelled,
        not at their last frame; an EOS in the step not read back yet is not known) and no request could join
        that step: none waits, or no slot frees for it (a stream admitted after the step is queued waits an
        iteration more)."""
        if not going_on:
            return False
        return not (self._take(waiting) or ready) or going_on == self.slots

    @staticmethod
    def _cancelled(running: dict[int, Request]) -> set[int]:
        """The running slots whose callers have left."""
        return {slot for slot, request in running.items() if request.cancel.is_set()}

    def _phase(self, name: str) -> None:
        if self.phase_timer is not None:
            self.phase_timer(name)

    def _warmup(self, progress: Callable[[int, int, str], None] | None) -> float:
        """Every bucket's frame step and every decode the loop can ask of it (1..LOOP_FRAMES frames: an end
        cuts an iteration's decode), captured before the loop starts, with ``progress(done, total, what)``
        told before each piece and once at the end; returns the seconds taken."""
        t0 = time.perf_counter()
        tasks = self.frames.warmup_tasks() + self.decoding.warmup_tasks(self.frames.buckets, LOOP_FRAMES)
        with torch.inference_mode():
            for done, (what, capture) in enumerate(tasks):
                if progress is not None:
                    progress(done, len(tasks), what)
                capture()
        if progress is not None:
            progress(len(tasks), len(tasks), "done")
        return time.perf_counter() - t0

    def _take(self, waiting: list[Request]) -> bool:
        """Move the requests sent so far into ``waiting``, without blocking; whether any is waiting."""
        while True:
            try:
                waiting.append(self._requests.get_nowait())
            except queue.Empty:
                return bool(waiting)

    def _build(self, waiting: list[Request], ready: list[tuple[Request, Prompt]], room: int) -> None:
        """Build the prompts of waiting requests, in order, until ``room`` are ready, all in one pass
        (``build_prompts``: a few device operations whatever their number); a request that cannot run (its text
        or voice is refused, its prompt does not fit the slots) hears why and is dropped. Prompts are built here
        on the loop thread, while a step runs, rather than on the callers' threads, whose many small PyTorch
        calls would contend with the loop thread for the GIL and slow every admission."""
        taken = []
        while waiting and len(ready) + len(taken) < room:
            taken.append(waiting.pop(0))
        if not taken:
            return
        build = self._build_prompts
        try:
            prompts = build([(r.voice, r.text) for r in taken])
        except Exception:  # failed as a whole: built one by one, each failure is its own request's
            prompts = [_first_or_error(build, [(r.voice, r.text)]) for r in taken]
        for request, prompt in zip(taken, prompts, strict=True):
            try:
                if isinstance(prompt, Exception):
                    raise prompt
                self.frames.state.check(prompt)
            except Exception as e:  # the caller's error (bad text or voice, too long): only its own
                request.outbox.put(e)
                continue
            ready.append((request, prompt))

    def _admit(self, waiting: list[Request], ready: list[tuple[Request, Prompt]], running: dict[int, Request],
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
        admitted = self._join(joining, prompts)
        if admitted is None and len(joining) > 1:  # failed together: alone, each failure is its own request's
            admitted = {}
            for request, prompt in zip(joining, prompts, strict=True):
                admitted.update(self._join([request], [prompt]) or {})
        for slot, request in (admitted or {}).items():
            running[slot] = request
            fresh.add(slot)

    def _join(self, joining: list[Request], prompts: list[Prompt]) -> dict[int, Request] | None:
        """Prefill ``joining`` into free slots together and set their decoder rows: the requests by slot, or None
        when that failed (every slot taken released again; a lone request hears why)."""
        slots: list[int] = []
        try:
            slots = self.frames.add_many([(prompt, r.sampling, r.seed, r.max_frames)
                                          for prompt, r in zip(prompts, joining, strict=True)])
            self.decoding.start_rows(slots, [request.decoder_state for request in joining])
        except Exception as e:  # a failure during prefill or the rows' writes
            for slot in slots:
                self.frames.release(slot)
            if len(joining) == 1:
                joining[0].outbox.put(e)
            return None
        return dict(zip(slots, joining, strict=True))
