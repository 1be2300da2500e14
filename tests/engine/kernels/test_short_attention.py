"""The code predictor's one-kernel attention step (q/k norms, RoPE, cache write, attention over <= 16 slots)
against the PyTorch code of ``engine.core.model.layers`` it replaces: the output, and the cache written at each
row's slot and nowhere else. On CPU in Triton's interpreter, which rounds float32 -> bf16 by truncation
where a GPU rounds to nearest: bf16 is checked to a few ulps as it comes, and to the bit (now and then
one ulp off) with the interpreter made to round as a GPU does. The decoder layers calling it are tested in
test_attention_in_layers.py."""

from __future__ import annotations

import pytest
import torch

pytest.importorskip("triton", reason="Triton is not installed (the test extra brings it)")

from engine.core.gpu_kernels.short_attention import short_attention_block  # noqa: E402
from tests.engine.kernels.attention_steps import check_block, check_later_slots_unread, check_rounding  # noqa: E402


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("groups", [1, 2, 4])
def test_equals_the_layer_code_and_writes_only_the_new_slots(groups, dtype):
    check_block(short_attention_block, groups, dtype, [0, 7, 15, 3], seed=groups)


@pytest.mark.parametrize("groups", [1, 2])
def test_bf16_rounds_as_the_layer_code(groups, bf16_rounded_to_nearest):
    check_rounding(short_attention_block, groups, [0, 9, 15], seed=10 + groups)


def test_slots_after_the_new_one_are_never_read():
    check_later_slots_unread(short_attention_block, [0, 5, 14])
