"""A ``BatchedStreams`` caller's side: ``Chunker`` regroups what the loop thread hands out into the caller's chunk
sizes; ``LoopOutbox`` carries those handouts to a coroutine on an asyncio event loop (a thread's caller uses a plain
``queue.Queue``)."""

from __future__ import annotations

import asyncio
import time

import numpy as np

from engine.core.chunks import SAMPLE_RATE, SAMPLES_PER_FRAME, Chunk, closing_chunk


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
