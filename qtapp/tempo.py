"""Playback speed for one speaking job: streamed chunks in, the same chunks at another tempo out.

``ChunkTempo(speed)`` wraps ``engine.audio.tempo.TimeStretcher`` (tempo change without pitch change).
Each segment (sentence) gets its own stretcher, flushed when the next segment's first chunk
arrives or the call ends, so every output chunk holds only audio of the segment it is tagged with
and the player's per-sample segment marks keep the highlighting in step with what is heard. At
speed 1.0 chunks pass through untouched.
"""

from __future__ import annotations

from dataclasses import replace

from engine.audio.chunks import Chunk
from engine.audio.tempo import TimeStretcher


class ChunkTempo:
    def __init__(self, speed: float):
        self.speed = speed
        self._stretcher = TimeStretcher(speed) if speed != 1.0 else None
        self._last: Chunk | None = None  # the latest input chunk of the segment being stretched

    def feed(self, chunk: Chunk) -> list[Chunk]:
        """The output that is ready after ``chunk``; the last one carries ``chunk.final``."""
        if self._stretcher is None:
            return [chunk]
        ready = []
        if self._last is not None and chunk.segment != self._last.segment:
            ready += self.finish()
        stretched = self._stretcher.process(chunk.samples)
        self._last = chunk
        if len(stretched):
            ready.append(replace(chunk, samples=stretched, final=False))
        if chunk.final:
            ready += self.finish()
        return ready

    def finish(self) -> list[Chunk]:
        """The rest of the current segment (call when the stream ends without a final chunk)."""
        if self._stretcher is None or self._last is None:
            return []
        tail = self._stretcher.flush()
        last, self._last = self._last, None
        self._stretcher = TimeStretcher(self.speed)
        return [replace(last, samples=tail)]
