"""The Numba steps' int8 products through the processor's 8-bit dot-product instruction (AVX512-VNNI ``vpdpbusd``:
64 unsigned-by-signed byte products summed into 16 int32 lanes, one instruction).

The engine's products take activations as 15-bit integers (``int8.ACTIVATION_MAX``). Here each one is
split into its low byte (0..255) and its high byte plus 128 (64..191, unsigned): two instructions cover 64 weights
where the 16-bit form takes six (widen the weights, multiply-add pairs, add), and the sums are the same integers:
``x . w = 256 * (hi . w - 128 * sum(w)) + lo . w``, with ``sum(w)`` counted once per row and run of weights at
load. No sum can overflow: each run's lanes stay within SEGMENT * 255 * 127, and its joined sum is the 16-bit
form's, bounded there.

``dot4`` gives the two byte sums of four rows at a time (sharing their activation loads, the next four rows
prefetched): through the instruction where ``available()`` says the processor has it, elsewhere as plain loops with
the same results (which is how tests check the arithmetic on any machine). ``fits`` says which products it takes:
rows in fours, runs of weights in whole instructions.
"""

from __future__ import annotations

import numpy as np

from engine.core.cpu.numba_cache.folder import use_cache_folder

use_cache_folder()  # before Numba's import: it reads its cache folder once
try:
    import llvmlite.binding as llvm
    import numba
    from llvmlite import ir
    from numba import njit, types
    from numba.core import cgutils
    from numba.extending import intrinsic, overload
except Exception:  # Numba missing or its LLVM not loadable: nothing here is used
    numba = None

LANES = 16  # int32 lanes of a 512-bit register
BYTES = 64  # weights one instruction covers
ROWS = 4  # rows a step shares its activation loads with (docs/benchmarks.md#cpu-vnni)


def available() -> bool:
    """Whether the host has AVX512-VNNI and AVX512-BW, and Numba compiles for the host (a user's NUMBA_CPU_NAME,
    e.g. ``generic`` for a portable cache, keeps the 16-bit form)."""
    if numba is None or numba.config.CPU_NAME not in (None, "host"):
        return False
    try:
        features = set(llvm.get_host_cpu_features().flatten().split(","))
    except Exception:
        return False
    wanted = {"+avx512vnni", "+avx512bw", "+avx512f"}
    if numba.config.CPU_FEATURES:
        features = set(numba.config.CPU_FEATURES.split(","))
    return wanted <= features


def fits(q: np.ndarray, segment: int) -> bool:
    """Whether ``dot4`` takes this [N, K] product in runs of ``segment``: N a multiple of 4, and K and ``segment`` of
    64 (the real models' are)."""
    n, k = q.shape
    return n % ROWS == 0 and k % BYTES == 0 and segment % BYTES == 0


def weight_sums(q: np.ndarray, segment: int) -> np.ndarray:
    """Each row's sum of int8 weights over each run of ``segment`` columns: int32 [N, runs]."""
    n, k = q.shape
    runs = (k + segment - 1) // segment
    out = np.empty((n, runs), np.int32)
    for r in range(runs):
        out[:, r] = q[:, r * segment:(r + 1) * segment].sum(axis=1, dtype=np.int32)
    return out


if numba is not None:
    _I8, _I32 = ir.IntType(8), ir.IntType(32)
    _VEC = ir.VectorType(_I32, LANES)

    def dot_rows(rows: int, prefetch: bool = False):
        """An intrinsic ``dot(q, row0, start, stop, lo, hi, out)``: for r < ``rows``, out[2r] = lo[start:stop] .
        q[row0 + r, start:stop] and out[2r + 1] the same of ``hi`` (unsigned bytes times int8 weights, int32
        sums); ``stop - start`` must be a multiple of 64 and the rows contiguous. With ``prefetch`` the next
        ``rows`` rows' bytes are asked for as these are read."""

        @intrinsic
        def dot(typingctx, q, row0, start, stop, lo, hi, out):
            sig = types.void(q, row0, start, stop, lo, hi, out)

            def codegen(context, builder, signature, args):
                qv, r0, first, last, lov, hiv, outv = args
                arrays = [context.make_array(t)(context, builder, v)
                          for t, v in zip(signature.args, args, strict=True) if isinstance(t, types.Array)]
                qa, la, ha, oa = arrays
                intp = context.get_value_type(types.intp)
                stride = builder.extract_value(qa.strides, 0)
                vpdpbusd = cgutils.get_or_insert_function(builder.module, ir.FunctionType(_VEC, [_VEC] * 3),
                                                          "llvm.x86.avx512.vpdpbusd.512")
                total = cgutils.get_or_insert_function(builder.module, ir.FunctionType(_I32, [_VEC]),
                                                       "llvm.vector.reduce.add.v16i32")
                base = builder.bitcast(qa.data, _I8.as_pointer())
                starts = [builder.gep(base, [builder.mul(builder.add(r0, ir.Constant(intp, r)), stride)])
                          for r in range(rows)]
                lo_base = builder.bitcast(la.data, _I8.as_pointer())
                hi_base = builder.bitcast(ha.data, _I8.as_pointer())
                sums = [cgutils.alloca_once_value(builder, ir.Constant(_VEC, None)) for _ in range(2 * rows)]
                if prefetch:
                    fetch = cgutils.get_or_insert_function(
                        builder.module, ir.FunctionType(ir.VoidType(), [_I8.as_pointer(), _I32, _I32, _I32]),
                        "llvm.prefetch.p0")
                    ahead = builder.mul(stride, ir.Constant(intp, rows))
                steps = builder.sdiv(builder.sub(last, first), ir.Constant(intp, BYTES))
                with cgutils.for_range(builder, steps) as loop:
                    at = builder.add(first, builder.mul(loop.index, ir.Constant(intp, BYTES)))
                    x_lo = builder.load(builder.bitcast(builder.gep(lo_base, [at]), _VEC.as_pointer()), align=1)
                    x_hi = builder.load(builder.bitcast(builder.gep(hi_base, [at]), _VEC.as_pointer()), align=1)
                    for r in range(rows):
                        where = builder.gep(starts[r], [at])
                        w = builder.load(builder.bitcast(where, _VEC.as_pointer()), align=1)
                        if prefetch:
                            builder.call(fetch, [builder.gep(where, [ahead]), ir.Constant(_I32, 0),
                                                 ir.Constant(_I32, 3), ir.Constant(_I32, 1)])
                        builder.store(builder.call(vpdpbusd, [builder.load(sums[2 * r]), x_lo, w]), sums[2 * r])
                        builder.store(builder.call(vpdpbusd, [builder.load(sums[2 * r + 1]), x_hi, w]),
                                      sums[2 * r + 1])
                out_base = builder.bitcast(oa.data, _I32.as_pointer())
                for i, s in enumerate(sums):
                    builder.store(builder.call(total, [builder.load(s)]), builder.gep(out_base, [ir.Constant(intp, i)]))
                return context.get_dummy_value()

            return sig, codegen

        return dot

    def plain_rows(rows: int):
        """``dot_rows(rows)``'s sums as plain loops."""
        def dot(q, row0, start, stop, lo, hi, out):
            for r in range(rows):
                row = q[row0 + r]
                lo_sum, hi_sum = np.int32(0), np.int32(0)
                for i in range(start, stop):
                    w = np.int32(row[i])
                    lo_sum += np.int32(lo[i]) * w
                    hi_sum += np.int32(hi[i]) * w
                out[2 * r], out[2 * r + 1] = lo_sum, hi_sum
        return dot

    _vnni_dot4, _plain_dot4 = dot_rows(ROWS, prefetch=True), njit(inline="always", nogil=True)(plain_rows(ROWS))

    def dot4(q, row0, start, stop, lo, hi, out):
        """For Numba code: out[2r], out[2r + 1] = the low and the high bytes' sums with row ``row0 + r`` over
        [start, stop), r < 4: ``dot_rows(4, prefetch=True)`` where the processor has VNNI, else the same sums as
        plain loops (chosen when Numba compiles the caller, for the processor it compiles for)."""

    @overload(dot4, inline="always", jit_options={"nogil": True, "boundscheck": False})
    def _dot4_typed(q, row0, start, stop, lo, hi, out):
        if available():
            return lambda q, row0, start, stop, lo, hi, out: _vnni_dot4(q, row0, start, stop, lo, hi, out)
        return lambda q, row0, start, stop, lo, hi, out: _plain_dot4(q, row0, start, stop, lo, hi, out)

    @njit(inline="always", nogil=True, boundscheck=False)
    def split(xq, lo, hi):
        """lo, hi = the low byte of each int16 in ``xq`` and its high byte plus 128, both as uint8."""
        for i in range(xq.shape[0]):
            v = np.int32(xq[i])
            lo[i] = np.uint8(v & 0xFF)
            hi[i] = np.uint8((v >> 8) + 128)

    @njit(inline="always", nogil=True, boundscheck=False)
    def joined(lo_sum, hi_sum, weight_sum):
        """The 16-bit form's sum from the two byte sums and the run's weight sum."""
        return np.int32(np.int32(256) * (hi_sum - np.int32(128) * weight_sum) + lo_sum)
