"""The fast CPU path's one-position steps as machine code compiled by Numba: a whole decoder stack's step for one
position of one stream in one call, instead of ~40 PyTorch operations a layer.

A CPU frame of the 0.6B model is ~110 layer steps, and through ``engine.model.one_position`` each is ~40 eager
operations around four int8 products: their dispatch costs as much as the products, and PyTorch's int8 kernel for one
row reads its weights at well under the memory's speed. Here each layer is a few loops in one compiled function: the
norms, RoPE, the cache writes and the attention as plain float32 loops, and each product as rows of int8 weights
(the same ``Int8Weight`` values and row scales) times its activations rounded to 15-bit integers with one scale,
summed in int32 (the processor's multiply-add of 16-bit pairs: twice the weights an instruction of the float
form), split over the cores in blocks of rows (docs/benchmarks.md#cpu-numba). The arithmetic is ``one_position``'s
in float32 except for the activations' rounding (at most 1/32766 of the largest, where PyTorch's kernel rounds each
to bfloat16, up to 1/256 of itself) and the order of the sums; tests/engine/model/test_one_position_numba.py holds
the two together. Where the processor has AVX512-VNNI the same integer sums can come from its 8-bit dot products
(``engine.model.vnni``): each stack measures both ways at load and keeps the faster (``vnni_faster``), with the
same outputs either way.

Numba compiles these functions once per machine (minutes on 2 cores) and keeps them in its cache
(``engine.numba_cache``); until they are there an engine speaks on the PyTorch steps while another process compiles
them (``engine.numba_cache.cold_start``). Where Numba is missing or a compile fails, ``numba_stacks`` returns None
and the PyTorch steps run. Calls are serialised by a lock: one stream steps at a time, and Numba's thread pool then
never sees two callers.
"""

from __future__ import annotations

import logging
import threading
import time
import warnings
from pathlib import Path

import numpy as np
import torch

from engine import options
from engine.model import int8, vnni
from engine.model.int8 import ACTIVATION_MAX, Int8Weight
from engine.model.layers import DecoderStack, KVCache
from engine.model.one_position import OnePosition
from engine.numba_cache import cold_start

log = logging.getLogger(__name__)

ROW_BLOCK = 16  # rows of a product one task computes (docs/benchmarks.md#cpu-numba)
# A product's activations as int16 within +-ACTIVATION_MAX (``engine.model.int8``), its sums in int32 over runs of
# SEGMENT: the largest run's sum, SEGMENT * 127 * ACTIVATION_MAX, stays under 2**31, so no sum can overflow.
SEGMENT = 1024
SCRATCH_ROW = 32  # 4-byte values a block's row of the VNNI products' scratch spans: no two blocks share a cache line
TINY = np.float32(int8.TINY)  # activations all below this are zeros (their scale would underflow)

try:
    import numba
    from numba import njit, prange
except Exception as _error:  # missing, or its LLVM library does not load here: the PyTorch steps run instead
    log.info("Numba is not usable here (%s); the CPU frames run through PyTorch", _error)
    numba = None

_lock = threading.Lock()
_failed: list[str] = []


def _prefer_wide_vectors() -> None:
    """Let LLVM vectorize with 512-bit registers where the processor has AVX-512: its tuning for these chips
    prefers 256-bit ones, with which the products run up to half as fast (docs/benchmarks.md#cpu-numba). Takes
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


if numba is not None:
    _compiler_warnings_to_debug_log()
    try:
        _prefer_wide_vectors()
    except Exception as _error:  # an llvmlite without host features: its default tuning stays
        log.info("Numba keeps its default vector width (%s)", _error)


def _cacheable() -> bool:
    """Numba caches what it compiled against a module's source file (in the user's cache folder,
    ``engine.numba_cache``); a frozen app has no source, so it compiles in each process there."""
    return Path(__file__).is_file()


if numba is not None:
    # fast-math's reassociation lets the sums vectorize; without its no-NaN and no-inf flags, which would let the
    # compiler drop the checks that keep a NaN in an input a NaN in the output
    _FAST = {"reassoc", "contract", "nsz", "arcp", "afn"}
    _JIT = {"fastmath": _FAST, "cache": _cacheable(), "nogil": True, "boundscheck": False}

    @njit(inline="always", **_JIT)
    def _quantize(x, xq):
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

    @njit(inline="always", **_JIT)
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

    @njit(inline="always", **_JIT)
    def _rows(q, scale, xq, sx, y, block, add):
        """``row_range`` for the rows of ``block``."""
        start = block * ROW_BLOCK
        row_range(q, scale, xq, sx, y, start, min(q.shape[0], start + ROW_BLOCK), add)

    @njit(inline="always", **_JIT)
    def vnni_range(q, scale, sums, lo, hi, sx, y, start, stop, add, part, acc):
        """``row_range``'s rows with the same int32 sums, four rows a step (``start`` a multiple of 4), made by
        ``engine.model.vnni`` from the activations' two bytes (``lo``, ``hi``: ``vnni.split``) and ``sums``
        (``vnni.weight_sums``); ``part`` (int32) and ``acc`` (float32), [SCRATCH_ROW], are scratch. Rows in
        fours, runs in 64s (``vnni.fits``)."""
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

    @njit(inline="always", **_JIT)
    def _rows_vnni(q, scale, sums, lo, hi, sx, y, block, add, parts, accs):
        """``vnni_range`` for the rows of ``block``; ``parts`` and ``accs`` [blocks, SCRATCH_ROW]: a row a block."""
        start = block * ROW_BLOCK
        vnni_range(q, scale, sums, lo, hi, sx, y, start, min(q.shape[0], start + ROW_BLOCK), add, parts[block],
                   accs[block])

    @njit(inline="always", **_JIT)
    def _product_into(wq, ws, wsum, xq, lo, hi, sx, y, add, vnni_on, parts, accs):
        """y (+)= the product of int8 weights ``wq`` (row scales ``ws``) with activations ``xq`` (scale ``sx``),
        split over the cores in blocks of rows: through ``engine.model.vnni`` (``lo``, ``hi`` filled here; ``wsum``
        its weight sums) where ``vnni_on``, else in 16-bit pairs."""
        if vnni_on:  # the arguments are read once, here, not in every task: so are the lists' entries given
            vnni.split(xq, lo, hi)
            for block in prange((wq.shape[0] + ROW_BLOCK - 1) // ROW_BLOCK):
                _rows_vnni(wq, ws, wsum, lo, hi, sx, y, block, add, parts, accs)
        else:
            for block in prange((wq.shape[0] + ROW_BLOCK - 1) // ROW_BLOCK):
                _rows(wq, ws, xq, sx, y, block, add)

    @njit(inline="always", **_JIT)
    def _rms(x, weight, eps, out):
        """out = weight * x / sqrt(mean(x^2) + eps)."""
        s = np.float32(0.0)
        for i in range(x.shape[0]):
            s += x[i] * x[i]
        r = np.float32(1.0) / np.sqrt(s / np.float32(x.shape[0]) + np.float32(eps))
        for i in range(x.shape[0]):
            out[i] = weight[i] * (x[i] * r)

    @njit(inline="always", **_JIT)
    def normed_rotated(qkv, r, layer, pos, cos, signed_sin, keys, qk_w, eps, heads, qk, attn):
        """Head r of q (r < heads) or of k in ``qkv`` normed by its row of ``qk_w`` and rotated for ``pos``: into
        ``attn``'s head r or the key cache at ``pos`` (qk: scratch [d])."""
        d = qk.shape[0]
        half = d // 2
        _rms(qkv[r * d : (r + 1) * d], qk_w[layer, r], eps, qk)
        target = attn[r * d : (r + 1) * d] if r < heads else keys[layer, r - heads, pos]
        for i in range(d):
            j = i + half if i < half else i - half
            target[i] = qk[i] * cos[pos, i] + qk[j] * signed_sin[pos, i]

    @njit(inline="always", **_JIT)
    def value_written(qkv, g, layer, pos, values, heads):
        """Head g of v in ``qkv`` into the value cache at ``pos``."""
        d = values.shape[3]
        start = (heads + values.shape[1] + g) * d
        for i in range(d):
            values[layer, g, pos, i] = qkv[start + i]

    @njit(inline="always", **_JIT)
    def attended(attn, head, layer, pos, keys, values, sc):
        """Query ``head`` of ``attn`` over the cache's slots [0, pos], replaced by its attention's output (sc:
        scratch [slots])."""
        d = keys.shape[3]
        g = head // (attn.shape[0] // d // keys.shape[1])
        q = attn[head * d : (head + 1) * d]
        top = np.float32(-np.inf)
        for t in range(pos + 1):
            acc = np.float32(0.0)
            kt = keys[layer, g, t]
            for i in range(d):
                acc += q[i] * kt[i]
            sc[t] = acc
            top = max(top, acc)
        total = np.float32(0.0)
        for t in range(pos + 1):
            sc[t] = np.exp(sc[t] - top)
            total += sc[t]
        for i in range(d):
            q[i] = np.float32(0.0)
        for t in range(pos + 1):
            p = sc[t] / total
            vt = values[layer, g, t]
            for i in range(d):
                q[i] += p * vt[i]

    @njit(inline="always", **_JIT)
    def silu_times(gu, act, start, stop):
        """act[i] = silu(gate[i]) * up[i] for i in [start, stop), ``gu`` = [gate | up]."""
        inter = act.shape[0]
        for i in range(start, stop):
            gate = gu[i]
            act[i] = gate / (np.float32(1.0) + np.exp(-gate)) * gu[inter + i]

    @njit(parallel=True, **_JIT)
    def _product(q, scale, x, xq, y):
        """y = the product of int8 weights ``q`` (row scales ``scale``) with one row x, split over the cores (xq:
        scratch)."""
        sx = _quantize(x, xq)
        for block in prange((q.shape[0] + ROW_BLOCK - 1) // ROW_BLOCK):
            _rows(q, scale, xq, sx, y, block, False)

    @njit(parallel=True, **_JIT)
    def _stack_step(x, pos, cos, signed_sin, keys, values, in_w, qkv_q, qkv_s, qkv_sum, qk_w, out_q, out_s, out_sum,
                    post_w, gu_q, gu_s, gu_sum, down_q, down_s, down_sum, norm_w, eps, heads, vnni_on, final_norm, out,
                    h, qkv, qk, attn, scores, gu, act, hq, attnq, actq, h_lo, h_hi, a_lo, a_hi, c_lo, c_hi, parts,
                    accs):
        """One position through every layer: x [H] (changed in place: the residual stream) at ``pos`` over keys
        and values [L, kv, S, d]; with ``final_norm`` the normed output into ``out`` [H]. ``vnni_on``: the products
        through ``engine.model.vnni``, with the weights' ``*_sum`` (``_product_into``). The rest are scratch."""
        n_layers, kv = keys.shape[:2]
        inter = gu.shape[0] // 2
        for layer in range(n_layers):
            _rms(x, in_w[layer], eps, h)
            sx = _quantize(h, hq)
            _product_into(qkv_q[layer], qkv_s[layer], qkv_sum[layer], hq, h_lo, h_hi, sx, qkv, False, vnni_on,
                          parts, accs)
            # q and k: each head normed, then rotated; k and v written at pos
            for r in range(heads + kv):
                normed_rotated(qkv, r, layer, pos, cos, signed_sin, keys, qk_w, eps, heads, qk, attn)
            for g in range(kv):
                value_written(qkv, g, layer, pos, values, heads)
            # attention of each query head over the filled slots; its output replaces the head's query in attn
            for head in prange(heads):
                attended(attn, head, layer, pos, keys, values, scores[head])
            sx = _quantize(attn, attnq)
            _product_into(out_q[layer], out_s[layer], out_sum[layer], attnq, a_lo, a_hi, sx, x, True, vnni_on,
                          parts, accs)
            _rms(x, post_w[layer], eps, h)
            sx = _quantize(h, hq)
            _product_into(gu_q[layer], gu_s[layer], gu_sum[layer], hq, h_lo, h_hi, sx, gu, False, vnni_on,
                          parts, accs)
            silu_times(gu, act, 0, inter)
            sx = _quantize(act, actq)
            _product_into(down_q[layer], down_s[layer], down_sum[layer], actq, c_lo, c_hi, sx, x, True, vnni_on,
                          parts, accs)
        if final_norm:
            _rms(x, norm_w, eps, out)


def _listed(weights: list[Int8Weight]) -> tuple[object, np.ndarray]:
    """The layers' int8 values as a Numba list of arrays over the weights' own memory (a copy would stay resident:
    the allocator keeps what the originals freed) and their row scales as float32 [L, N]."""
    q = numba.typed.List()
    for w in weights:
        q.append(w.q.numpy())
    return q, torch.stack([w.scale for w in weights]).float().numpy()


def _sums(weights: list[Int8Weight], wanted: bool) -> object:
    """The layers' weight sums for ``engine.model.vnni`` (a Numba list of int32 [N, runs]), empty unless ``wanted``
    (the 16-bit products read none)."""
    out = numba.typed.List()
    for w in weights:
        out.append(vnni.weight_sums(w.q.numpy(), SEGMENT) if wanted else np.zeros((1, 0), np.int32))
    return out


class NumbaPosition:
    """``OnePosition`` as one Numba call a step; ``over(cache)`` binds a cache like ``OnePosition.over``. With
    ``vnni_sums`` (and products ``vnni.fits`` takes) it keeps the weight sums ``engine.model.vnni`` needs, and
    ``vnni`` (True from then) says whether the steps bound from now on take those products."""

    def __init__(self, stack: OnePosition, vnni_sums: bool = False):
        self.positions = stack
        layers = stack.layers
        self.eps = float(layers[0][3])
        self.heads = stack.heads
        weights = [[layer[i] for layer in layers] for i in (1, 4, 6, 7)]  # qkv, out, gate_up, down
        self.vnni_able = vnni_sums and all(isinstance(w, Int8Weight) and vnni.fits(w.q.numpy(), SEGMENT)
                                           for ws in weights for w in ws)
        self.vnni = self.vnni_able
        # steps bound from now on by a team, where it takes the stack; not where nothing compiled is cached (a frozen
        # app compiles at each start, and the team's compile costs more than it saves in a short session)
        self.team = options.current().cpu_team and _cacheable()
        self.in_w = np.stack([layer[0].weight.detach().float().numpy() for layer in layers])
        self.qkv, self.out, self.gate_up, self.down = ((*_listed(ws), _sums(ws, self.vnni_able)) for ws in weights)
        self.qk_w = torch.stack([layer[2] for layer in layers]).numpy()  # q's rows carry the attention's 1/sqrt(d)
        self.post_w = np.stack([layer[5].weight.detach().float().numpy() for layer in layers])
        self.norm_w = stack.norm.weight.detach().float().numpy()

    @property
    def teamed(self) -> bool:
        """Whether the steps bound from now on run as one parallel region (``engine.model.one_position_team``)."""
        from engine.model import one_position_team  # imported here: it imports this module

        return self.team and one_position_team.takes(self)

    def over(self, cache: KVCache) -> NumbaBoundStep:
        self.positions.tables(cache.max_len)
        return NumbaBoundStep(self, cache)


class NumbaBoundStep:
    """``BoundStep``'s ``step(x, pos, final_norm)`` through the Numba kernel. ``layers`` and ``scratch``: the
    kernel's arguments before ``final_norm`` (after x and pos) and after ``out``, for kernels that call it."""

    def __init__(self, stack: NumbaPosition, cache: KVCache):
        self.stack = stack
        k, v = cache.k[:, 0], cache.v[:, 0]  # [L, kv, S, d], one stream: contiguous
        if not (k.is_contiguous() and v.is_contiguous() and k.dtype == torch.float32):
            raise ValueError("the Numba step needs a float32 cache of one stream")
        self.keys, self.values = k.numpy(), v.numpy()
        s, d = stack.positions, stack.positions.head_dim
        width = stack.in_w.shape[1]
        self.x = np.empty(width, np.float32)
        qkv = np.empty(stack.qkv[1].shape[1], np.float32)
        gu = np.empty(stack.gate_up[1].shape[1], np.float32)
        h, attn, act = np.empty(width, np.float32), np.empty(s.heads * d, np.float32), np.empty(gu.shape[0] // 2,
                                                                                                 np.float32)
        blocks = max(q.shape[0] for q in (stack.qkv[0][0], stack.out[0][0], stack.gate_up[0][0], stack.down[0][0]))
        blocks = (blocks + ROW_BLOCK - 1) // ROW_BLOCK
        self.scratch = (h, qkv, np.empty(d, np.float32), attn, np.empty((s.heads, cache.max_len), np.float32), gu,
                        act, *(np.empty(a.shape[0], np.int16) for a in (h, attn, act)),
                        *(np.empty(a.shape[0], np.uint8) for a in (h, h, attn, attn, act, act)),
                        np.empty((blocks, SCRATCH_ROW), np.int32), np.empty((blocks, SCRATCH_ROW), np.float32))
        self.layers = (s.cos.numpy(), s.signed_sin.numpy(), self.keys, self.values, stack.in_w, *stack.qkv,
                       stack.qk_w, *stack.out, stack.post_w, *stack.gate_up, *stack.down, stack.norm_w, stack.eps,
                       stack.heads, stack.vnni and stack.vnni_able)
        from engine.model import one_position_team  # imported here: it imports this module

        self.team = None  # a team's own scratch, where a team steps this stack (``one_position_team``)
        if stack.teamed:
            self.team = one_position_team.TeamScratch(numba.config.NUMBA_NUM_THREADS, width, s.heads, d,
                                                      gu.shape[0] // 2).args
        self._step = one_position_team.step

    def __call__(self, x: torch.Tensor, pos: int, final_norm: bool = True) -> torch.Tensor | None:
        if not 0 <= pos < self.keys.shape[2]:  # the kernel does not check its indices
            raise IndexError(f"position {pos} is outside this cache's {self.keys.shape[2]} slots")
        out = np.empty(self.x.shape[0], np.float32)
        self.x[:] = x.reshape(-1).numpy()
        with _lock:
            self._step(self.x, pos, self.layers, final_norm, out, self.scratch, self.team, _follow_torch_threads())
        return torch.from_numpy(out)[None] if final_norm else None


class NumbaHead:
    """A code-predictor head's ``Int8Weight`` as ``row(x)`` -> float32 logits [1, N] through the Numba product."""

    def __init__(self, weight: Int8Weight):
        self.q, self.scale, self.width = weight.q.numpy(), weight.scale.float().numpy(), weight.shape[1]
        self.xq = np.empty(self.width, np.int16)

    def row(self, x: torch.Tensor) -> torch.Tensor:
        y = np.empty(self.q.shape[0], np.float32)
        with _lock:
            _follow_torch_threads()
            _product(self.q, self.scale, np.ascontiguousarray(x.reshape(-1).numpy(), np.float32), self.xq, y)
        return torch.from_numpy(y)[None]


def runs_numba(stack: DecoderStack) -> bool:
    """Whether Numba is here and ``stack``'s projections are all ``Int8Weight``."""
    if numba is None or _failed:
        return False
    return _all_int8([w for layer in stack.layers for w in (layer.self_attn.qkv_weight, layer.self_attn.out_weight,
                                                             layer.mlp.gate_up_weight, layer.mlp.down_weight)])


def _all_int8(weights: list) -> bool:
    return all(isinstance(w, Int8Weight) for w in weights)


def _follow_torch_threads() -> int:
    """Numba's threads for the calling thread's next kernels: PyTorch's count (which ``engine.frames.threads``
    chooses frame by frame), at most Numba's pool; returns it."""
    threads = max(1, min(torch.get_num_threads(), numba.config.NUMBA_NUM_THREADS))
    numba.set_num_threads(threads)
    return threads


def numba_stacks(talker, stacks: tuple[OnePosition, OnePosition]) -> tuple[NumbaPosition, NumbaPosition,
                                                                           list[NumbaHead]] | None:
    """The talker's and its code predictor's Numba steps and the predictor's heads, made and compiled once per
    talker; None where the ``cpu_numba`` option is off, Numba is missing, a stack's projections or the heads are
    not all int8, or a compile failed (the PyTorch steps then run), and while the cold-start bridge
    speaks on the PyTorch steps (``engine.numba_cache.cold_start``; not remembered)."""
    if not options.current().cpu_numba or not cold_start.numba_now():
        return None
    made = getattr(talker, "_numba_stacks", None)
    if made is not None and made[0] is stacks:
        return made[1]
    steps = None
    cp = talker.code_predictor
    if (runs_numba(talker.model) and runs_numba(cp.model)
            and _all_int8(cp.head_weights or [None])):
        wanted = options.current().cpu_vnni and vnni.available()
        built = NumbaPosition(stacks[0], wanted), NumbaPosition(stacks[1], wanted)
        heads = [NumbaHead(w) for w in cp.head_weights]
        if compile_check(built, heads):
            for stack in built:
                stack.vnni = stack.vnni_able and vnni_faster(stack)
            log.info("CPU products: talker %s, code predictor %s", *("VNNI" if s.vnni else "16-bit" for s in built))
            steps = (*built, heads)
    talker._numba_stacks = (stacks, steps)
    return steps


def vnni_faster(stack: NumbaPosition, positions: int = 64, rounds: int = 4) -> bool:
    """Whether ``stack``'s steps run faster here with the VNNI products than with the 16-bit ones: a step at the
    middle of a ``positions``-slot cache each way, alternating, ``rounds`` times (the first of each untimed), the
    medians compared. Which is faster depends on the processor and its caches: the same products, cached or
    streamed from memory, run up to 1.5x faster on one machine and half as fast on another
    (docs/benchmarks.md#cpu-vnni); both give the same outputs, bit for bit."""
    cache = KVCache(stack.in_w.shape[0], 1, stack.positions.kv_heads, positions, stack.positions.head_dim,
                    torch.float32, "cpu")
    x = torch.linspace(-1.0, 1.0, stack.in_w.shape[1])[None]
    steps = {}
    for way in (False, True):  # a bound step takes the stack's way when it is bound
        stack.vnni = way
        steps[way] = stack.over(cache)
    stack.vnni = stack.vnni_able
    times: dict[bool, list[float]] = {False: [], True: []}
    for _ in range(rounds):
        for way, step in steps.items():
            start = time.perf_counter()
            step(x, positions // 2)
            times[way].append(time.perf_counter() - start)
    return float(np.median(times[True][1:])) < float(np.median(times[False][1:]))


def compile_check(stacks: tuple[NumbaPosition, NumbaPosition], heads: list[NumbaHead] = ()) -> bool:
    """Compile the kernels now (a step of a scratch cache each, a row through the first head) so that a failure
    falls back before the first frame; False, logged, when Numba cannot compile them here."""
    try:
        for stack in stacks:
            width = stack.in_w.shape[1]
            n_layers, kv, d = stack.in_w.shape[0], stack.positions.kv_heads, stack.positions.head_dim
            cache = KVCache(n_layers, 1, kv, 2, d, torch.float32, "cpu")
            try:
                stack.over(cache)(torch.ones(1, width), 0)
            except Exception as e:  # the team's own code (its atomics) may fail where the per-region steps compile
                if not stack.team:
                    raise
                log.warning("compiling the CPU steps' team failed; each step takes five parallel regions a layer: %s",
                            str(e)[-2000:])
                for s in stacks:
                    s.team = False
                stack.over(cache)(torch.ones(1, width), 0)
        q = np.zeros((ROW_BLOCK, 8), np.int8)
        _product(q, np.ones(ROW_BLOCK, np.float32), np.zeros(8, np.float32), np.empty(8, np.int16),
                 np.empty(ROW_BLOCK, np.float32))
        for head in heads[:1]:
            head.row(torch.zeros(1, head.width))
        return True
    except Exception as e:  # numba raises many types (typing, lowering, LLVM); the PyTorch steps always work
        _failed.append(str(e))
        log.warning("compiling the Numba CPU steps failed; running the PyTorch steps: %s", str(e)[-2000:])
        return False
