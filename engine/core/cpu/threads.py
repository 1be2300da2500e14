"""How many CPU threads the eager frame loop uses, chosen frame by frame from measured frame times.

A frame on a CPU is thousands of small parallel operations, each ending at a barrier of all its threads. With every
core in use, a machine with anything else to run (a browser, a build, the audio and the window) deschedules one
of those threads now and then, and every barrier waits for it: a frame can then take several times longer than
with one core left free, while on an idle machine all the cores are much faster (docs/benchmarks.md#cpu-threads).
Neither count is right on every machine or every minute, so ``ThreadGovernor`` keeps a running mean of the frame
time of each count it may use (the available cores, and one fewer), runs the faster, and tries the other for a
few frames now and then, or at once when a frame takes far longer than the mean of its count. Each trial that finds
the other count clearly slower doubles the wait before the next, and one that does not brings the wait back to
its shortest: on an idle 2-core machine one thread's frames are much slower than two threads', and trials at a
fixed interval would hold many times more of a long reading's frames at the slower count than with the doubling
(docs/benchmarks.md#cpu-threads).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import torch

from engine.core.runtime import available_cores

EXPLORE_EVERY = 48  # frames (about 4 s of audio) between trials of the count not in use, at first
EXPLORE_AT_MOST_EVERY = 384  # frames (about 31 s of audio): the longest wait, doubled up to from EXPLORE_EVERY
CLEARLY_SLOWER = 1.25  # a trial's count whose mean is this many times the fastest's doubles the wait
TRIAL_FRAMES = 3  # frames a trial runs; the first after a change is not counted (the pool resizes)
SMOOTHING = 0.3  # weight of the newest frame in a count's running mean
SPIKE = 3.0  # a frame this many times its count's mean starts a trial at once


class ThreadGovernor:
    """Chooses PyTorch's intra-op threads among ``choices`` before each frame (``before_frame``), from the frame
    times it is told (``after_frame``). ``set_threads`` is ``torch.set_num_threads`` unless a test gives another."""

    def __init__(self, choices: Sequence[int], set_threads: Callable[[int], None] = torch.set_num_threads):
        if not choices or min(choices) < 1:
            raise ValueError(f"thread counts must be positive, got {list(choices)}")
        self.choices = sorted(set(choices))
        self.mean_ms: dict[int, float | None] = {n: None for n in self.choices}
        self._set_threads = set_threads
        self.current = self.choices[0]  # the cautious count first: the one that leaves a core free
        self._applied: int | None = None
        self._trial_left = 0  # frames the running trial still has, counted ones
        self._skip_next = False  # the frame after a change is not counted
        self._since_trial = 0
        self._explore_every = EXPLORE_EVERY

    @classmethod
    def for_this_machine(cls, reserved: int = 0) -> ThreadGovernor | None:
        """A governor between all the cores this process may use, less ``reserved`` (the decoder's own), and one
        fewer; None with one core."""
        cores = available_cores() - reserved
        return cls((cores - 1, cores)) if cores >= 2 else None

    def before_frame(self) -> None:
        if self._applied != self.current:
            self._set_threads(self.current)
            self._applied = self.current

    def after_frame(self, ms: float) -> None:
        """Record how long the frame just made took, in milliseconds, and choose the next frame's count."""
        if self._skip_next:
            self._skip_next = False
            return
        mean = self.mean_ms[self.current]
        spike = mean is not None and ms > SPIKE * mean and not self._trial_left
        self.mean_ms[self.current] = ms if mean is None else (1 - SMOOTHING) * mean + SMOOTHING * ms
        if self._trial_left:
            self._trial_left -= 1
            if not self._trial_left:
                self._pace_trials(self.current)
                self._switch(self.fastest())
            return
        self._since_trial += 1
        untried = [n for n in self.choices if self.mean_ms[n] is None]
        if untried or spike or self._since_trial >= self._explore_every:
            others = untried or [n for n in self.choices if n != self.current]
            if others:
                trial = min(others, key=lambda n: self.mean_ms[n] or 0.0)
                self.mean_ms[trial] = None  # measured afresh: what held a minute ago may not now
                self._since_trial = 0
                self._trial_left = TRIAL_FRAMES - 1
                self._switch(trial)

    def _pace_trials(self, tried: int) -> None:
        """The wait before the next trial, from the one of ``tried`` that just ended."""
        best = self.fastest()
        slower = best != tried and self.mean_ms[tried] >= CLEARLY_SLOWER * self.mean_ms[best]
        self._explore_every = min(2 * self._explore_every, EXPLORE_AT_MOST_EVERY) if slower else EXPLORE_EVERY

    def fastest(self) -> int:
        known = {n: ms for n, ms in self.mean_ms.items() if ms is not None}
        return min(known, key=known.get) if known else self.current

    def _switch(self, threads: int) -> None:
        if threads != self.current:
            self.current = threads
            self._skip_next = True
