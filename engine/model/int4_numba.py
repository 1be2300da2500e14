"""The int4 weights' arithmetic as Numba loops (``engine.model.int4``'s layout): a product's rows for one row of
activations, and the weights widened to float32.

A row's run g of ``GROUP`` weights is ``HALF`` bytes: byte j holds the code of weight g * GROUP + j in its low
nibble and that of weight g * GROUP + HALF + j in its high one, so a run unpacks with one mask and one shift, each
half against a contiguous half of the activations. A weight is ``(code - 8) * scale + zero``, one scale and zero a
row and run. A product takes its activations as the int8 products do (15-bit integers ``xq`` and one scale ``sx``:
``engine.model.one_position_numba._quantize``), and with S_g the sum of run g's ``xq``

    y_n = sx * sum_g [scale_ng * (sum_k code_k * xq_k - 8 * S_g) + zero_ng * S_g]

where each run's sum of codes times activations is an exact int32 (at most 15 * 16383 * 64 < 2**24, so exact in
float32 too): only the sum over runs is rounded.
(Numba's cache folder is keyed on this file too, since the steps inline these loops: ``engine.numba_cache``.)
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

GROUP = 64  # weights of a run with one scale and zero (a multiple of 32): the runs test_int4.py's error bounds hold for
HALF = GROUP // 2  # bytes of a run

try:
    from numba import njit, prange
except Exception:  # Numba missing or its LLVM not loadable: engine.model.int4 widens with PyTorch instead
    njit = None

if njit is not None:
    # no fast-math here: a widened weight is its formula's float32 value (the run sums are exact integers either
    # way, also inlined into the fast-math steps of engine.model.one_position_numba)
    _JIT = {"cache": Path(__file__).is_file(), "nogil": True, "boundscheck": False}

    @njit(inline="always", **_JIT)
    def run_sums(xq, sums):
        """sums[g] = the sum of run g's activations ``xq`` (int16), as float32 (exact: at most 64 * 16383)."""
        for g in range(sums.shape[0]):
            s = np.int32(0)
            for i in range(g * GROUP, g * GROUP + GROUP):
                s = np.int32(s + xq[i])
            sums[g] = np.float32(s)

    @njit(inline="always", **_JIT)
    def _run(row, start, xq, first):
        """sum of codes times activations over one run: bytes row[start : start + HALF], activations from
        ``first``: exact in int32."""
        s = np.int32(0)
        for j in range(HALF):
            b = row[start + j]
            s = np.int32(s + np.int16(b & 15) * xq[first + j] + np.int16(b >> 4) * xq[first + HALF + j])
        return s

    @njit(inline="always", **_JIT)
    def rows(q, scale_zero, sums, xq, sx, y, start, stop, add):
        """y[n] (+)= row n of the product, for n in [start, stop): ``q`` uint8 [N, K/2], ``scale_zero`` float32
        [N, K/GROUP, 2], ``sums`` the runs' ``run_sums``."""
        for n in range(start, stop):
            row = q[n]
            acc = np.float32(0.0)
            for g in range(sums.shape[0]):
                s = sums[g]
                d = np.float32(_run(row, g * HALF, xq, g * GROUP)) - np.float32(8.0) * s
                acc += scale_zero[n, g, 0] * d + scale_zero[n, g, 1] * s
            if add:
                y[n] += acc * sx
            else:
                y[n] = acc * sx

    @njit(parallel=True, **_JIT)
    def widen(q, scale_zero, out):
        """out [N, K] float32 = the weights ``q`` stands for, ``(code - 8) * scale + zero``."""
        for n in prange(q.shape[0]):
            for g in range(scale_zero.shape[1]):
                s, z = scale_zero[n, g, 0], scale_zero[n, g, 1]
                for j in range(HALF):
                    b = q[n, g * HALF + j]
                    out[n, g * GROUP + j] = np.float32(np.int32(b & 15) - 8) * s + z
                    out[n, g * GROUP + HALF + j] = np.float32(np.int32(b >> 4) - 8) * s + z
