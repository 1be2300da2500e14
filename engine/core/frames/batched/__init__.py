"""Many streams at once: ``frames`` (``BatchedFrames``, one batched frame loop whose streams join and leave
between steps), ``prefill`` (the joiners' prompts prefilled together, from graphs bucketed by rows and positions)
and ``streams`` (``BatchedStreams``, ``Engine.stream`` for concurrent callers through one loop thread that steps
and decodes for all of them; its parts: ``callers``, ``loop_state``, ``loop_decoder``)."""

from engine.core.frames.batched.frames import BatchedFrames
from engine.core.frames.batched.loop_state import LOOP_FRAMES
from engine.core.frames.batched.streams import BatchedStreams

__all__ = ["LOOP_FRAMES", "BatchedFrames", "BatchedStreams"]
