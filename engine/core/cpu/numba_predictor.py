"""A code-predictor frame of the fast CPU path as one Numba call: the 15 passes of ``predict_codes_by_position``
with their heads and draws, and the sum of the frame's 16 code embeddings that feeds the next talker step.

Through ``predict_codes_by_position`` each pass returns to Python for a few PyTorch operations (the next code's
embedding row, the head's product, the draw), a share of a frame that grows as the products are split over more
cores (docs/benchmarks.md#cpu-predictor-frame). Here the passes run back to back in compiled code: the same Numba steps
and products (``engine.core.cpu.numba_layer``), each draw as ``engine.core.sampling._sample_one_row`` makes it
(greedy, or top-k without top-p; other settings take the per-pass path), from the same Gumbel terms made by PyTorch
once a frame. The first pass's two positions (the talker's hidden and code 0) go as one call of two rows, which
reads the predictor's weights once where two steps read them twice, with the two steps' outputs.
The draws and the embedding sum are plain IEEE float32 (no fast-math), so the codes are the per-pass path's
wherever its inputs are (a predictor as wide as the talker reads its embedding rows as they are); a narrower
predictor reads its rows from tables projected once at load, a product in another order than the per-pass one's.
"""

from __future__ import annotations

from collections import namedtuple

import numpy as np
import torch
import torch.nn as nn

from engine.core.cpu import numba_layer as kernels
from engine.core.cpu import one_position_numba as jit
from engine.core.frames.codes import NUM_DRAWS, predictor_draws
from engine.core.sampling import StageSettings, draws_without_sort, gumbel

# what a frame reads of a talker besides its steps: the rows each pass reads (``inputs``: a Numba list of [V, h]),
# the codebook tables whose rows the frame's sum adds (``rows``), the heads' int8 values (a Numba list of [V, h])
# and row scales [15, V]
Tables = namedtuple("Tables", "inputs rows head_q head_s")
# a frame's buffers: the first two positions' inputs [2, h], a later position's input [1, h], a table row, the
# embedding sum, a head's rounded input, logits and scaled logits [V], the stack's output [1, h], the codes [15],
# and the step's buffers for two rows (``NumbaBoundStep.scratch_of``)
FrameScratch = namedtuple("FrameScratch", "first x row total head_xq logits scaled hidden codes step")
# a frame's draws (``engine.core.sampling._sample_one_row``'s): Gumbel terms [15, V], greedy, temperature, top-k
Draws = namedtuple("Draws", "gumbel greedy temperature top_k")

if kernels.numba is not None:
    from numba import njit, types
    from numba.extending import overload

    _EXACT = {"cache": kernels.cacheable(), "nogil": True, "boundscheck": False}  # IEEE float32: PyTorch's values

    def _row_into(table, code, out):
        """out = table[code] as float32 (a bfloat16 table, stored as its uint16 bits, widened)."""

    @overload(_row_into, jit_options=_EXACT)
    def _row_into_typed(table, code, out):
        if table.dtype == types.uint16:
            def widen(table, code, out):
                bits = out.view(np.uint32)
                for i in range(out.shape[0]):
                    bits[i] = np.uint32(table[code, i]) << np.uint32(16)
            return widen

        def copy(table, code, out):
            for i in range(out.shape[0]):
                out[i] = table[code, i]
        return copy

    @njit(**_EXACT)
    def _argmax(v):
        """The index of the first largest value, or of the first NaN (torch.argmax's)."""
        best, at = v[0], 0
        for i in range(1, v.shape[0]):
            if best != best:
                break
            if v[i] > best or v[i] != v[i]:
                best, at = v[i], i
        return at

    @njit(**_EXACT)
    def _draw(logits, gumbel, greedy, temperature, top_k, scaled):
        """``_sample_one_row``'s pick from float32 logits [V] (overwritten): the argmax when greedy, else the
        argmax of logits / temperature - gumbel over the values at least the k-th largest (ties kept)."""
        if greedy:
            return _argmax(logits)
        n = logits.shape[0]
        for i in range(n):
            scaled[i] = logits[i] / temperature
        kth = np.partition(scaled, n - top_k)[n - top_k]
        for i in range(n):
            logits[i] = -np.inf if scaled[i] < kth else scaled[i] - gumbel[i]
        return _argmax(logits)

    @njit(**_EXACT)
    def _add_into(total, row):
        for i in range(total.shape[0]):
            total[i] += row[i]

    @njit(**kernels.JIT)
    def _frame(t, f, draws, w, kv):
        """The predictor's 15 passes through ``numba_layer.stack_step`` (``w``, ``kv``: the bound step's records):
        the first as one call of two rows, ``f.first`` (the talker's hidden and code 0's input) at positions 0 and
        1; pass j reads code j's input row from ``t.inputs[j - 1]`` into ``f.x``; codes into ``f.codes``;
        ``f.total`` (code 0's row in) gains each code's row of ``t.rows``."""
        s = f.step
        # position 0 as an int64, not a literal: the compiled step every other call takes, not one of its own
        kernels.stack_step(f.first, np.int64(0), w, kv, s, True, f.hidden)
        codes = f.codes
        for j in range(codes.shape[0]):
            if j:
                _row_into(t.inputs[j - 1], codes[j - 1], f.x[0])
                _row_into(t.rows[j - 1], codes[j - 1], f.row)
                _add_into(f.total, f.row)
                kernels.stack_step(f.x, j + 1, w, kv, s, True, f.hidden)
            kernels.product(t.head_q[j], t.head_s[j], f.hidden[0], f.head_xq, f.logits)
            codes[j] = _draw(f.logits, draws.gumbel[j], draws.greedy, draws.temperature, draws.top_k, f.scaled)
        last = codes.shape[0] - 1
        _row_into(t.rows[last], codes[last], f.row)
        _add_into(f.total, f.row)


def _kernel_table(table: torch.Tensor) -> np.ndarray:
    """A table's values for the kernel without a copy: bfloat16 as its bits (uint16), float32 as it is."""
    if table.dtype == torch.bfloat16:
        return table.contiguous().view(torch.int16).numpy().view(np.uint16)
    return table.float().contiguous().numpy()


class PredictorTables:
    """What the kernel reads of a talker besides its steps, made once per talker (``predictor_tables``): ``kernel``,
    the 15 codebook tables, the rows each pass reads (the same tables, or for a narrower predictor each table's rows
    through the projection: [V, h] float32, 117 MB for the 1.7B) and the heads' int8 values and scales; and the zero
    Gumbel terms greedy draws are given."""

    def __init__(self, talker, heads: list[jit.NumbaHead]):
        cp = talker.code_predictor
        weights = [emb.weight for emb in cp.model.codec_embedding]
        tables = [w.detach() for w in weights]
        rows = kernels.numba.typed.List([_kernel_table(t) for t in tables])
        if isinstance(cp.small_to_mtp_projection, nn.Identity):
            inputs = rows
        else:
            projected: dict[int, np.ndarray] = {}  # a table several codebooks share (the speed probe's) once
            with torch.inference_mode():
                for w, t in zip(weights[:-1], tables[:-1], strict=True):
                    if id(w) not in projected:
                        projected[id(w)] = cp.project(t.float()).contiguous().numpy()
            inputs = kernels.numba.typed.List([projected[id(w)] for w in weights[:-1]])
        self.kernel = Tables(inputs, rows, kernels.numba.typed.List([h.q for h in heads]),
                             np.stack([h.scale for h in heads]))
        self.no_gumbel = np.zeros((len(heads), heads[0].q.shape[0]), np.float32)


def predictor_tables(talker, heads: list[jit.NumbaHead]) -> PredictorTables:
    """``PredictorTables`` of ``talker`` for these heads, made on first use."""
    made = getattr(talker, "_numba_predictor_tables", None)
    if made is None or made[0] is not heads:
        made = talker._numba_predictor_tables = (heads, PredictorTables(talker, heads))
    return made[1]


class NumbaPredictorFrame:
    """``predict_codes_by_position`` over one predictor cache (``step``: its Numba step) as one Numba call a frame,
    plus the frame's embedding sum (``Talker.embed_frame``); ``takes(settings)`` says whether its draws are these
    settings'."""

    def __init__(self, talker, step: jit.NumbaBoundStep, heads: list[jit.NumbaHead]):
        if step.slots < NUM_DRAWS:
            raise ValueError("the predictor's cache has fewer slots than a frame's codes")
        self.talker, self.step, self.tables = talker, step, predictor_tables(talker, heads)
        vocab, width = self.tables.no_gumbel.shape[1], heads[0].width
        self.scratch = FrameScratch(
            first=np.empty((2, width), np.float32), x=np.empty((1, width), np.float32),
            row=np.empty(self.tables.kernel.rows[0].shape[1], np.float32), total=None,
            head_xq=np.empty(width, np.int16), logits=np.empty(vocab, np.float32), scaled=np.empty(vocab, np.float32),
            hidden=np.empty((1, width), np.float32), codes=None, step=step.scratch_of(2))

    def takes(self, settings: StageSettings) -> bool:
        """Whether a draw with these settings (row 0) is one this kernel makes."""
        return draws_without_sort(settings, self.scratch.logits.shape[0])

    def __call__(self, hidden: torch.Tensor, code0: torch.Tensor, settings: StageSettings, seeds: torch.Tensor,
                 frame: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """All 16 codes [1, 16] of the frame from the talker hidden [1, H] and code 0 [1], and the sum of their
        16 embeddings [1, H]."""
        cp, tables = self.talker.code_predictor, self.tables
        n, vocab = tables.no_gumbel.shape
        greedy = bool(settings.greedy[0])
        if greedy:
            terms = tables.no_gumbel
        else:
            _, noise = predictor_draws(seeds, frame, n, vocab)  # [15, V]
            terms = gumbel(noise).numpy()
        embedded = self.talker.embed_codec(code0).float()  # [1, H]
        f = self.scratch._replace(total=embedded.reshape(-1).numpy().copy(), codes=np.empty(n, np.int64))
        f.first[0] = cp.project(hidden).reshape(-1).numpy()
        f.first[1] = cp.project(embedded).reshape(-1).numpy()
        draws = Draws(terms, greedy, np.float32(settings.temperature[0]), int(settings.top_k[0]))
        step = self.step
        with jit.KERNEL_LOCK:
            jit.follow_torch_threads()
            _frame(tables.kernel, f, draws, step.weights, step.kv)
        return torch.cat([code0, torch.from_numpy(f.codes)])[None], torch.from_numpy(f.total)[None]
