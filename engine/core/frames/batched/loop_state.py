"""What a ``BatchedStreams`` loop thread holds between iterations (``LoopState``: requests waiting, ready and
running, the decode not yet handed out), and how many frames an iteration steps (``LOOP_FRAMES``)."""

from __future__ import annotations

from dataclasses import dataclass, field

from engine.core.frames.batched.callers import Request
from engine.core.frames.batched.loop_decoder import Decoded
from engine.core.prompts import Prompt

# frames per loop iteration once every stream has begun (1 before): fewer decodes and read-backs per frame, against
# a longer wait for a request arriving mid-iteration (docs/benchmarks.md#loop-frames)
LOOP_FRAMES = 8


@dataclass(slots=True)
class LoopState:
    """What the loop thread holds between iterations."""

    waiting: list[Request] = field(default_factory=list)  # taken from the queue, prompt not built yet
    ready: list[tuple[Request, Prompt]] = field(default_factory=list)  # prompt built and checked, for a slot
    running: dict[int, Request] = field(default_factory=dict)  # by slot
    fresh: set[int] = field(default_factory=set)  # running slots with no frame collected yet
    decoded: Decoded | None = None  # the previous iteration's decode, not yet handed out
    ahead: bool = False  # this iteration's step was queued by the last one, before its read-back

    @property
    def idle(self) -> bool:
        """Nothing to step, admit or hand out: the loop may block until a request comes."""
        return not self.running and not self.waiting and not self.ready and self.decoded is None

    @property
    def frames_per_step(self) -> int:
        """Single frames until every running stream has begun (its first audio soon), then ``LOOP_FRAMES``."""
        return 1 if self.fresh else LOOP_FRAMES
