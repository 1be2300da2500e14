"""The request queue in front of the engine: admission, queue positions, worker threads, cancellation.

The engine is reached through one narrow interface, ``StreamBackend``: ``capacity`` (how many
streams it generates at once) and either ``run(job, cancel)``, a blocking iterator of ``engine.Chunk``
that stops within one chunk once ``cancel`` is set, run on a worker thread per job, or ``run_async(job,
cancel)``, the same as an async iterator, run as a task on the event loop. ``EngineBackend`` wraps
``Engine.stream`` (capacity 1, one engine thread). ``BatchedBackend`` serves ``capacity`` streams at
once from the engine's batched frame loop, on the event loop: a burst of requests then wakes no thread
per request (see ``BatchedStreams.stream_async``). A job whose text is an ``engine.LiveText`` (a WebSocket session)
is spoken as its text arrives: ``Engine.stream_live``, or whole segments through the batched loop
(``engine.core.live_speech``).

``Scheduler.submit`` (on the event loop) admits a job or raises ``QueueFull``; the returned
``Ticket`` yields, as an async iterator, ``Queued(position)`` updates while it waits and then the
chunks. ``Ticket.cancel`` (a client that went away) frees its place or stops its generation.
``Scheduler.stalled`` says whether every slot has gone ``stall_s`` without a chunk while requests wait (the
server's readiness, ``/ready``).
"""

from __future__ import annotations

import asyncio
import logging
import math
import secrets
import threading
import time
from collections import deque
from collections.abc import AsyncIterator, Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Protocol

from engine import Chunk, Engine, LiveText, Sampling, Voice
from engine.core.live_speech import stream_live_batched
from engine.core.text.segments import Segment

log = logging.getLogger("orator.server")


@dataclass(frozen=True, slots=True)
class SpeechJob:
    """One utterance to generate: what ``Engine.stream`` needs."""

    # live text: a WebSocket session's (``server.speech_stream``), spoken as it arrives; segments: already cut, each
    # with what the server's pronunciation rules make it say (``server.speech``)
    text: str | list[Segment] | LiveText
    voice: Voice
    sampling: Sampling
    chunk_frames: int = 4
    first_chunk_frames: int = 1
    max_frames: int | None = None


WarmupProgress = Callable[[int, int, str], None]  # (pieces done, pieces in all, the piece starting now)


class StreamBackend(Protocol):
    """``capacity``, and ``run`` (on a worker thread) or ``run_async`` (on the event loop): see the module."""

    capacity: int


class EngineBackend:
    """Today's engine: one stream at a time."""

    capacity = 1

    def __init__(self, engine: Engine, progress: WarmupProgress | None = None):
        self.engine = engine
        if progress is not None:
            progress(0, 1, "the single-stream graphs")
        engine.warmup()  # on a GPU, capture the graphs before the first request rather than during it
        if progress is not None:
            progress(1, 1, "done")

    def run(self, job: SpeechJob, cancel: threading.Event) -> Iterator[Chunk]:
        sizes = dict(chunk_frames=job.chunk_frames, first_chunk_frames=job.first_chunk_frames, sampling=job.sampling,
                     cancel=cancel, max_frames=job.max_frames)
        if isinstance(job.text, LiveText):  # no rules: server.speech refuses them for live text
            return self.engine.stream_live(job.text, job.voice, **sizes)
        # the chunks a client asked for, as the batched backend sends them: the same request streams the same bytes
        return self.engine.stream(job.text, job.voice, largest_chunk_frames=job.chunk_frames, **sizes)


class BatchedBackend:
    """Many streams at once: ``slots`` requests advance together through the engine's batched frame loop."""

    def __init__(self, engine: Engine, slots: int, streams=None, progress: WarmupProgress | None = None):
        """``streams``: an engine.core.frames.batched.BatchedStreams of ``slots`` slots to serve from (one is made,
        every batch size captured before serving and ``progress`` told how far that is, when not given)."""

        self.streams = (streams if streams is not None
                        else engine.batched(slots, warmup=True, warmup_progress=progress))
        self.capacity = self.streams.slots
        self.defaults = engine.defaults

    def close(self) -> None:
        """End the batched loop's thread (it finishes what it holds: ``Scheduler.shutdown`` cancels that first)."""
        self.streams.close(timeout=0)

    def run_async(self, job: SpeechJob, cancel: threading.Event) -> AsyncIterator[Chunk]:
        if isinstance(job.text, LiveText):  # whole segments, each a request of the loop (engine.core.live_speech)
            return stream_live_batched(self.streams, job.text, job.voice, job.sampling or self.defaults,
                                       job.chunk_frames, job.first_chunk_frames, cancel, job.max_frames)
        return self.streams.stream_async(job.text, job.voice, chunk_frames=job.chunk_frames,
                                         first_chunk_frames=job.first_chunk_frames, sampling=job.sampling,
                                         cancel=cancel, max_frames=job.max_frames)


def backend_factory(batch: int):
    """``make_backend`` for ``create_app``: one stream at a time, or ``batch`` streams batched."""
    if batch <= 1:
        return EngineBackend
    return lambda engine, progress=None: BatchedBackend(engine, batch, progress=progress)


class QueueFull(Exception):
    """Every generation slot is busy and the waiting line is at its limit."""


class LimitReached(Exception):
    """A stream stopped by one of the scheduler's limits: the audio of one request, or the audio its client has
    left unread (a client that does not read must not hold a slot and its audio in memory)."""

    def __init__(self, message: str, code: str):
        super().__init__(message)
        self.code = code


@dataclass(frozen=True, slots=True)
class StreamLimits:
    """Seconds of audio one request may produce, and may leave unread by its client before it is stopped; none
    unless given (the server's come from ``ServerSettings``)."""

    max_audio_s: float = math.inf
    max_unread_audio_s: float = math.inf


@dataclass(frozen=True, slots=True)
class Queued:
    position: int  # 1 = next to start


_END = object()


class Ticket:
    """One admitted job: its place in line, its chunks as they come, and its cancellation."""

    def __init__(self, ticket_id: str, job: SpeechJob, scheduler: Scheduler):
        self.id, self._scheduler = ticket_id, scheduler
        self.job: SpeechJob | None = job  # dropped once finished: a kept status must not pin a voice's audio
        self.cancel_event = threading.Event()
        self.submitted = time.perf_counter()
        self.started: float | None = None  # when generation began
        self.first_audio: float | None = None
        self.finished: float | None = None
        self.audio_seconds = 0.0
        self.unread_seconds = 0.0  # audio handed to the ticket and not yet taken by its reader
        self.frames = 0
        self.warnings: list[dict] = []  # segments cut by the engine's runaway guard: {segment, message}
        self.state = "queued"  # queued | running | done | cancelled | failed
        self.progressed = 0.0  # when it was submitted, started or last produced a chunk, on its scheduler's clock
        self.announced_position = 0  # the last Queued position sent
        self._events: asyncio.Queue = asyncio.Queue()

    @property
    def position(self) -> int:
        """1-based place in the waiting line; 0 once generating or finished."""
        return self._scheduler.position_of(self)

    def cancel(self) -> None:
        self._scheduler.cancel(self)

    async def events(self) -> AsyncIterator[Queued | Chunk]:
        """``Queued`` updates, then every chunk; raises the backend's error if generation failed."""
        while True:
            event = await self._events.get()
            if event is _END:
                return
            if isinstance(event, BaseException):
                raise event
            if isinstance(event, Chunk):
                self.unread_seconds -= event.duration
            yield event

    def status(self) -> dict:
        now = time.perf_counter()
        ttfa = None if self.first_audio is None else round(self.first_audio - self.submitted, 4)
        return {"id": self.id, "state": self.state, "queue_position": self.position,
                "queued_seconds": round((self.started or now) - self.submitted, 4), "time_to_first_audio": ttfa,
                "audio_seconds": round(self.audio_seconds, 4), "frames": self.frames, "warnings": list(self.warnings)}

    # ---- called on the event loop by the scheduler ----------------------------------------------
    def _put(self, event) -> None:
        if isinstance(event, Chunk):
            self.first_audio = self.first_audio or time.perf_counter()
            self.audio_seconds += event.duration
            self.unread_seconds += event.duration
            self.frames += event.n_frames
            if event.warning is not None:
                self.warnings.append({"segment": event.segment, "message": event.warning})
                log.warning("speech %s: segment %d %s", self.id, event.segment, event.warning)
        self._events.put_nowait(event)

    def _drop_unread(self) -> None:
        """Forget the events nobody read (a stream stopped, or its reader gone): they must not stay in memory."""
        while not self._events.empty():  # the same queue: a reader may be waiting on it
            self._events.get_nowait()
        self.unread_seconds = 0.0


class Scheduler:
    def __init__(self, backend: StreamBackend, max_queue: int, keep_finished: int = 256,
                 limits: StreamLimits = StreamLimits(), id_prefix: str = "speech-", stall_s: float = 30.0,
                 clock: Callable[[], float] = time.monotonic):
        """``id_prefix`` starts every request id: servers sharing a front (Ray Serve's replicas) each need their
        own, or two of them would hand out the same id. ``stall_s``: how long every slot may go without a chunk
        while requests wait before the scheduler counts as stalled; ``clock`` times that (seconds)."""
        self.backend = backend
        self.stall_s, self._clock = stall_s, clock
        self.id_prefix = id_prefix
        self.max_queue = max_queue
        self.limits = limits
        self._executor = ThreadPoolExecutor(max_workers=backend.capacity, thread_name_prefix="orator-engine")
        self._waiting: deque[Ticket] = deque()
        self._running: set[Ticket] = set()
        self._recent: dict[str, Ticket] = {}  # by id, for the status endpoint
        self._finished: deque[str] = deque()  # the ids in _recent of finished tickets, oldest first
        self._keep_finished = keep_finished
        self._loop: asyncio.AbstractEventLoop | None = None
        self._tasks_by_ticket: dict[Ticket, asyncio.Task] = {}  # the jobs of a run_async backend, until they end
        self._closed = False  # shut down: nothing more starts

    # ---- on the event loop ----------------------------------------------------------------------
    def submit(self, job: SpeechJob) -> Ticket:
        if len(self._waiting) >= self.max_queue:
            raise QueueFull(f"{len(self._running)} generating and {len(self._waiting)} waiting")
        self._loop = asyncio.get_running_loop()
        # unguessable: anyone may ask a request's status by its id (``GET /v1/audio/speech/{id}``), key or not
        ticket = Ticket(f"{self.id_prefix}{secrets.token_urlsafe(12)}", job, self)
        ticket.progressed = self._clock()
        self._remember(ticket)
        self._waiting.append(ticket)
        self._pump()
        return ticket

    def cancel(self, ticket: Ticket) -> None:
        ticket.cancel_event.set()
        if ticket in self._waiting:
            self._waiting.remove(ticket)
            ticket.state = "cancelled"
            ticket.job = None
            ticket._put(_END)
            self._announce_positions()
        elif ticket in self._tasks_by_ticket:  # woken even if its backend never answers again
            self._tasks_by_ticket[ticket].cancel()

    def position_of(self, ticket: Ticket) -> int:
        try:
            return self._waiting.index(ticket) + 1
        except ValueError:
            return 0

    def get(self, ticket_id: str) -> Ticket | None:
        return self._recent.get(ticket_id)

    def status(self) -> dict:
        return {"capacity": self.backend.capacity, "running": len(self._running), "waiting": len(self._waiting),
                "max_queue": self.max_queue}

    def stalled(self) -> float | None:
        """Seconds that requests have waited while no slot started or produced a chunk, when that is at least
        ``stall_s`` with every slot held (nothing the server holds moves, and nothing new can start); else None."""
        if not self._waiting or len(self._running) < self.backend.capacity:
            return None
        # counted from when the longest waiting request came, if later: slots idle before anyone waited held nobody up
        moved = max(self._waiting[0].progressed, *(ticket.progressed for ticket in self._running))
        idle = self._clock() - moved
        return idle if idle >= self.stall_s else None

    def shutdown(self) -> None:
        """Cancel everything: the waiting jobs end without starting (a slot freed now starts nothing), the running
        ones are stopped."""
        self._closed = True
        while self._waiting:
            self.cancel(self._waiting[0])
        for ticket in list(self._running):
            ticket.cancel_event.set()
        for task in list(self._tasks_by_ticket.values()):
            task.cancel()
        self._executor.shutdown(wait=False, cancel_futures=True)
        close = getattr(self.backend, "close", None)
        if close is not None:
            close()

    def _pump(self) -> None:
        while not self._closed and self._waiting and len(self._running) < self.backend.capacity:
            ticket = self._waiting.popleft()
            self._running.add(ticket)
            ticket.state, ticket.started, ticket.progressed = "running", time.perf_counter(), self._clock()
            if hasattr(self.backend, "run_async"):
                task = self._loop.create_task(self._generate_async(ticket))
                self._tasks_by_ticket[ticket] = task
                task.add_done_callback(lambda task, ticket=ticket: self._task_done(ticket, task))
            else:
                self._executor.submit(self._generate, ticket)
        self._announce_positions()

    def _announce_positions(self) -> None:
        for position, ticket in enumerate(self._waiting, start=1):
            if ticket.announced_position != position:
                ticket.announced_position = position
                ticket._put(Queued(position))

    def _finish(self, ticket: Ticket, error: BaseException | None) -> None:
        if ticket not in self._running:
            return
        self._running.discard(ticket)
        ticket.finished = time.perf_counter()
        ticket.job = None
        self._finished.append(ticket.id)
        if error is not None:
            ticket.state = "failed"
            ticket._put(error)
        else:
            ticket.state = "cancelled" if ticket.cancel_event.is_set() else "done"
            if ticket.state == "cancelled":
                ticket._drop_unread()
        ticket._put(_END)
        self._pump()

    def _deliver(self, ticket: Ticket, chunk: Chunk) -> None:
        """Hand ``chunk`` to ``ticket`` (on the event loop), or stop the stream if a limit is reached: its
        generation is cancelled, its unread audio dropped, and its reader gets ``LimitReached``."""
        if ticket.cancel_event.is_set() or ticket not in self._running:
            return
        ticket._put(chunk)
        ticket.progressed = self._clock()
        limits = self.limits
        if ticket.audio_seconds > limits.max_audio_s:
            error = LimitReached(f"the request's audio passed the limit of {limits.max_audio_s:g} s; split the "
                                 "text into several requests", "audio_too_long")
        elif ticket.unread_seconds > limits.max_unread_audio_s:
            error = LimitReached(f"the client left more than {limits.max_unread_audio_s:g} s of audio unread; "
                                 "read the response as it streams", "client_too_slow")
        else:
            return
        ticket.cancel_event.set()
        ticket._drop_unread()
        self._finish(ticket, error)

    def _remember(self, ticket: Ticket) -> None:
        """Keep ``ticket`` for the status endpoint, forgetting the oldest finished ones beyond ``keep_finished``
        tickets in all (in constant time: a burst of requests each scanning them all would lengthen it)."""
        self._recent[ticket.id] = ticket
        while len(self._recent) > self._keep_finished and self._finished:
            del self._recent[self._finished.popleft()]

    def _task_done(self, ticket: Ticket, task: asyncio.Task) -> None:
        """Every end of a ``run_async`` job's task frees its slot, a task cancelled before it first ran included (its
        coroutine never starts, so no ``finally`` of its own runs): a slot left held is never given back."""
        self._tasks_by_ticket.pop(ticket, None)
        error = None if task.cancelled() else task.exception()
        self._finish(ticket, error)

    async def _generate_async(self, ticket: Ticket) -> None:
        """The chunks of ``ticket``'s stream to it; its backend's error raised (``_task_done`` hands it over)."""
        chunks = None
        try:
            chunks = self.backend.run_async(ticket.job, ticket.cancel_event)
            async for chunk in chunks:
                self._deliver(ticket, chunk)
                if ticket.cancel_event.is_set():
                    break
        except asyncio.CancelledError:  # cancelled with its ticket (Scheduler.cancel) or at shutdown
            pass
        finally:
            if chunks is not None:
                await chunks.aclose()  # a stream left early frees its engine slot now

    # ---- on an engine thread --------------------------------------------------------------------
    def _generate(self, ticket: Ticket) -> None:
        error, chunks = None, None
        try:
            chunks = self.backend.run(ticket.job, ticket.cancel_event)
            for chunk in chunks:
                self._loop.call_soon_threadsafe(self._deliver, ticket, chunk)
                if ticket.cancel_event.is_set():
                    break
        except Exception as e:  # handed to the request, which turns it into an API error
            error = e
        finally:
            try:
                if hasattr(chunks, "close"):
                    chunks.close()  # a generator left early releases what it holds (the engine lock) now
            finally:  # the slot is freed whatever closing did
                self._loop.call_soon_threadsafe(self._finish, ticket, error)
