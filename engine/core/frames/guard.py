"""The runaway guard: a segment that has not ended by its frame budget, or whose codes loop, is cut.

Every path (eager, single-stream graphs, batched) reads each frame's codes back to the host before decoding them
and hands them to its segment's ``FrameGuard``, which says how many of them to keep; the path stops the segment
there, as it would at EOS, and the guard's ``warning`` goes to the caller on the segment's last chunk
(``Chunk.warning``). Each cut is logged at debug level only: a long job can cut hundreds of segments, so callers
count them and tell the user once (``describe_cuts``). The guard is host code only, so the same frames are cut on
every path and the CPU tests exercise the code the GPU paths run.

A loop is code 0 (the semantic codebook) repeating a short pattern: over the last ``LOOP_WINDOW`` frames, each
frame equals the one ``p`` frames before it, for some period ``p`` up to ``LOOP_PERIOD``.
"""

from __future__ import annotations

import logging

import numpy as np

from engine.core.chunks import FRAME_RATE

log = logging.getLogger("engine")

# A period up to 0.8 s catches a stuck syllable or word (a syllable lasts 0.1-0.3 s) and a frozen frame (period 1).
LOOP_PERIOD = 10
# 5 s of exact repetition. Speech never repeats its semantic codes exactly for even a second (every phoneme changes
# them); only silence holds one code, and the longest pause inside a segment (a dash, an ellipsis, a paragraph's
# end: 1-2 s) is well under this, so a normal utterance never trips it; a sampled loop rarely repeats exactly,
# which the frame budget catches.
LOOP_WINDOW = 62
BUDGET_CUT = "cut at its frame budget"  # how a ``warning`` begins for each kind of cut: ``describe_cuts`` counts them
LOOP_CUT = "cut after"


class FrameGuard:
    """What one segment may keep of its frames: ``keep(code0)`` for each batch of new frames, in order."""

    def __init__(self, budget: int, label: str = "a segment", period: int = LOOP_PERIOD, window: int = LOOP_WINDOW):
        """``label`` names the segment in the log line of a cut."""
        if budget < 1:
            raise ValueError("a segment's frame budget must be at least one frame")
        self.budget, self.label, self.period, self.window = budget, label, period, window
        self.frames = 0  # frames kept so far
        self.warning: str | None = None  # why the segment was cut, once it was
        self._tail = np.full(period, -1, np.int64)  # code 0 of the last ``period`` frames kept (-1: none)
        self._runs = np.zeros(period, np.int64)  # [p - 1]: frames in a row equal to the one p frames before
        self._lags = np.arange(1, period + 1)[:, None]  # [P, 1]

    def shrink(self, budget: int) -> None:
        """Lower the budget to ``budget`` (a live segment's, known once its text is final), never below the frames
        already kept."""
        self.budget = max(min(self.budget, budget), self.frames)

    @property
    def cut(self) -> bool:
        return self.warning is not None

    def keep(self, code0) -> int:
        """How many of these new frames (their code 0, ints [n]) the segment keeps: all of them until it loops or
        reaches its budget; then up to there, and ``warning`` says why (none once cut). A few array operations
        per call whatever ``n``: the batched loop calls it for every stream at every iteration."""
        if self.cut:
            return 0
        code0 = np.asarray(code0, np.int64).reshape(-1)
        n = len(code0)
        if n == 0:
            return 0
        seq = np.concatenate([self._tail, code0])  # [P + n]
        at = np.arange(n)
        same = seq[self.period + at] == seq[self.period + at - self._lags]  # [P, n]: frame j equals j - p
        # run length at j: frames since the last mismatch, the runs carried in counting before the first
        last_miss = np.maximum.accumulate(np.where(same, -1 - self._runs[:, None], at), axis=1)
        runs = at - last_miss  # [P, n]
        looping = (runs >= self.window).any(axis=0)
        loop_at = int(np.argmax(looping)) if looping.any() else n
        budget_at = self.budget - self.frames  # frames left before the budget
        if loop_at < n and loop_at < budget_at:
            period = int(np.argmax(runs[:, loop_at] >= self.window)) + 1
            self.frames += loop_at
            self._cut(f"{LOOP_CUT} {self.frames / FRAME_RATE:.1f} s: its speech codes repeat a pattern of {period} "
                      f"frame{'s' if period > 1 else ''} for {self.window / FRAME_RATE:.0f} s (a generation stuck "
                      "in a loop)")
            return loop_at
        if budget_at <= n:
            self.frames = self.budget
            self._cut(f"{BUDGET_CUT} ({self.budget} frames, {self.budget / FRAME_RATE:.1f} s) before "
                      "the model ended it (a generation that does not stop)")
            return budget_at
        self.frames += n
        self._runs = runs[:, -1]
        self._tail = seq[-self.period:]
        return n

    def _cut(self, why: str) -> None:
        self.warning = why
        log.debug("%s %s", self.label, why)


def describe_cuts(warnings: list[str], segments: int) -> str | None:
    """One sentence for the user about the segments the guard cut (their ``Chunk.warning``s) out of ``segments``
    spoken, or None when none was cut: "3 of 250 segments were cut at their frame budget"."""
    if not warnings:
        return None
    budget = sum(w.startswith(BUDGET_CUT) for w in warnings)
    looped = len(warnings) - budget
    kinds = []
    if budget:
        kinds.append(f"{budget} at {'its' if budget == 1 else 'their'} frame budget (speech that did not end)")
    if looped:
        kinds.append(f"{looped} because {'its' if looped == 1 else 'their'} speech codes looped")
    were = "was" if len(warnings) == 1 else "were"
    return f"{len(warnings)} of {segments} segment{'s' if segments != 1 else ''} {were} cut short: {', '.join(kinds)}"
