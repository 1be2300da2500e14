"""The fast CPU path's one-position steps through Numba (``engine.core.cpu.numba_layer``): a whole decoder stack's step
for one position of one stream in one call, and the code predictor's heads, made from ``engine.core.cpu.one_position``'s
stacks. tests/engine/model/test_one_position_numba.py holds the two paths together. A prompt's rows go through the
same kernel, many positions a call (``NumbaBoundStep.rows``; ``prompt_step`` binds it to a prompt's cache), with the
outputs the steps would give them one after another (tests/engine/model/test_numba_rows.py).

Where the processor has AVX512-VNNI the products' integer sums can come from its 8-bit dot products
(``engine.core.cpu.vnni``): each stack measures both ways at load and keeps the faster (``vnni_faster``), with the
same outputs either way. Numba compiles the kernels once per machine (docs/benchmarks.md#cpu-cold-start) and keeps
them in its cache (``engine.core.cpu.numba_cache``); until they are there an engine speaks on the PyTorch steps while
another process compiles them (``engine.core.cpu.numba_cache.cold_start``). Where Numba is missing or a compile
fails, ``numba_stacks`` returns None and the PyTorch steps run. Calls are serialised by a lock: one stream steps at
a time, and Numba's thread pool then never sees two callers.
"""

from __future__ import annotations

import logging
import threading
import time

import numpy as np
import torch

from engine.core import options
from engine.core.cpu import numba_layer as kernels
from engine.core.cpu import vnni
from engine.core.cpu.int8 import Int8Weight
from engine.core.cpu.numba_cache import cold_start
from engine.core.cpu.numba_layer import KV, ROW_BLOCK, SCRATCH_ROW, SEGMENT, Product, Rounded, Scratch, Weights, numba
from engine.core.cpu.one_position import OnePosition, one_position_stacks
from engine.core.model.layers import DecoderStack, KVCache

log = logging.getLogger(__name__)

# held by every call of this package's Numba kernels (here and numba_predictor):
# one stream steps at a time, and Numba's thread pool never sees two callers
KERNEL_LOCK = threading.Lock()
# rows of a prompt one kernel call takes (``NumbaBoundStep.rows``): its scratch, ~150 KB a row for the 1.7B, stays
# small, and a longer prompt reads the weights once every PROMPT_ROWS rows
PROMPT_ROWS = 128
ROWS_EVENT = "orator::numba_rows"  # the profiler's name for a prompt's rows through the kernel
_failed: list[str] = []
PRODUCTS = (None, "vnni", "16-bit")  # numba_stacks' products: measured at load (None), or pinned by a test


def _product(weights: list[Int8Weight], wanted: bool) -> Product:
    """One projection of every layer as a ``Product``: the int8 values as a Numba list of arrays over the weights'
    own memory (a copy would stay resident: the allocator keeps what the originals freed), the row scales, and the
    weight sums ``engine.core.cpu.vnni`` needs where ``wanted`` (the 16-bit products read none)."""
    q, sums = numba.typed.List(), numba.typed.List()
    for w in weights:
        q.append(w.q.numpy())
        sums.append(vnni.weight_sums(w.q.numpy(), SEGMENT) if wanted else np.zeros((1, 0), np.int32))
    return Product(q, torch.stack([w.scale for w in weights]).float().numpy(), sums)


class NumbaPosition:
    """``OnePosition`` as one Numba call a step; ``over(cache)`` binds a cache like ``OnePosition.over``. With
    ``vnni_sums`` (and products ``vnni.fits`` takes) it keeps the weight sums ``engine.core.cpu.vnni`` needs, and
    ``vnni`` (True from then) says whether the steps bound from now on take those products."""

    def __init__(self, stack: OnePosition, vnni_sums: bool = False):
        self.positions = stack
        layers = stack.layers
        projections = [[layer[i] for layer in layers] for i in (1, 4, 6, 7)]  # qkv, out, gate_up, down
        self.vnni_able = vnni_sums and all(isinstance(w, Int8Weight) and vnni.fits(w.q.numpy(), SEGMENT)
                                           for ws in projections for w in ws)
        self.vnni = self.vnni_able
        qkv, out, gate_up, down = (_product(ws, self.vnni_able) for ws in projections)
        self.weights = Weights(
            in_w=np.stack([layer[0].weight.detach().float().numpy() for layer in layers]), qkv=qkv,
            qk_w=torch.stack([layer[2] for layer in layers]).numpy(), out=out,
            post_w=np.stack([layer[5].weight.detach().float().numpy() for layer in layers]), gate_up=gate_up,
            down=down, norm_w=stack.norm.weight.detach().float().numpy(), eps=float(layers[0][3]), heads=stack.heads,
            vnni=False)

    @property
    def width(self) -> int:
        return self.weights.in_w.shape[1]

    def over(self, cache: KVCache) -> NumbaBoundStep:
        self.positions.tables(cache.max_len)
        return NumbaBoundStep(self, cache)


class NumbaBoundStep:
    """``BoundStep``'s ``step(x, pos, final_norm)`` through ``numba_layer.stack_step``, and a prompt's rows through
    the same kernel (``rows``); ``weights``, ``kv`` and ``scratch`` (one row's) are its records, for kernels that
    call it (``x``: its input buffer [1, H])."""

    def __init__(self, stack: NumbaPosition, cache: KVCache):
        k, v = cache.k[:, 0], cache.v[:, 0]  # [L, kv, S, d], one stream: contiguous
        if not (k.is_contiguous() and v.is_contiguous() and k.dtype == torch.float32):
            raise ValueError("the Numba step needs a float32 cache of one stream")
        s = stack.positions
        self.stack = stack
        self.weights = stack.weights._replace(vnni=stack.vnni and stack.vnni_able)
        self.kv = KV(k.numpy(), v.numpy(), s.cos.numpy(), s.signed_sin.numpy())
        self.x = np.empty((1, stack.width), np.float32)
        self.scratch = self.scratch_of(1)

    @property
    def slots(self) -> int:
        return self.kv.keys.shape[2]

    def scratch_of(self, rows: int) -> Scratch:
        """Buffers for calls of up to ``rows`` rows over this cache."""
        w, s, width = self.weights, self.stack.positions, self.stack.width
        gu, attn = w.gate_up.scale.shape[1], s.heads * s.head_dim
        blocks = (max(p.scale.shape[1] for p in (w.qkv, w.out, w.gate_up, w.down)) + ROW_BLOCK - 1) // ROW_BLOCK

        def buffer(n: int) -> np.ndarray:
            return np.empty((rows, n), np.float32)

        def rounded(n: int) -> Rounded:
            return Rounded(np.empty((rows, n), np.int16), np.empty((rows, n), np.uint8),
                           np.empty((rows, n), np.uint8), np.empty(rows, np.float32))

        return Scratch(
            h=buffer(width), qkv=buffer(w.qkv.scale.shape[1]), qk=buffer(s.head_dim), attn=buffer(attn),
            scores=np.empty((s.heads, self.slots), np.float32), gu=buffer(gu), act=buffer(gu // 2),
            h_in=rounded(width), attn_in=rounded(attn), act_in=rounded(gu // 2),
            parts=np.empty((blocks, SCRATCH_ROW), np.int32), accs=np.empty((blocks, SCRATCH_ROW), np.float32))

    def __call__(self, x: torch.Tensor, pos: int, final_norm: bool = True) -> torch.Tensor | None:
        if not 0 <= pos < self.slots:  # the kernel does not check its indices
            raise IndexError(f"position {pos} is outside this cache's {self.slots} slots")
        out = np.empty_like(self.x)
        self.x[0] = x.reshape(-1).numpy()
        with KERNEL_LOCK:
            follow_torch_threads()
            kernels.stack_step(self.x, pos, self.weights, self.kv, self.scratch, final_norm, out)
        return torch.from_numpy(out) if final_norm else None

    def rows(self, x: torch.Tensor, pos0: int, every: bool = False) -> torch.Tensor:
        """Rows x [R, H] (or [1, R, H]) float32 at positions pos0 .. pos0 + R - 1, a prompt's, written into the
        cache: the stack's normed output of the last row [1, H], or with ``every`` of each row [R, H]. What R
        steps give, row for row (``numba_layer.layer_step``); in calls of at most ``PROMPT_ROWS`` rows (one scratch
        for all of them)."""
        width = self.x.shape[1]
        rows = np.array(x.detach().reshape(-1, width).numpy(), np.float32)  # a copy: the kernel changes it
        n = rows.shape[0]
        if n == 0 or not 0 <= pos0 <= self.slots - n:  # the kernel does not check its indices
            raise IndexError(f"positions {pos0}..{pos0 + n - 1} are outside this cache's {self.slots} slots")
        scratch = self.scratch if n == 1 else self.scratch_of(min(n, PROMPT_ROWS))
        out = np.empty((n if every else 1, width), np.float32)
        with torch.profiler.record_function(ROWS_EVENT):  # a profile names the kernel's time, as it does aten's
            for first in range(0, n, PROMPT_ROWS):
                chunk = rows[first : first + PROMPT_ROWS]
                last = first + chunk.shape[0] == n
                with KERNEL_LOCK:  # a chunk at a time: another stream's steps wait one chunk at most
                    follow_torch_threads()
                    kernels.stack_step(chunk, pos0 + first, self.weights, self.kv, scratch, every or last,
                                       out[first : first + chunk.shape[0]] if every else out)
        return torch.from_numpy(out)


class NumbaHead:
    """A code-predictor head's ``Int8Weight`` as ``row(x)`` -> float32 logits [1, N] through the Numba product."""

    def __init__(self, weight: Int8Weight):
        self.q, self.scale, self.width = weight.q.numpy(), weight.scale.float().numpy(), weight.shape[1]
        self.xq = np.empty(self.width, np.int16)

    def row(self, x: torch.Tensor) -> torch.Tensor:
        y = np.empty(self.q.shape[0], np.float32)
        with KERNEL_LOCK:
            follow_torch_threads()
            kernels.product(self.q, self.scale, np.ascontiguousarray(x.reshape(-1).numpy(), np.float32), self.xq, y)
        return torch.from_numpy(y)[None]


def runs_numba(stack: DecoderStack) -> bool:
    """Whether Numba is here and ``stack``'s projections are all ``Int8Weight``."""
    if numba is None or _failed:
        return False
    return _all_int8([w for layer in stack.layers for w in (layer.self_attn.qkv_weight, layer.self_attn.out_weight,
                                                             layer.mlp.gate_up_weight, layer.mlp.down_weight)])


def _all_int8(weights: list) -> bool:
    return all(isinstance(w, Int8Weight) for w in weights)


def follow_torch_threads() -> int:
    """Numba's threads for the calling thread's next kernels: PyTorch's count (which ``engine.core.cpu.threads``
    chooses frame by frame), at most Numba's pool; returns it."""
    threads = max(1, min(torch.get_num_threads(), numba.config.NUMBA_NUM_THREADS))
    numba.set_num_threads(threads)
    return threads


def numba_stacks(talker, stacks: tuple[OnePosition, OnePosition], products: str | None = None
                 ) -> tuple[NumbaPosition, NumbaPosition, list[NumbaHead]] | None:
    """The talker's and its code predictor's Numba steps and the predictor's heads, made and compiled once per
    talker; None where the ``cpu_numba`` option is off, Numba is missing, a stack's projections or the heads are
    not all int8, or a compile failed (the PyTorch steps then run), and while the cold-start bridge speaks on the
    PyTorch steps (``engine.core.cpu.numba_cache.cold_start``; not remembered). Their products are the plan's
    choice: VNNI where the processor has it and it measures faster at load (``vnni_faster``), else 16-bit;
    ``products`` ("vnni" or "16-bit") pins that choice instead, for a test (VNNI still only where a stack takes it)."""
    if products not in PRODUCTS:
        raise ValueError(f"products must be one of {PRODUCTS}, not {products!r}")
    if not options.current().cpu_numba or not cold_start.numba_now():
        return None
    made = getattr(talker, "_numba_stacks", None)
    if made is not None and made[0] is stacks:
        return made[1]
    steps = None
    cp = talker.code_predictor
    if runs_numba(talker.model) and runs_numba(cp.model) and _all_int8(cp.head_weights or [None]):
        wanted = products != "16-bit" and vnni.available()
        built = NumbaPosition(stacks[0], wanted), NumbaPosition(stacks[1], wanted)
        heads = [NumbaHead(w) for w in cp.head_weights]
        if compile_check(built, heads):
            for stack in built:
                stack.vnni = stack.vnni_able and (products == "vnni" or vnni_faster(stack))
            log.info("CPU products: talker %s, code predictor %s", *("VNNI" if s.vnni else "16-bit" for s in built))
            steps = (*built, heads)
    talker._numba_stacks = (stacks, steps)
    return steps


def prompt_step(talker, cache: KVCache) -> NumbaBoundStep | None:
    """The talker's Numba step over ``cache`` for a prompt's rows (``NumbaBoundStep.rows``), where the talker's frames
    step through Numba (``numba_stacks``) and ``cache`` holds one stream in float32 on the CPU; else None (the
    talker's own pass then runs)."""
    k = cache.k
    if k.device.type != "cpu" or k.dtype != torch.float32 or k.shape[1] != 1 or not k[:, 0].is_contiguous():
        return None
    stacks = one_position_stacks(talker)
    steps = numba_stacks(talker, stacks) if stacks is not None else None
    return steps[0].over(cache) if steps is not None else None


def _scratch_cache(stack: NumbaPosition, slots: int) -> KVCache:
    p = stack.positions
    return KVCache(stack.weights.in_w.shape[0], 1, p.kv_heads, slots, p.head_dim, torch.float32, "cpu")


def vnni_faster(stack: NumbaPosition, positions: int = 64, rounds: int = 4) -> bool:
    """Whether ``stack``'s steps run faster here with the VNNI products than with the 16-bit ones: a step at the
    middle of a ``positions``-slot cache each way, alternating, ``rounds`` times (the first of each untimed), the
    medians compared. Which is faster depends on the processor and its caches: the same products, cached or
    streamed from memory, run faster on one machine and slower on another (docs/benchmarks.md#cpu-vnni); both give
    the same outputs, bit for bit."""
    cache = _scratch_cache(stack, positions)
    x = torch.linspace(-1.0, 1.0, stack.width)[None]
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
            stack.over(_scratch_cache(stack, 2))(torch.ones(1, stack.width), 0)
        for head in heads[:1]:
            head.row(torch.zeros(1, head.width))
        return True
    except Exception as e:  # numba raises many types (typing, lowering, LLVM); the PyTorch steps always work
        _failed.append(str(e))
        log.warning("compiling the Numba CPU steps failed; running the PyTorch steps: %s", str(e)[-2000:])
        return False
