"""Barriers for a team of threads inside one Numba parallel region, from atomic operations on an int64 array.

A parallel region costs its start and its end on every call (about 4 us a region at 8 threads on the Xeon host,
docs/benchmarks.md#cpu-team); a one-position step of the 0.6B made five a layer. A team starts once a step: each
member is one iteration of ``prange(team)`` and the layers' phases are separated by ``wait_all``. The members must
run at once, one a thread, which a parallel region of ``team`` iterations over ``team`` threads does under the
OpenMP and workqueue layers; where they do not (TBB may run two iterations on one thread, one after the other),
``join_team`` gives up before anything is written, and the caller runs the per-region steps instead.

``sync`` is int64 [SYNC_WORDS]: each counter on a cache line of its own. ``reset`` before each region.
"""

from __future__ import annotations

import numpy as np

try:
    import llvmlite.binding as llvm
    from llvmlite import ir
    from numba import njit, types
    from numba.core import cgutils
    from numba.extending import intrinsic
except Exception:  # Numba missing or its LLVM not loadable: nothing here is used
    njit = None

COUNT, GENERATION, ARRIVED, STATE = 0, 16, 32, 48  # words of ``sync``, 128 bytes apart
FAILED = 56  # teams of this ``sync`` that gave up in a row (kept by ``reset``)
SYNC_WORDS = 64
PENDING, GO, GIVEN_UP = 0, 1, 2  # STATE
# Processor cycles (x86's time-stamp counter: 1-4 GHz) a member waits for the team to gather before it gives up:
# 10-50 ms, far longer than running threads take to start and longer than a scheduler's time slice, so a team gives
# up only where its members do not all run at once. Where there is no such counter, MAX_SPINS spins.
GATHER_CYCLES = 50_000_000
MAX_SPINS = 10_000_000

if njit is not None:
    _X86 = llvm.get_process_triple().startswith(("x86_64", "i686", "i386"))

    def _pointer(context, builder, aryty, ary, index):
        array = context.make_array(aryty)(context, builder, ary)
        return cgutils.get_item_pointer(context, builder, aryty, array, [index])

    @intrinsic
    def fetch_add(typingctx, ary, index, value):
        """ary[index] += value atomically (sequentially consistent); returns the value before."""
        sig = types.int64(ary, index, types.int64)

        def codegen(context, builder, signature, args):
            ptr = _pointer(context, builder, signature.args[0], args[0], args[1])
            return builder.atomic_rmw("add", ptr, args[2], "seq_cst")

        return sig, codegen

    @intrinsic
    def load(typingctx, ary, index):
        """ary[index], read atomically with acquire order (the compiler cannot keep it in a register)."""
        sig = types.int64(ary, index)

        def codegen(context, builder, signature, args):
            ptr = _pointer(context, builder, signature.args[0], args[0], args[1])
            return builder.load_atomic(ptr, "acquire", 8)

        return sig, codegen

    @intrinsic
    def store(typingctx, ary, index, value):
        """ary[index] = value, atomically with release order."""
        sig = types.void(ary, index, types.int64)

        def codegen(context, builder, signature, args):
            ptr = _pointer(context, builder, signature.args[0], args[0], args[1])
            builder.store_atomic(args[2], ptr, "release", 8)
            return context.get_dummy_value()

        return sig, codegen

    @intrinsic
    def compare_swap(typingctx, ary, index, expected, value):
        """ary[index] = value if it holds ``expected``, atomically; whether it did."""
        sig = types.boolean(ary, index, types.int64, types.int64)

        def codegen(context, builder, signature, args):
            ptr = _pointer(context, builder, signature.args[0], args[0], args[1])
            pair = builder.cmpxchg(ptr, args[2], args[3], "seq_cst", "seq_cst")
            return builder.extract_value(pair, 1)

        return sig, codegen

    @intrinsic
    def cycles(typingctx):
        """The processor's cycle counter (x86 ``rdtsc``); 0 elsewhere."""
        sig = types.int64()

        def codegen(context, builder, signature, args):
            if not _X86:
                return ir.Constant(ir.IntType(64), 0)
            fn = cgutils.get_or_insert_function(builder.module, ir.FunctionType(ir.IntType(64), []),
                                                "llvm.readcyclecounter")
            return builder.call(fn, [])

        return sig, codegen

    @intrinsic
    def pause(typingctx):
        """The processor's spin-wait hint (x86 ``pause``; nothing elsewhere)."""
        sig = types.void()

        def codegen(context, builder, signature, args):
            if _X86:
                fn = cgutils.get_or_insert_function(builder.module, ir.FunctionType(ir.VoidType(), []),
                                                    "llvm.x86.sse2.pause")
                builder.call(fn, [])
            return context.get_dummy_value()

        return sig, codegen

    @njit(inline="always", nogil=True)
    def reset(sync):
        """Ready ``sync`` for a new team (before its parallel region); FAILED stays."""
        for i in (COUNT, GENERATION, ARRIVED, STATE):
            sync[i] = 0

    @njit(inline="always", nogil=True)
    def join_team(sync, team, limit):
        """Arrive, and wait for the ``team``'s other members: True once all have arrived; False, for every member,
        where they had not within ``limit`` cycles (or MAX_SPINS spins: they do not all run at once), or the team
        gave up before."""
        fetch_add(sync, ARRIVED, np.int64(1))
        start, waited = cycles(), 0
        while True:
            state = load(sync, STATE)
            if state != PENDING:
                return state == GO
            if load(sync, ARRIVED) == team:
                compare_swap(sync, STATE, np.int64(PENDING), np.int64(GO))
            elif waited > MAX_SPINS or ((waited & 1023) == 0 and cycles() - start > limit):
                compare_swap(sync, STATE, np.int64(PENDING), np.int64(GIVEN_UP))
            waited += 1
            pause()

    @njit(inline="always", nogil=True)
    def wait_all(sync, team):
        """Wait until all ``team`` members have called this: what each wrote before is then seen by all."""
        generation = load(sync, GENERATION)
        if fetch_add(sync, COUNT, np.int64(1)) == team - 1:
            store(sync, COUNT, np.int64(0))
            fetch_add(sync, GENERATION, np.int64(1))
        else:
            while load(sync, GENERATION) == generation:
                pause()
