"""A prompt's int8 products around their integer matrix product (``engine.core.cpu.int8.integer_rows``) as two Numba
loops: the activations rounded to 15-bit integers and split into two int8 parts, and the parts' int32 sums joined
and scaled.

In PyTorch each side is about ten elementwise operations over the prompt's rows, ~20 a product and ~2,200 for a
0.6B prompt's prefill: at 8 threads they took longer than the matrix products themselves
(docs/benchmarks.md#cpu-prompt-rows). The values are ``integer_rows``' own, bit for bit: the same IEEE float32
operations in the same order (no fast-math here), each row's scale and NaN rule included.
"""

from __future__ import annotations

import functools
import logging

import numpy as np
import torch

from engine.core.cpu.int8 import ACTIVATION_MAX, TINY
from engine.core.cpu.numba_layer import cacheable, numba
from engine.core.cpu.one_position_numba import KERNEL_LOCK, follow_torch_threads

log = logging.getLogger(__name__)

if numba is not None:
    from numba import njit, prange

    _JIT = {"cache": cacheable(), "nogil": True, "boundscheck": False}
    _MAX = np.float32(ACTIVATION_MAX)
    _TINY = np.float32(TINY)

    @njit(inline="always", **_JIT)
    def rounded_row(values, hi, lo):
        """A row's values as integers xi within +-ACTIVATION_MAX of one scale (its largest magnitude over
        ACTIVATION_MAX; 1 where that is under TINY; NaN where the row holds a NaN or an infinity, its integers then
        zeros), written as xi = 256 * hi + lo with lo in [-128, 127]; returns the scale."""
        k = values.shape[0]
        top = np.float32(0.0)
        finite = True
        for j in range(k):
            a = abs(values[j])
            finite &= a < np.float32(np.inf)  # False for a NaN too
            top = max(top, a)
        if not finite:
            for j in range(k):
                hi[j] = 0
                lo[j] = 0
            return np.float32(np.nan)
        s = np.float32(1.0) if top < _TINY else top / _MAX
        for j in range(k):
            xi = np.int32(min(max(np.rint(values[j] / s), -_MAX), _MAX))
            h = (xi + 128) >> 8
            hi[j] = np.int8(h)
            lo[j] = np.int8(xi - (h << 8))
        return s

    @njit(inline="always", **_JIT)
    def joined(high, low, s, scale, j):
        """Column j of a product from its parts' int32 sums: (256 * high + low) * s * scale, in float32 in that
        order."""
        return (np.float32(high[j]) * np.float32(256.0) + np.float32(low[j])) * s * scale[j]

    @njit(parallel=True, **_JIT)
    def split(x, parts, sx):
        """Each row i of x [M, K] rounded (``rounded_row``) into parts[i] (high) and parts[M + i] (low), [2M, K],
        with its scale sx[i]."""
        m = x.shape[0]
        for i in prange(m):
            sx[i] = rounded_row(x[i], parts[i], parts[m + i])

    @njit(parallel=True, **_JIT)
    def join(sums, sx, scale, y):
        """y [M, N] = the product joined (``joined``) from its parts' sums [2M, N]."""
        m, n = y.shape
        for i in prange(m):
            high, low, s, out = sums[i], sums[m + i], sx[i], y[i]
            for j in range(n):
                out[j] = joined(high, low, s, scale, j)


def runs_here() -> bool:
    """Whether these loops run: Numba usable, the ``cpu_numba`` option on, no cold-start bridge on the PyTorch steps
    (``engine.core.cpu.numba_cache.cold_start``) and the loops compiled here."""
    from engine.core import options
    from engine.core.cpu.numba_cache import cold_start

    return numba is not None and options.current().cpu_numba and cold_start.numba_now() and _compiled()


@functools.cache
def _compiled() -> bool:
    """Compile both loops once (a row each way); False, logged, where Numba cannot (PyTorch's operations then run)."""
    try:
        with KERNEL_LOCK:
            split(np.ones((1, 4), np.float32), np.empty((2, 4), np.int8), np.empty(1, np.float32))
            join(np.ones((2, 3), np.int32), np.ones(1, np.float32), np.ones(3, np.float32),
                  np.empty((1, 3), np.float32))
        return True
    except Exception as e:  # numba raises many types (typing, lowering, LLVM)
        log.warning("compiling the Numba prompt loops failed; a prompt's products run in PyTorch: %s", str(e)[-2000:])
        return False


def integer_rows(x: torch.Tensor, q: torch.Tensor, scale: torch.Tensor) -> torch.Tensor:
    """``engine.core.cpu.int8.integer_rows`` through ``_split``, ``torch._int_mm`` and ``_join``: x [M, K] float32,
    q [N, K] int8, scale [N] -> [M, N] float32."""
    m, k = x.shape
    x = x.contiguous()
    parts, sx = torch.empty(2 * m, k, dtype=torch.int8), torch.empty(m)
    with KERNEL_LOCK:
        follow_torch_threads()
        split(x.numpy(), parts.numpy(), sx.numpy())
    sums = torch._int_mm(parts, q.t())  # [2M, N]
    y = torch.empty(m, q.shape[0])
    with KERNEL_LOCK:
        follow_torch_threads()
        join(sums.numpy(), sx.numpy(), scale.float().contiguous().numpy(), y.numpy())
    return y
