"""A prompt's int8 products around their integer matrix product (``engine.model.int8.integer_rows``) as two Numba
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

from engine.model.int8 import ACTIVATION_MAX, TINY
from engine.model.one_position_numba import _cacheable, _follow_torch_threads, _lock, numba

log = logging.getLogger(__name__)

if numba is not None:
    from numba import njit, prange

    _JIT = {"cache": _cacheable(), "nogil": True, "boundscheck": False}
    _MAX = np.float32(ACTIVATION_MAX)
    _TINY = np.float32(TINY)

    @njit(parallel=True, **_JIT)
    def _split(x, parts, sx):
        """Row i of x [M, K] as integers xi within +-ACTIVATION_MAX of the scale sx[i] (its largest magnitude over
        ACTIVATION_MAX; 1 where that is under TINY; NaN where the row holds a NaN or an infinity, its integers
        then zeros), written as xi = 256 * parts[i] + parts[M + i] with the low part in [-128, 127]."""
        m, k = x.shape
        for i in prange(m):
            row = x[i]
            top = np.float32(0.0)
            finite = True
            for j in range(k):
                a = abs(row[j])
                finite &= a < np.float32(np.inf)  # False for a NaN too
                top = max(top, a)
            hi, lo = parts[i], parts[m + i]
            if not finite:
                sx[i] = np.float32(np.nan)
                for j in range(k):
                    hi[j] = 0
                    lo[j] = 0
                continue
            s = np.float32(1.0) if top < _TINY else top / _MAX
            sx[i] = s
            for j in range(k):
                xi = np.int32(min(max(np.rint(row[j] / s), -_MAX), _MAX))
                h = (xi + 128) >> 8
                hi[j] = np.int8(h)
                lo[j] = np.int8(xi - (h << 8))

    @njit(parallel=True, **_JIT)
    def _join(sums, sx, scale, y):
        """y [M, N] = (256 * sums[i] + sums[M + i]) * sx[i] * scale, in float32 in that order."""
        m, n = y.shape
        for i in prange(m):
            high, low, s, out = sums[i], sums[m + i], sx[i], y[i]
            for j in range(n):
                out[j] = (np.float32(high[j]) * np.float32(256.0) + np.float32(low[j])) * s * scale[j]


def runs_here() -> bool:
    """Whether these loops run: Numba usable, the ``cpu_numba`` option on and the loops compiled here."""
    from engine import options

    return numba is not None and options.current().cpu_numba and _compiled()


@functools.cache
def _compiled() -> bool:
    """Compile both loops once (a row each way); False, logged, where Numba cannot (PyTorch's operations then run)."""
    try:
        with _lock:
            _split(np.ones((1, 4), np.float32), np.empty((2, 4), np.int8), np.empty(1, np.float32))
            _join(np.ones((2, 3), np.int32), np.ones(1, np.float32), np.ones(3, np.float32),
                  np.empty((1, 3), np.float32))
        return True
    except Exception as e:  # numba raises many types (typing, lowering, LLVM)
        log.warning("compiling the Numba prompt loops failed; a prompt's products run in PyTorch: %s", str(e)[-2000:])
        return False


def integer_rows(x: torch.Tensor, q: torch.Tensor, scale: torch.Tensor) -> torch.Tensor:
    """``engine.model.int8.integer_rows`` through ``_split``, ``torch._int_mm`` and ``_join``: x [M, K] float32,
    q [N, K] int8, scale [N] -> [M, N] float32."""
    m, k = x.shape
    x = x.contiguous()
    parts, sx = torch.empty(2 * m, k, dtype=torch.int8), torch.empty(m)
    with _lock:
        _follow_torch_threads()
        _split(x.numpy(), parts.numpy(), sx.numpy())
    sums = torch._int_mm(parts, q.t())  # [2M, N]
    y = torch.empty(m, q.shape[0])
    with _lock:
        _follow_torch_threads()
        _join(sums.numpy(), sx.numpy(), scale.float().contiguous().numpy(), y.numpy())
    return y
