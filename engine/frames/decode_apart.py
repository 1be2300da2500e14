"""The CPU path's codec decoder on a thread of its own, decoding one chunk while the next chunk's frames are made.

On a CPU a stream's time is its frames' plus its chunks' decoding (a tenth of it on 8 cores). Generation is bound by
memory, and it runs as fast on one or two cores fewer (docs/benchmarks.md#cpu-decode-apart), so on a machine with
enough cores the decoder takes one of its own and its time leaves the stream's: ``DecodeApart`` runs decode calls,
in the order given, on one worker thread whose PyTorch thread count is its own (a thread's count, set in that
thread, stays that thread's). The calls share the stream's decoder state, which is why there is one worker and
every call is waited for before the state is used again (``wait``).
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor

import torch

from engine import options
from engine.runtime import available_cores

DECODE_APART_CORES = 0  # cores from which the decoder has one of its own by default; 0: never, until measured faster


def decoder_threads() -> int:
    """The decoder's own threads on the CPU path: the ``decoder_threads`` option, or by default 1 where this process
    may use ``DECODE_APART_CORES`` cores or more (0: none), else 0 (decoding between frames, on generation's
    threads)."""
    chosen = options.current().decoder_threads
    if chosen is not None:
        return chosen
    return 1 if 0 < DECODE_APART_CORES <= available_cores() else 0


class DecodeApart:
    """``submit(fn, *args)`` runs ``fn`` on the decoder's thread (``threads`` PyTorch threads there), in order."""

    def __init__(self, threads: int):
        if threads < 1:
            raise ValueError(f"the decoder's thread needs at least one PyTorch thread, not {threads}")
        self.threads = threads
        self._pool = ThreadPoolExecutor(1, thread_name_prefix="orator-decoder", initializer=_own_threads,
                                        initargs=(threads,))
        # setting a thread's count also sets the count that threads new to PyTorch start from: the caller's again
        own = torch.get_num_threads()
        self._pool.submit(lambda: None).result()
        torch.set_num_threads(own)

    def submit(self, fn: Callable, *args) -> Future:
        return self._pool.submit(_inference, fn, *args)

    @staticmethod
    def wait(futures) -> None:
        """Wait for every one of ``futures`` to end (the decoder state is then free), whatever they raised."""
        for future in futures:
            future.exception()

    def close(self) -> None:
        self._pool.shutdown(wait=True)


def _own_threads(threads: int) -> None:
    """The calling thread's PyTorch threads: ``threads``, after PyTorch's first look at this thread (which would
    otherwise set them to the process's count later)."""
    torch.get_num_threads()
    torch.set_num_threads(threads)


def _inference(fn: Callable, *args):
    with torch.inference_mode():
        return fn(*args)
