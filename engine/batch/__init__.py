"""Many streams at once: ``frames`` (``BatchedFrames``, one batched frame loop whose streams join and leave
between steps; ``generate_batch``) and ``streams`` (``BatchedStreams``, ``Engine.stream`` for concurrent callers
through one loop thread that steps and decodes for all of them)."""

from engine.batch.frames import BatchedFrames, generate_batch
from engine.batch.streams import LOOP_FRAMES, BatchedStreams

__all__ = ["LOOP_FRAMES", "BatchedFrames", "BatchedStreams", "generate_batch"]
