"""A ``BatchedStreams`` caller's side: ``Call`` is a caller's stream and ``Request`` one of its segments, as sent to
the loop thread; ``Chunker`` regroups what the loop thread hands out into the caller's chunk sizes; ``LoopOutbox``
carries those handouts to a coroutine on an asyncio event loop (a thread's caller uses a plain ``queue.Queue``)."""

from __future__ import annotations

import asyncio
import queue
import threading
import time
from dataclasses import dataclass

import numpy as np

from engine.core.chunks import SAMPLE_RATE, SAMPLES_PER_FRAME, Chunk, closing_chunk
from engine.core.codec.decoder import DecoderState
from engine.core.sampling import Sampling
from engine.core.speech_plan import Plan
from engine.core.voice import Voice


@dataclass(slots=True)
class Call:
    """One caller's stream: its plan, and the 1-row decoder state its audio runs on from, when it needs one."""

    plan: Plan
    decoder_state: DecoderState | None
    cancel: threading.Event


@dataclass(slots=True)
class Request:
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
    outbox: queue.Queue | LoopOutbox  # (codes int64 [k, 16], audio float32 [k * 1920], ended, warning) per
    # iteration, or an error
    cancel: threading.Event


class Chunker:
    """A caller's side of what the loop thread hands out, segment by segment: (codes, audio, ended, warning) per
    iteration
    regrouped into chunks of the caller's sizes (``first_chunk_frames`` first, then ``chunk_frames``), or an error
    raised."""

    def __init__(self, t0: float, first_chunk_frames: int, chunk_frames: int):
        self.t0, self.size, self.chunk_frames = t0, first_chunk_frames, chunk_frames
        self.last: Chunk | None = None
        self.segment_ended = False

    def start(self, index: int, segment, last: bool) -> None:
        self.index, self.segment, self.last_segment = index, segment, last
        self.pending, self.held, self.frame = [], 0, 0  # audio received but not yet given out, and its frames
        self.segment_ended = False
        self.codes: list[np.ndarray] = []  # the segment's frames so far (engine.core.context takes them)
        self.warning: str | None = None  # why the segment was cut, once it was

    def take(self, item) -> list[Chunk]:
        """The chunks that one handout completes."""
        if isinstance(item, BaseException):
            raise item
        codes, audio, ended, warning = item
        self.codes.append(codes)
        self.warning = self.warning or warning
        self.pending.append(audio)
        self.held += len(codes)
        self.segment_ended = ended
        chunks = []
        if ended and warning is not None and not self.held:  # cut where a chunk had just ended: an empty piece
            self.last = Chunk(np.zeros(0, np.float32), SAMPLE_RATE, self.frame, 0, self.index,
                              (self.segment.start, self.segment.end), time.perf_counter() - self.t0,
                              self.last_segment, warning)
            return [self.last]
        while self.held >= self.size or (ended and self.held):
            take = min(self.size, self.held)
            samples = np.concatenate(self.pending)
            self.pending, self.held = [samples[take * SAMPLES_PER_FRAME:]], self.held - take
            final = ended and not self.held and self.last_segment
            self.last = Chunk(samples[:take * SAMPLES_PER_FRAME], SAMPLE_RATE, self.frame, take, self.index,
                              (self.segment.start, self.segment.end), time.perf_counter() - self.t0, final,
                              warning if ended and not self.held else None)
            self.frame += take
            self.size = self.chunk_frames
            chunks.append(self.last)
        return chunks

    def closing(self) -> list[Chunk]:
        """The empty final chunk a stream ends with when its last chunk was not final (cut short)."""
        return [closing_chunk(self.last)] if self.last is not None and not self.last.final else []


class LoopOutbox:
    """An outbox that the loop thread fills from its thread and a coroutine on ``loop`` awaits."""

    def __init__(self, loop: asyncio.AbstractEventLoop):
        self._loop, self._queue = loop, asyncio.Queue()

    def put(self, item) -> None:
        try:
            self._loop.call_soon_threadsafe(self._queue.put_nowait, item)
        except RuntimeError:  # the event loop has closed: nobody is listening any more
            pass

    async def get(self):
        return await self._queue.get()
