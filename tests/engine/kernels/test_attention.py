"""The talker's attention step in two kernels (q/k norms, RoPE, cache write, attention over each row's filled
slots of a long cache, in shares over several programs) against the PyTorch code of ``engine.core.model.layers`` it
replaces: rows whose new slot is the first, at either side of a share's boundary or at the end of the cache; 1,
2 and 4 query heads per key/value head; the talker's 2,048 slots and a cache of an odd length; the cache written
at each row's slot and nowhere else; a row's result the same bits whatever the other rows hold. On CPU in
Triton's interpreter (bf16 also rounded to nearest, as a GPU rounds). The decoder layers calling it are tested
in test_attention_in_layers.py."""

from __future__ import annotations

import pytest
import torch

pytest.importorskip("triton", reason="Triton is not installed (the test extra brings it)")

from engine.core.gpu_kernels.attention import BLOCK_S, SPLITS, filled_slots_attention_block  # noqa: E402
from tests.engine.kernels.attention_steps import (  # noqa: E402
    DEVICE,
    EPS,
    check_block,
    check_later_slots_unread,
    check_rounding,
    step_inputs,
)

ONE_BLOCK_SHARES = SPLITS * BLOCK_S  # attended slots up to which a share is one block (then two, ...)
SLOTS = ONE_BLOCK_SHARES + 2 * BLOCK_S + 11  # shares of two blocks at the end; not a whole number of blocks
# a new slot first in the cache, at the end or the start of a share, either side of one-block shares' end
EDGES = [0, BLOCK_S - 1, BLOCK_S, BLOCK_S + 1, ONE_BLOCK_SHARES - 1, ONE_BLOCK_SHARES, ONE_BLOCK_SHARES + 1]


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("groups", [1, 2, 4])
def test_equals_the_layer_code_and_writes_only_the_new_slots(groups, dtype):
    check_block(filled_slots_attention_block, groups, dtype, [*EDGES, SLOTS - 2, SLOTS - 1], slots=SLOTS, seed=groups)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_the_talkers_whole_cache(dtype):
    check_block(filled_slots_attention_block, 2, dtype, [BLOCK_S + 1, 2046, 2047], kv=1, slots=2048, seed=3)


@pytest.mark.parametrize("groups", [1, 2])
def test_bf16_rounds_as_the_layer_code(groups, bf16_rounded_to_nearest):
    check_rounding(filled_slots_attention_block, groups, [*EDGES, SLOTS - 1], slots=SLOTS, seed=10 + groups)


def test_slots_after_the_new_one_are_never_read():
    check_later_slots_unread(filled_slots_attention_block, [*EDGES, SLOTS - 1], slots=SLOTS)


def test_a_position_past_the_cache_is_its_last_slot():
    """write_pos >= S (which the engine never passes) is taken as S - 1: nothing past the cache is read or
    written."""
    cut = 2 * BLOCK_S + 10  # the cache's end inside a block
    qkv, q_norm, k_norm, cos, sin, k_big, v_big, _ = step_inputs(2, torch.float32, [0, 0], slots=2 * cut)
    last = torch.full((2,), cut - 1, device=DEVICE)
    k_last, v_last = k_big[:, :, :cut].clone(), v_big[:, :, :cut].clone()
    expected = filled_slots_attention_block(qkv, q_norm.weight, k_norm.weight, cos, sin, k_last, v_last, last, EPS)
    k_big[:, :, cut:] = v_big[:, :, cut:] = float("nan")
    k_in, v_in = k_big[:, :, :cut], v_big[:, :, :cut]  # views of the first cut slots
    past = torch.tensor([cut, 2 * cut + 5], device=DEVICE)
    got = filled_slots_attention_block(qkv, q_norm.weight, k_norm.weight, cos, sin, k_in, v_in, past, EPS)
    torch.testing.assert_close(got, expected, atol=0, rtol=0)
    assert torch.equal(k_in, k_last) and torch.equal(v_in, v_last)
    assert k_big[:, :, cut:].isnan().all() and v_big[:, :, cut:].isnan().all()


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_a_rows_result_does_not_depend_on_the_other_rows(dtype):
    """Each row alone, then all rows in one launch: the same output and cache bits (a batched stream's attention
    is its solo attention), and equal to the layer's code."""
    positions = [*EDGES, SLOTS - 2, SLOTS - 1]
    qkv, q_norm, k_norm, cos, sin, k, v, pos = step_inputs(2, dtype, positions, slots=SLOTS, seed=21)
    k_alone, v_alone = k.clone(), v.clone()
    alone = [filled_slots_attention_block(qkv[i : i + 1], q_norm.weight, k_norm.weight, cos[i : i + 1], sin[i : i + 1],
                                          k_alone[i : i + 1], v_alone[i : i + 1], pos[i : i + 1], EPS)
             for i in range(len(positions))]
    together = filled_slots_attention_block(qkv, q_norm.weight, k_norm.weight, cos, sin, k, v, pos, EPS)
    torch.testing.assert_close(together, torch.cat(alone), atol=0, rtol=0)
    assert torch.equal(k, k_alone) and torch.equal(v, v_alone)
    check_block(filled_slots_attention_block, 2, dtype, positions, slots=SLOTS, seed=22)  # and equal to the layer's
