"""Time left of a long job (an export), smoothed: the one estimate the studio's queue and ``orator export`` show
(``engine.production.book_export.Progress.eta_s``, in words by ``format_time_left``).

``TimeLeft(total, clock)`` hears how much of ``total`` work is done (``update(done)``, after each piece) and reads
``clock`` (seconds, only ever compared with itself). The estimate is the work left over a speed that is:

- not guessed from too little: there is none (None) until ``MIN_MEASURED`` pieces after the first are done. The
  first piece is only the baseline, since its time holds one-off costs (a model's warm-up, a compile), which made
  a two-minute export's first estimate 4 h 46 min;
- smoothed: work and time are summed with exponential forgetting (half their weight after ``HALF_LIFE`` pieces),
  so the recent speed counts most, a piece that took its time after a burst of instant ones (sentences from the
  cache add work in no time) does not make the speed jump, and a stretch of slow pieces (reading aloud sharing
  the engine) moves it gradually;
- steady: each estimate is within ``MAX_STEP`` of the one before, so it never swings (20 min, then 4): after a
  change of speed it goes the way of the truth a step at a time, and near the end it may trail it by a few
  seconds, until it is 0 once all the work is done.
"""

from __future__ import annotations

import time
from collections.abc import Callable

MIN_MEASURED = 2  # pieces after the first before any estimate
HALF_LIFE = 20  # pieces after which a piece's work and time count half
MAX_STEP = 0.2  # the most an estimate moves from the one before, as a fraction of it
_DECAY = 0.5 ** (1 / HALF_LIFE)


class TimeLeft:
    def __init__(self, total: float, clock: Callable[[], float] = time.perf_counter):
        self.total = max(0.0, float(total))
        self.clock = clock
        self.estimate: float | None = None  # the latest, in seconds
        self._done = 0.0
        self._at: float | None = None  # the clock when the baseline piece was done
        self._work = self._time = 0.0  # forgetting sums of the work done and the time it took since the baseline
        self._measured = 0

    def update(self, done: float) -> float | None:
        """The seconds left now that ``done`` of the work is done (it only grows); None while too little is known."""
        now = self.clock()
        if done >= self.total:
            self.estimate = 0.0
            return self.estimate
        if self._at is None:
            if done > 0:  # the first piece done: the baseline, its time not counted
                self._done, self._at = done, now
            return self.estimate
        work, spent = max(0.0, done - self._done), max(0.0, now - self._at)
        self._done, self._at = max(done, self._done), now
        if work > 0:
            self._work = self._work * _DECAY + work
            self._time = self._time * _DECAY + spent
            self._measured += 1
        else:  # time with nothing done (a wait) counts towards the next piece's speed
            self._time += spent
        if self._measured < MIN_MEASURED or self._time <= 0:
            return self.estimate
        left = (self.total - done) * self._time / self._work
        if self.estimate:
            left = min(max(left, self.estimate * (1 - MAX_STEP)), self.estimate * (1 + MAX_STEP))
        self.estimate = left
        return left


def format_time_left(seconds: float | None) -> str:
    """An estimate in words, as the studio and ``orator export`` show it."""
    if seconds is None:
        return "estimating time left"
    seconds = int(round(seconds))
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    if hours:
        return f"about {hours} h {minutes:02d} min left"
    if minutes:
        return f"about {minutes} min {secs:02d} s left"
    return f"about {secs} s left"
