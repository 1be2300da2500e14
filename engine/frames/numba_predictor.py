"""A code-predictor frame of the fast CPU path as one Numba call: the 15 passes of ``predict_codes_by_position``
with their heads and draws, and the sum of the frame's 16 code embeddings that feeds the next talker step.

Through ``predict_codes_by_position`` each pass returns to Python for ~15 PyTorch operations (the next code's
embedding row, the head's product, the draw): 6-20% of a frame once the products are split over several cores
(docs/benchmarks.md#cpu-predictor-frame). Here the passes run back to back in compiled code: the same Numba steps
and products (``engine.model.one_position_numba``), each draw as ``engine.sampling._sample_one_row`` makes it
(greedy, or top-k without top-p; other settings take the per-pass path), from the same Gumbel terms made by PyTorch
once a frame.
The draws and the embedding sum are plain IEEE float32 (no fast-math), so the codes are the per-pass path's
wherever its inputs are (a predictor as wide as the talker reads its embedding rows as they are); a narrower
predictor reads its rows from tables projected once at load, a product in another order than the per-pass one's.
"""

from __future__ import annotations

import numpy as np
import torch
import torch.nn as nn

from engine.frames.codes import NUM_DRAWS, predictor_draws
from engine.model import one_position_numba as jit
from engine.model.one_position_team import step
from engine.sampling import StageSettings, draws_without_sort, gumbel

if jit.numba is not None:
    from numba import njit, types
    from numba.extending import overload

    _EXACT = {"cache": jit._cacheable(), "nogil": True, "boundscheck": False}  # IEEE float32: PyTorch's values

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

    @njit(**jit._JIT)
    def _frame(first, x, inputs, rows, row, total, head_q, head_s, head_xq, gumbel, greedy, temperature,
               top_k, logits, scaled, hidden, codes, layers, scratch, team_args, team):
        """The predictor's 15 passes: ``first`` written at position 0, ``x`` (code 0's input) stepped at position
        1; pass j reads code j's input row from ``inputs[j - 1]``; codes [15] out; ``total`` (code 0's row in)
        gains each code's row of ``rows`` (``row``: scratch of its width). Steps as ``one_position_team.step``
        takes them (``team_args`` None: the per-region steps)."""
        step(first, 0, layers, False, hidden, scratch, team_args, team)
        for j in range(codes.shape[0]):
            if j:
                _row_into(inputs[j - 1], codes[j - 1], x)
                _row_into(rows[j - 1], codes[j - 1], row)
                _add_into(total, row)
            step(x, j + 1, layers, True, hidden, scratch, team_args, team)
            jit._product(head_q[j], head_s[j], hidden, head_xq, logits)
            codes[j] = _draw(logits, gumbel[j], greedy, temperature, top_k, scaled)
        last = codes.shape[0] - 1
        _row_into(rows[last], codes[last], row)
        _add_into(total, row)


def _kernel_table(table: torch.Tensor) -> np.ndarray:
    """A table's values for the kernel without a copy: bfloat16 as its bits (uint16), float32 as it is."""
    if table.dtype == torch.bfloat16:
        return table.contiguous().view(torch.int16).numpy().view(np.uint16)
    return table.float().contiguous().numpy()


class PredictorTables:
    """What the kernel reads of a talker besides its steps, made once per talker (``predictor_tables``): the 15
    codebook tables, the rows each pass reads (the same tables, or for a narrower predictor each table's rows
    through the projection: [V, h] float32, 117 MB for the 1.7B), the heads' int8 values and scales, and the
    zero Gumbel terms greedy draws are given."""

    def __init__(self, talker, heads: list[jit.NumbaHead]):
        cp = talker.code_predictor
        tables = [emb.weight.detach() for emb in cp.model.codec_embedding]
        self.rows = jit.numba.typed.List([_kernel_table(t) for t in tables])
        if isinstance(cp.small_to_mtp_projection, nn.Identity):
            self.inputs = self.rows
        else:
            with torch.inference_mode():
                self.inputs = jit.numba.typed.List([cp.project(t.float()).contiguous().numpy() for t in tables[:-1]])
        self.head_q = jit.numba.typed.List([h.q for h in heads])
        self.head_s = np.stack([h.scale for h in heads])
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
        if step.keys.shape[2] < NUM_DRAWS:
            raise ValueError("the predictor's cache has fewer slots than a frame's codes")
        self.talker, self.step, self.tables = talker, step, predictor_tables(talker, heads)
        vocab, width = self.tables.head_q[0].shape[0], heads[0].width
        self.head_xq = np.empty(width, np.int16)
        self.logits, self.scaled = np.empty(vocab, np.float32), np.empty(vocab, np.float32)
        self.hidden, self.first = np.empty(width, np.float32), np.empty(width, np.float32)
        self.row = np.empty(self.tables.rows[0].shape[1], np.float32)

    def takes(self, settings: StageSettings) -> bool:
        """Whether a draw with these settings (row 0) is one this kernel makes."""
        return draws_without_sort(settings, self.logits.shape[0])

    def __call__(self, hidden: torch.Tensor, code0: torch.Tensor, settings: StageSettings, seeds: torch.Tensor,
                 frame: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """All 16 codes [1, 16] of the frame from the talker hidden [1, H] and code 0 [1], and the sum of their
        16 embeddings [1, H]."""
        cp, t = self.talker.code_predictor, self.tables
        draws = t.head_s.shape[0]
        greedy = bool(settings.greedy[0])
        if greedy:
            terms = t.no_gumbel
        else:
            _, noise = predictor_draws(seeds, frame, draws, self.logits.shape[0])  # [15, V]
            terms = gumbel(noise).numpy()
        embedded = self.talker.embed_codec(code0).float()  # [1, H]
        self.first[:] = cp.project(hidden).reshape(-1).numpy()
        x = self.step.x
        x[:] = cp.project(embedded).reshape(-1).numpy()
        total = embedded.reshape(-1).numpy().copy()
        codes = np.empty(draws, np.int64)
        with jit._lock:
            team = jit._follow_torch_threads()
            _frame(self.first, x, t.inputs, t.rows, self.row, total, t.head_q, t.head_s, self.head_xq,
                   terms, greedy, np.float32(settings.temperature[0]), int(settings.top_k[0]), self.logits,
                   self.scaled, self.hidden, codes, self.step.layers, self.step.scratch, self.step.team, team)
        return torch.cat([code0, torch.from_numpy(codes)])[None], torch.from_numpy(total)[None]
