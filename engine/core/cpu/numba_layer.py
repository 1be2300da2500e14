"""The fast CPU path's decoder layer as Numba code, written once: one body (``stack_step``) takes R consecutive
positions of one stream, and serves the one-position step of a stack (R = 1: ``engine.core.cpu.one_position_numba``),
the code predictor's passes (``engine.core.cpu.numba_predictor``) and a prompt's rows (``NumbaBoundStep.rows``).

A CPU frame of the 0.6B model is ~110 layer steps; through ``engine.core.cpu.one_position`` each is ~40 eager PyTorch
operations around four int8 products, whose dispatch costs as much as the products. Here a whole stack's step is
one call: the norms, RoPE, the cache writes and the attention as plain float32 loops, and each product as rows of
int8 weights (the same ``Int8Weight`` values and row scales) times its activations rounded to 15-bit integers with
one scale a row, summed in int32 (the processor's multiply-add of 16-bit pairs, or its 8-bit dot products through
``engine.core.cpu.vnni``: the same sums), split over the cores in blocks of weight rows (docs/benchmarks.md#cpu-numba),
each block dotted with all R rows so that a prompt reads its weights once, not once a row. Every row is rounded,
summed and attended as a one-position step at its position would do it, so R rows give what R steps give, up to
the association of float32 sums that fast-math leaves to the compiler (tests/engine/model/test_numba_rows.py).
The arithmetic is ``one_position``'s in float32 except for the activations' rounding (at most 1/32766 of the
largest, where PyTorch's kernel rounds each to bfloat16) and the order of the sums.

Kernels take records, not dozens of arrays: ``Weights`` (a stack's layers), ``Product`` (one projection of every
layer), ``KV`` (a bound cache and its rotary tables), ``Rounded`` (a product's activations as integers) and
``Scratch`` (a call's buffers); ``engine.core.cpu.one_position_numba`` makes them. Numba caches what it compiles
against the sources' digest (``engine.core.cpu.numba_cache``), which covers every file inlined here.
"""

from __future__ import annotations

import logging
import warnings
from collections import namedtuple
from pathlib import Path

import numpy as np

from engine.core.cpu import int8, vnni
from engine.core.cpu.int8 import ACTIVATION_MAX
from engine.core.cpu.numba_cache.folder import use_cache_folder

log = logging.getLogger(__name__)

ROW_BLOCK = 16  # rows of a product one task computes (docs/benchmarks.md#cpu-numba)
# A product's activations as int16 within +-ACTIVATION_MAX (``engine.core.cpu.int8``), its sums in int32 over runs of
# SEGMENT: the largest run's sum, SEGMENT * 127 * ACTIVATION_MAX, stays under 2**31, so no sum can overflow.
SEGMENT = 1024
SCRATCH_ROW = 32  # 4-byte values a block's row of the VNNI products' scratch spans: no two blocks share a cache line
TINY = np.float32(int8.TINY)  # activations all below this are zeros (their scale would underflow)

# one projection of every layer: int8 values (a Numba list of [N, K] arrays over the weights' own memory), row scales
# float32 [L, N], and for VNNI each run's weight sums (a Numba list of int32 [N, runs]; [1, 0] arrays without)
Product = namedtuple("Product", "q scale sums")
# a stack: norms [L, H], the four products, the q and k heads' norm weights [L, heads + kv, d] (q's rows carry the
# attention's 1/sqrt(d)), the final norm [H], the norms' epsilon, the query heads, and whether products take VNNI
Weights = namedtuple("Weights", "in_w qkv qk_w out post_w gate_up down norm_w eps heads vnni")
# a stream's cache [L, kv, S, d] and its rotary tables [S, d] (the sine's first half negated: ``OnePosition.tables``)
KV = namedtuple("KV", "keys values cos signed_sin")
# a product's activations, a row each: int16 values [R, K], their low and high bytes for VNNI (``vnni.split``), and
# each row's scale [R]
Rounded = namedtuple("Rounded", "q lo hi scale")
# a call's buffers for up to R rows: h [R, H], qkv [R, (heads + 2 kv) d], qk [R, d], attn [R, heads * d], scores
# [heads, S] (the rows of a head attend one after another), gu [R, 2I], act [R, I], the three products' rounded
# inputs (width H, heads * d, I), and the VNNI products' per-block scratch [blocks, SCRATCH_ROW]
Scratch = namedtuple("Scratch", "h qkv qk attn scores gu act h_in attn_in act_in parts accs")

use_cache_folder()  # before Numba's import: it reads its cache folder once
try:
    import numba
    from numba import njit, prange
except Exception as _error:  # missing, or its LLVM library does not load here: the PyTorch steps run instead
    log.info("Numba is not usable here (%s); the CPU frames run through PyTorch", _error)
    numba = None


def _prefer_wide_vectors() -> None:
    """Let LLVM vectorize with 512-bit registers where the processor has AVX-512: its tuning for these chips
    prefers 256-bit ones, with which the products run slower (docs/benchmarks.md#cpu-numba). Takes
    effect where nothing in this process has been compiled by Numba yet; a user's NUMBA_CPU_FEATURES stands."""
    import llvmlite.binding as llvm

    if numba.config.CPU_FEATURES is None:
        features = llvm.get_host_cpu_features().flatten()
        if "+avx512bw" in features.split(","):
            numba.config.CPU_FEATURES = features + ",-prefer-256-bit"


def _compiler_warnings_to_debug_log() -> None:
    """Numba's warnings (its pedantic IR checks ask whoever sees them to report them upstream) say nothing a user can
    act on: they go to this module's debug log; every other warning is shown as before."""
    shown = warnings.showwarning

    def show(message, category, filename, lineno, file=None, line=None):
        if issubclass(category, numba.NumbaWarning):
            log.debug("%s:%s: %s: %s", filename, lineno, category.__name__, message)
        else:
            shown(message, category, filename, lineno, file, line)

    warnings.showwarning = show


def _cache_typed_lists() -> None:
    """Cache what Numba compiles for its typed lists (``numba.typed.List`` made and filled from Python, as the
    kernels' records are): Numba's own functions for them are not cached, so every process compiled them anew,
    seconds of each load's time on a warm cache. Their entries go to the same cache folder as the kernels'."""
    from numba.core.dispatcher import Dispatcher
    from numba.typed import typedlist

    if not cacheable():
        return
    for function in vars(typedlist).values():
        if isinstance(function, Dispatcher):
            function.enable_caching()


if numba is not None:
    _compiler_warnings_to_debug_log()
    try:
        _prefer_wide_vectors()
    except Exception as _error:  # an llvmlite without host features: its default tuning stays
        log.info("Numba keeps its default vector width (%s)", _error)


def cacheable() -> bool:
    """Numba caches what it compiled against a module's source file (in the user's cache folder,
    ``engine.core.cpu.numba_cache``); a frozen app has no source, so it compiles in each process there."""
    return Path(__file__).is_file()


if numba is not None:
    try:
        _cache_typed_lists()
    except Exception as _error:  # a Numba without these internals: its lists compile in each process, as before
        log.info("Numba's typed lists compile in each process (%s)", _error)

    # fast-math's reassociation lets the sums vectorize; without its no-NaN and no-inf flags, which would let the
    # compiler drop the checks that keep a NaN in an input a NaN in the output
    FAST = {"reassoc", "contract", "nsz", "arcp", "afn"}
    JIT = {"fastmath": FAST, "cache": cacheable(), "nogil": True, "boundscheck": False}
    INLINE = {"inline": "always", "nogil": True, "boundscheck": False}  # inlined code takes its caller's flags

    @njit(**INLINE)
    def quantize(x, xq):
        """xq = x / sx rounded to integers within +-ACTIVATION_MAX; returns sx: NaN where x holds a NaN or an
        infinity (the products' outputs are then NaN, as the float products' would be), 1 where every value is
        under TINY (they count as zeros)."""
        top = np.float32(0.0)
        finite = True
        for i in range(x.shape[0]):
            a = abs(x[i])
            finite &= a < np.float32(np.inf)  # False for a NaN too
            top = max(top, a)
        if not finite or top < TINY:
            for i in range(x.shape[0]):
                xq[i] = 0
            return np.float32(np.nan) if not finite else np.float32(1.0)
        sx = top / np.float32(ACTIVATION_MAX)
        inv = np.float32(1.0) / sx
        for i in range(x.shape[0]):
            xq[i] = np.int16(np.rint(x[i] * inv))
        return sx

    @njit(**INLINE)
    def row_range(q, scale, xq, sx, y, start, stop, add):
        """y[n] (+)= scale[n] * sx * (q[n] . xq) for rows [start, stop): int8 times int16 summed in int32 over runs
        of SEGMENT (the form x86's multiply-add of 16-bit pairs takes), each run's sum then in float32."""
        k = q.shape[1]
        for n in range(start, stop):
            row = q[n]
            acc = np.float32(0.0)
            for first in range(0, k, SEGMENT):
                qs, xs = row[first : first + SEGMENT], xq[first : first + SEGMENT]
                part = np.int32(0)
                for i in range(qs.shape[0]):
                    part = np.int32(part + np.int16(qs[i]) * xs[i])  # int32: the form that vectorizes
                acc += np.float32(part)
            if add:
                y[n] += acc * (scale[n] * sx)
            else:
                y[n] = acc * (scale[n] * sx)

    @njit(**INLINE)
    def vnni_range(q, scale, sums, lo, hi, sx, y, start, stop, add, part, acc):
        """``row_range``'s rows with the same int32 sums, four rows a step (``start`` a multiple of 4), made by
        ``engine.core.cpu.vnni`` from the activations' two bytes (``lo``, ``hi``) and ``sums`` (``vnni.weight_sums``);
        ``part`` (int32) and ``acc`` (float32), [SCRATCH_ROW], are scratch. Rows in fours, runs in 64s."""
        k = q.shape[1]
        for n in range(start, stop, vnni.ROWS):
            for r in range(vnni.ROWS):
                acc[r] = np.float32(0.0)
            for seg in range(sums.shape[1]):
                first = seg * SEGMENT
                vnni.dot4(q, n, first, min(k, first + SEGMENT), lo, hi, part)
                for r in range(vnni.ROWS):
                    acc[r] += np.float32(vnni.joined(part[2 * r], part[2 * r + 1], sums[n + r, seg]))
            for r in range(vnni.ROWS):
                if add:
                    y[n + r] += acc[r] * (scale[n + r] * sx)
                else:
                    y[n + r] = acc[r] * (scale[n + r] * sx)

    @njit(**INLINE)
    def product_into(p, layer, rounded, rows, y, add, vnni_on, s):
        """y[r] (+)= layer ``layer`` of product ``p`` times row r of the activations ``rounded``, for r < ``rows``,
        split over the cores in blocks of ROW_BLOCK weight rows, each block dotted with every row so that its
        weights are read from memory once: through ``engine.core.cpu.vnni`` where ``vnni_on``, else in 16-bit
        pairs."""
        q, scale, sums = p.q[layer], p.scale[layer], p.sums[layer]  # read once here, not in every task
        xq, lo, hi, sx, parts, accs = rounded.q, rounded.lo, rounded.hi, rounded.scale, s.parts, s.accs
        blocks = (q.shape[0] + ROW_BLOCK - 1) // ROW_BLOCK
        if vnni_on:
            for block in prange(blocks):
                start = block * ROW_BLOCK
                stop = min(q.shape[0], start + ROW_BLOCK)
                for r in range(rows):
                    vnni_range(q, scale, sums, lo[r], hi[r], sx[r], y[r], start, stop, add, parts[block],
                               accs[block])
        else:
            for block in prange(blocks):
                start = block * ROW_BLOCK
                stop = min(q.shape[0], start + ROW_BLOCK)
                for r in range(rows):
                    row_range(q, scale, xq[r], sx[r], y[r], start, stop, add)

    @njit(**INLINE)
    def rms(x, weight, eps, out):
        """out = weight * x / sqrt(mean(x^2) + eps)."""
        s = np.float32(0.0)
        for i in range(x.shape[0]):
            s += x[i] * x[i]
        r = np.float32(1.0) / np.sqrt(s / np.float32(x.shape[0]) + np.float32(eps))
        for i in range(x.shape[0]):
            out[i] = weight[i] * (x[i] * r)

    @njit(**INLINE)
    def normed_rotated(head, weight, eps, cos, signed_sin, normed, target):
        """target = ``head`` [d] RMS-normed by ``weight`` and rotated: ``normed * cos + roll(normed, d/2) *
        signed_sin``, ``rotate_half``'s form (``normed``: scratch [d])."""
        d = normed.shape[0]
        half = d // 2
        rms(head, weight, eps, normed)
        for i in range(d):
            j = i + half if i < half else i - half
            target[i] = normed[i] * cos[i] + normed[j] * signed_sin[i]

    @njit(**INLINE)
    def silu(gate):
        return gate / (np.float32(1.0) + np.exp(-gate))

    @njit(**INLINE)
    def attended(q, keys, values, slots, scores):
        """q [d] replaced by its attention over rows [0, slots) of keys and values [S, d] (scores: scratch)."""
        d = q.shape[0]
        top = np.float32(-np.inf)
        for t in range(slots):
            acc = np.float32(0.0)
            kt = keys[t]
            for i in range(d):
                acc += q[i] * kt[i]
            scores[t] = acc
            top = max(top, acc)
        total = np.float32(0.0)
        for t in range(slots):
            scores[t] = np.exp(scores[t] - top)
            total += scores[t]
        for i in range(d):
            q[i] = np.float32(0.0)
        for t in range(slots):
            p = scores[t] / total
            vt = values[t]
            for i in range(d):
                q[i] += p * vt[i]

    NORMED, ROUNDED, ACTIVATED = range(3)  # what ``row_rounded`` rounds

    @njit(**INLINE)
    def rounded_row(values, xq, lo, hi, vnni_on):
        """``quantize(values, xq)``, and for VNNI the integers' two bytes (``vnni.split``); returns the scale."""
        sx = quantize(values, xq)
        if vnni_on:
            vnni.split(xq, lo, hi)
        return sx

    @njit(**INLINE)
    def row_rounded(stage, src, weight, eps, buf, xq, lo, hi, sx, vnni_on, r):
        """Row r of a product's activations, rounded into xq[r] (lo[r], hi[r]) and sx[r]: ``NORMED``, src[r] RMS-normed
        by ``weight`` into buf[r]; ``ROUNDED``, src[r] as it is; ``ACTIVATED``, SiLU(gate) * up of src[r] [2I] into
        buf[r] [I]."""
        if stage == NORMED:
            rms(src[r], weight, eps, buf[r])
        elif stage == ACTIVATED:
            gu, act = src[r], buf[r]
            inter = act.shape[0]
            for i in range(inter):
                act[i] = silu(gu[i]) * gu[inter + i]
        sx[r] = rounded_row(src[r] if stage == ROUNDED else buf[r], xq[r], lo[r], hi[r], vnni_on)

    @njit(**INLINE)
    def rounded_rows(stage, rows, src, weight, eps, buf, rounded, vnni_on):
        """``row_rounded`` of rows [0, rows): in parallel where there are several (starting the cores' tasks costs
        more than one row's work)."""
        xq, lo, hi, sx = rounded.q, rounded.lo, rounded.hi, rounded.scale  # records stay out of parallel loops
        # one row's branch loops as well: Numba 0.68 compiled a direct call with r = 0 wrongly here
        # (tests/engine/model/test_numba_rows.py holds the two branches to each other)
        if rows == 1:
            for r in range(rows):
                row_rounded(stage, src, weight, eps, buf, xq, lo, hi, sx, vnni_on, r)
        else:
            for r in prange(rows):
                row_rounded(stage, src, weight, eps, buf, xq, lo, hi, sx, vnni_on, r)

    @njit(**INLINE)
    def row_heads(qkv, qk_w, eps, cos, signed_sin, qk, attn, keys, values, pos, r):
        """Row r at ``pos``: its q heads of qkv[r] normed (``qk_w``) and rotated into attn[r], its k heads the same
        into ``keys`` [kv, S, d] at ``pos``, its v heads into ``values`` there (qk[r]: scratch)."""
        groups, d = keys.shape[0], qk.shape[1]
        heads, row = attn.shape[1] // d, qkv[r]
        for head in range(heads + groups):
            target = attn[r, head * d : (head + 1) * d] if head < heads else keys[head - heads, pos]
            normed_rotated(row[head * d : (head + 1) * d], qk_w[head], eps, cos[pos], signed_sin[pos], qk[r], target)
        for g in range(groups):
            values[g, pos] = row[(heads + groups + g) * d : (heads + groups + g + 1) * d]

    @njit(**INLINE)
    def heads_rows(rows, pos0, layer, w, kv, s):
        """``row_heads`` of rows [0, rows) at positions pos0..: in parallel where there are several."""
        qkv, qk_w, eps, cos, signed_sin = s.qkv, w.qk_w[layer], w.eps, kv.cos, kv.signed_sin
        qk, attn, keys, values = s.qk, s.attn, kv.keys[layer], kv.values[layer]
        if rows == 1:
            for r in range(rows):
                row_heads(qkv, qk_w, eps, cos, signed_sin, qk, attn, keys, values, pos0 + r, r)
        else:
            for r in prange(rows):
                row_heads(qkv, qk_w, eps, cos, signed_sin, qk, attn, keys, values, pos0 + r, r)

    @njit(**INLINE)
    def layer_step(x, pos0, layer, w, kv, s):
        """Decoder layer ``layer`` for R consecutive positions pos0 .. pos0 + R - 1 of one stream: x [R, H], the
        residual stream, changed in place; every row's key and value written into ``kv`` before row r attends to
        slots [0, pos0 + r]. Each row is rounded with its own scale, so row r's outputs are those of a one-row
        call at pos0 + r after the rows before it (up to how fast-math associates its float32 sums)."""
        rows, eps, on = x.shape[0], w.eps, w.vnni
        heads, groups, d = w.heads, kv.keys.shape[1], s.qk.shape[1]
        keys, values, attn, scores = kv.keys[layer], kv.values[layer], s.attn, s.scores
        rounded_rows(NORMED, rows, x, w.in_w[layer], eps, s.h, s.h_in, on)
        product_into(w.qkv, layer, s.h_in, rows, s.qkv, False, on, s)
        heads_rows(rows, pos0, layer, w, kv, s)
        for head in prange(heads):  # each query head's output replaces it in attn, row after row
            g = head // (heads // groups)
            for r in range(rows):
                attended(attn[r, head * d : (head + 1) * d], keys[g], values[g], pos0 + r + 1, scores[head])
        rounded_rows(ROUNDED, rows, attn, w.in_w[layer], eps, attn, s.attn_in, on)
        product_into(w.out, layer, s.attn_in, rows, x, True, on, s)
        rounded_rows(NORMED, rows, x, w.post_w[layer], eps, s.h, s.h_in, on)
        product_into(w.gate_up, layer, s.h_in, rows, s.gu, False, on, s)
        rounded_rows(ACTIVATED, rows, s.gu, w.in_w[layer], eps, s.act, s.act_in, on)
        product_into(w.down, layer, s.act_in, rows, x, True, on, s)

    @njit(parallel=True, **JIT)
    def stack_step(x, pos0, w, kv, s, final_norm, out):
        """Rows x [R, H] at positions pos0 .. pos0 + R - 1 through every layer of a stack (``layer_step``; R at
        most the scratch's rows); with ``final_norm`` the last out.shape[0] rows' normed outputs into ``out``."""
        for layer in range(w.in_w.shape[0]):
            layer_step(x, pos0, layer, w, kv, s)
        if final_norm:
            rows, n = x.shape[0], out.shape[0]
            for i in range(n):
                rms(x[rows - n + i], w.norm_w, w.eps, out[i])

    @njit(parallel=True, **JIT)
    def product(q, scale, x, xq, y):
        """y = the product of int8 weights ``q`` (row scales ``scale``) with one row x (xq: scratch), over the
        cores."""
        sx = quantize(x, xq)
        for block in prange((q.shape[0] + ROW_BLOCK - 1) // ROW_BLOCK):
            start = block * ROW_BLOCK
            row_range(q, scale, xq, sx, y, start, min(q.shape[0], start + ROW_BLOCK), False)
