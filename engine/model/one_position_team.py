"""The Numba one-position step of an int8 stack as one parallel region: a team of threads that goes through every
layer together, its phases separated by barriers (``engine.model.team_sync``), instead of five regions a layer.

Each member computes its share of each product's rows (blocks of ROW_BLOCK rows, the same row sums as
``one_position_numba._stack_step``), of the q and k heads' norms and rotations, of the attention heads and of the
SiLU (a member takes the same rows of gate and up, so the SiLU needs no barrier of its own); the norms and the
activations' rounding, which every row of a product reads, each member makes for itself. The arithmetic is the
per-region step's, each row, head and norm computed whole by one member (tests/engine/model/test_one_position_team.py
holds them within float32 rounding: fast-math may order or contract a sum differently in code compiled apart).
Where the team cannot gather (``team_sync.join_team``) the call returns False before writing anything and ``step``
runs the per-region step instead; after GIVE_UPS such calls in a row (a threading layer that runs members one
after another) a bound step keeps the per-region steps.
"""

from __future__ import annotations

import numpy as np

from engine.model import team_sync, vnni
from engine.model.one_position_numba import (
    _JIT,
    ROW_BLOCK,
    SCRATCH_ROW,
    _quantize,
    _rms,
    _stack_step,
    attended,
    normed_rotated,
    numba,
    row_range,
    silu_times,
    value_written,
    vnni_range,
)

GIVE_UPS = 3  # teams of a bound step that gave up in a row before it stops trying

if numba is not None:
    from numba import njit, prange

    @njit(inline="always", **_JIT)
    def _share(n, member, team):
        """Rows [start, stop) of n that ``member`` computes: whole blocks of ROW_BLOCK, as even as they divide."""
        blocks = (n + ROW_BLOCK - 1) // ROW_BLOCK
        return min(n, member * blocks // team * ROW_BLOCK), min(n, (member + 1) * blocks // team * ROW_BLOCK)

    @njit(inline="always", **_JIT)
    def _rows_of(q, scale, sums, xq, lo, hi, sx, y, start, stop, add, vnni_on, part, acc):
        """y[start:stop] (+)= those rows of the product (``vnni_on``: through ``engine.model.vnni``, lo and hi
        already split)."""
        if vnni_on:
            vnni_range(q, scale, sums, lo, hi, sx, y, start, stop, add, part, acc)
        else:
            row_range(q, scale, xq, sx, y, start, stop, add)

    @njit(inline="always", **_JIT)
    def _rounded(x, xq, lo, hi, vnni_on):
        """x's activations as the products take them (``_quantize``, split for VNNI); returns their scale."""
        sx = _quantize(x, xq)
        if vnni_on:
            vnni.split(xq, lo, hi)
        return sx

    @njit(inline="always", **_JIT)
    def _added_to_residual(q, scale, sums, values, xq, lo, hi, x, member, team, vnni_on, part, acc):
        """x += the member's share of rows of the product of ``values`` (the attention's or the SiLU's output,
        rounded by each member for itself) with an output or down projection."""
        sx = _rounded(values, xq, lo, hi, vnni_on)
        start, stop = _share(x.shape[0], member, team)
        _rows_of(q, scale, sums, xq, lo, hi, sx, x, start, stop, True, vnni_on, part, acc)

    @njit(parallel=True, **_JIT)
    def team_step(x, pos, cos, signed_sin, keys, values, in_w, qkv_q, qkv_s, qkv_sum, qk_w, out_q, out_s, out_sum,
                  post_w, gu_q, gu_s, gu_sum, down_q, down_s, down_sum, norm_w, eps, heads, vnni_on, final_norm, out,
                  qkv, attn, scores, gu, act, hs, hqs, h_los, h_his, qks, aqs, a_los, a_his, cqs, c_los, c_his, parts,
                  accs, sync, limit, team):
        """``_stack_step`` (the same arguments up to ``out``) by a team of ``team`` members (at most Numba's threads);
        shared scratch ``qkv``, ``attn``, ``scores``, ``gu``, ``act``; each member's own scratch is row ``member`` of
        ``hs`` ... ``accs`` (``TeamScratch``); ``sync`` int64 [team_sync.SYNC_WORDS]. Returns whether the team
        gathered (False: nothing was written)."""
        n_layers, kv = keys.shape[:2]
        inter = act.shape[0]
        team_sync.reset(sync)
        for member in prange(team):
            if not team_sync.join_team(sync, team, limit):
                continue
            h, hq, h_lo, h_hi, qk = hs[member], hqs[member], h_los[member], h_his[member], qks[member]
            aq, a_lo, a_hi, cq, c_lo, c_hi = aqs[member], a_los[member], a_his[member], cqs[member], c_los[member], \
                c_his[member]
            part, acc = parts[member], accs[member]
            for layer in range(n_layers):
                _rms(x, in_w[layer], eps, h)
                sx = _rounded(h, hq, h_lo, h_hi, vnni_on)
                start, stop = _share(qkv.shape[0], member, team)
                _rows_of(qkv_q[layer], qkv_s[layer], qkv_sum[layer], hq, h_lo, h_hi, sx, qkv, start, stop, False,
                         vnni_on, part, acc)
                team_sync.wait_all(sync, team)
                for r in range(member, heads + kv, team):
                    normed_rotated(qkv, r, layer, pos, cos, signed_sin, keys, qk_w, eps, heads, qk, attn)
                for g in range(member, kv, team):
                    value_written(qkv, g, layer, pos, values, heads)
                team_sync.wait_all(sync, team)
                for head in range(member, heads, team):
                    attended(attn, head, layer, pos, keys, values, scores[head])
                team_sync.wait_all(sync, team)
                _added_to_residual(out_q[layer], out_s[layer], out_sum[layer], attn, aq, a_lo, a_hi, x, member, team,
                                   vnni_on, part, acc)
                team_sync.wait_all(sync, team)
                _rms(x, post_w[layer], eps, h)
                sx = _rounded(h, hq, h_lo, h_hi, vnni_on)
                start, stop = _share(inter, member, team)  # the same rows of gate and of up: its SiLU is the member's
                for first in (0, inter):
                    _rows_of(gu_q[layer], gu_s[layer], gu_sum[layer], hq, h_lo, h_hi, sx, gu, first + start,
                             first + stop, False, vnni_on, part, acc)
                silu_times(gu, act, start, stop)
                team_sync.wait_all(sync, team)
                _added_to_residual(down_q[layer], down_s[layer], down_sum[layer], act, cq, c_lo, c_hi, x, member,
                                   team, vnni_on, part, acc)
                team_sync.wait_all(sync, team)
            if member == 0 and final_norm:
                _rms(x, norm_w, eps, out)
        return team_sync.load(sync, team_sync.STATE) == team_sync.GO

    @njit(**_JIT)
    def step(x, pos, layers, final_norm, out, scratch, team_args, team):
        """One position through a stack: ``_stack_step``'s arguments as ``layers`` (after x and pos) and ``scratch``
        (after out); by a team of ``team`` (at most its scratch's rows) where ``team_args`` (``TeamScratch.args``
        after the shared scratch) is given, else, or where the team does not gather, by ``_stack_step`` (the same
        arithmetic, within float32 rounding); after GIVE_UPS teams in a row gave up, by ``_stack_step`` alone."""
        if team_args is None:
            _stack_step(x, pos, *layers, final_norm, out, *scratch)
            return
        sync = team_args[-2]
        if sync[team_sync.FAILED] < GIVE_UPS:
            shared = (scratch[1], scratch[3], scratch[4], scratch[5], scratch[6])  # qkv, attn, scores, gu, act
            if team_step(x, pos, *layers, final_norm, out, *shared, *team_args, min(team, team_args[0].shape[0])):
                sync[team_sync.FAILED] = 0
                return
            sync[team_sync.FAILED] += 1
        _stack_step(x, pos, *layers, final_norm, out, *scratch)


def takes(stack) -> bool:
    """Whether a team steps this ``NumbaPosition``: Numba here, int8 weights, and gate and up halves
    of whole VNNI row groups."""
    inter = stack.gate_up[0][0].shape[0] // 2
    return numba is not None and stack.gate_up[0][0].dtype == np.int8 and inter % vnni.ROWS == 0


class TeamScratch:
    """A team step's own scratch for a stack of ``width`` [H], ``heads`` of ``head_dim`` and ``inter`` [I], for a
    team of up to ``members``: ``args``, the arguments of ``team_step`` after ``act`` and before ``team``."""

    def __init__(self, members: int, width: int, heads: int, head_dim: int, inter: int):
        def rows(n: int, dtype) -> np.ndarray:
            return np.empty((members, n), dtype)

        attn = heads * head_dim
        self.sync = np.zeros(team_sync.SYNC_WORDS, np.int64)
        self.args = (rows(width, np.float32), rows(width, np.int16), rows(width, np.uint8), rows(width, np.uint8),
                     rows(head_dim, np.float32), rows(attn, np.int16), rows(attn, np.uint8), rows(attn, np.uint8),
                     rows(inter, np.int16), rows(inter, np.uint8), rows(inter, np.uint8),
                     rows(SCRATCH_ROW, np.int32), rows(SCRATCH_ROW, np.float32), self.sync, team_sync.GATHER_CYCLES)
