"""A preallocated float32 ring buffer shared by one producer (the GUI thread) and one consumer
(the audio callback).

The consumer side (``read_into``) never allocates or waits on anything but a tiny lock held only
while two integers are read or updated; copies happen outside the lock, on slices of the
preallocated array. Positions are monotonic sample counters (``written``, ``consumed``), so the
player can tell which sample is audible without touching the callback.
"""

from __future__ import annotations

import threading

import numpy as np


class AudioRingBuffer:
    """Mono float32 samples, ``capacity`` samples at most in flight."""

    def __init__(self, capacity: int):
        if capacity <= 0:
            raise ValueError("ring buffer capacity must be positive")
        self.capacity = capacity
        self._data = np.zeros(capacity, dtype=np.float32)  # [capacity]
        self._lock = threading.Lock()
        self._written = 0  # total samples ever written
        self._consumed = 0  # total samples ever read (or flushed)

    # ---- counters (any thread) ---------------------------------------------------------------
    @property
    def written(self) -> int:
        return self._written

    @property
    def consumed(self) -> int:
        return self._consumed

    @property
    def available(self) -> int:
        """Samples waiting to be read."""
        with self._lock:
            return self._written - self._consumed

    @property
    def free(self) -> int:
        return self.capacity - self.available

    # ---- producer ------------------------------------------------------------------------------
    def write(self, samples: np.ndarray) -> int:
        """Copy as many of ``samples`` [N] as fit; return how many were taken."""
        with self._lock:
            start = self._written
            room = self.capacity - (start - self._consumed)
        count = min(room, len(samples))
        self._copy_in(start, samples[:count])
        with self._lock:
            self._written = start + count
        return count

    def flush(self) -> None:
        """Drop everything not yet read (the consumer skips to the write position)."""
        with self._lock:
            self._consumed = self._written

    # ---- consumer ------------------------------------------------------------------------------
    def read_into(self, out: np.ndarray) -> int:
        """Fill ``out`` [M] from the buffer; return how many samples were real (the rest is left
        untouched for the caller to zero)."""
        with self._lock:
            start = self._consumed
            count = min(len(out), self._written - start)
        self._copy_out(start, out[:count])
        with self._lock:
            # a flush during the copy moved ``consumed`` past us: keep the flush
            if self._consumed == start:
                self._consumed = start + count
        return count

    # ---- internals -----------------------------------------------------------------------------
    def _copy_in(self, position: int, samples: np.ndarray) -> None:
        offset = position % self.capacity
        first = min(len(samples), self.capacity - offset)
        self._data[offset:offset + first] = samples[:first]
        self._data[:len(samples) - first] = samples[first:]

    def _copy_out(self, position: int, out: np.ndarray) -> None:
        offset = position % self.capacity
        first = min(len(out), self.capacity - offset)
        out[:first] = self._data[offset:offset + first]
        out[first:] = self._data[:len(out) - first]
