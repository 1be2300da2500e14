"""The talker's attention step in two kernels (q/k norms, RoPE, cache write, attention over each row's filled
slots of a long cache, chunk by chunk) against the PyTorch code of ``engine.model.layers`` it replaces: rows
whose new slot is the first, at either side of a chunk boundary or at the end of the cache; 1, 2 and 4 query
heads per key/value head; a cache of whole chunks (the talker's 2,048 slots) and one ending inside a chunk;
the cache written at each row's slot and nowhere else. On CPU in Triton's interpreter (bf16 also rounded to
nearest, as a GPU rounds). The decoder layers calling it are tested in test_attention_in_layers.py."""

from __future__ import annotations

import pytest
import torch

pytest.importorskip("triton", reason="Triton is not installed (the test extra brings it)")

from engine.kernels.attention import CHUNK, filled_slots_attention_block  # noqa: E402
from tests.engine.kernels.attention_steps import (  # noqa: E402
    DEVICE,
    EPS,
    check_block,
    check_later_slots_unread,
    check_rounding,
    step_inputs,
)

SLOTS = 3 * CHUNK - 24  # the last chunk partly past the cache
EDGES = [0, CHUNK - 1, CHUNK, CHUNK + 1]  # a new slot first in the cache, at the end or start of a chunk


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("groups", [1, 2, 4])
def test_equals_the_layer_code_and_writes_only_the_new_slots(groups, dtype):
    check_block(filled_slots_attention_block, groups, dtype, [*EDGES, SLOTS - 2, SLOTS - 1], slots=SLOTS, seed=groups)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_the_talkers_whole_cache(dtype):
    check_block(filled_slots_attention_block, 2, dtype, [CHUNK + 1, 2046, 2047], kv=1, slots=2048, seed=3)


@pytest.mark.parametrize("groups", [1, 2])
def test_bf16_rounds_as_the_layer_code(groups, bf16_rounded_to_nearest):
    check_rounding(filled_slots_attention_block, groups, [*EDGES, SLOTS - 1], slots=SLOTS, seed=10 + groups)


def test_slots_after_the_new_one_are_never_read():
    check_later_slots_unread(filled_slots_attention_block, [*EDGES, SLOTS - 1], slots=SLOTS)


def test_a_position_past_the_cache_is_its_last_slot():
    """write_pos >= S (which the engine never passes) is taken as S - 1: nothing past the cache is read or
    written."""
    qkv, q_norm, k_norm, cos, sin, k_big, v_big, _ = step_inputs(2, torch.float32, [0, 0], slots=2 * CHUNK)
    last = torch.full((2,), CHUNK + 10 - 1, device=DEVICE)
    k_last, v_last = k_big[:, :, : CHUNK + 10].clone(), v_big[:, :, : CHUNK + 10].clone()
    expected = filled_slots_attention_block(qkv, q_norm.weight, k_norm.weight, cos, sin, k_last, v_last, last, EPS)
    k_big[:, :, CHUNK + 10 :] = v_big[:, :, CHUNK + 10 :] = float("nan")
    k_in, v_in = k_big[:, :, : CHUNK + 10], v_big[:, :, : CHUNK + 10]  # views of the first CHUNK + 10 slots
    past = torch.tensor([CHUNK + 10, 2 * CHUNK + 5], device=DEVICE)
    got = filled_slots_attention_block(qkv, q_norm.weight, k_norm.weight, cos, sin, k_in, v_in, past, EPS)
    torch.testing.assert_close(got, expected, atol=0, rtol=0)
    assert torch.equal(k_in, k_last) and torch.equal(v_in, v_last)
    assert k_big[:, :, CHUNK + 10 :].isnan().all() and v_big[:, :, CHUNK + 10 :].isnan().all()


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_several_chunks_a_program_give_the_same_result_bit_for_bit(dtype, monkeypatch):
    """Many rows: a program takes four chunks in turn, each with its own partial result, so the output and the
    cache are exactly what one chunk a program gives (a batched stream's attention is its solo attention)."""
    from engine.kernels import attention

    positions = [*EDGES, SLOTS - 2, SLOTS - 1]
    results = []
    for many in (10**9, 1):  # one chunk a program; then four, as for many rows
        monkeypatch.setattr(attention, "MANY_PROGRAMS", many)
        qkv, q_norm, k_norm, cos, sin, k, v, pos = step_inputs(2, dtype, positions, slots=SLOTS, seed=21)
        out = filled_slots_attention_block(qkv, q_norm.weight, k_norm.weight, cos, sin, k, v, pos, EPS)
        results.append((out, k, v))
    assert attention.chunks_per_program(1) == 4 and attention.chunks_per_program(10**8) == 4
    for a, b in zip(results[0], results[1], strict=True):
        torch.testing.assert_close(a, b, atol=0, rtol=0)
    check_block(filled_slots_attention_block, 2, dtype, positions, slots=SLOTS, seed=22)  # and equal to the layer's
