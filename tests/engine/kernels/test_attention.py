"""The split-sequence decode attention kernel against the PyTorch reference ``decode_attention``: rows of
different lengths (1 slot, a chunk boundary, the whole cache), 2 and 4 query heads per key/value head,
cache views that skip rows (a batch bucket over a bigger cache). On CPU in Triton's interpreter."""

from __future__ import annotations

import pytest
import torch

pytest.importorskip("triton", reason="Triton is not installed (the test extra brings it)")

from engine.kernels.attention import CHUNK, filled_slots_attention  # noqa: E402
from engine.model.layers import decode_attention  # noqa: E402

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"
DTYPE, TOL = (torch.bfloat16, 2e-2) if DEVICE == "cuda" else (torch.float32, 1e-5)


@pytest.mark.parametrize("groups", [2, 4])
def test_equals_the_masked_reference(groups):
    g = torch.Generator().manual_seed(groups)
    kv, dim, slots = 2, 32, 2 * CHUNK + 40
    lengths = [1, CHUNK, CHUNK + 1, slots]
    big = torch.randn(len(lengths) + 2, kv, slots, dim, generator=g)
    keys, values = big[1:-1].to(DEVICE, DTYPE), (big[1:-1] * 0.5 + 0.1).to(DEVICE, DTYPE)  # strided row views
    q = torch.randn(len(lengths), kv * groups, dim, generator=g).to(DEVICE, DTYPE)
    n = torch.tensor(lengths, device=DEVICE)
    mask = (torch.arange(slots, device=DEVICE)[None, :] < n[:, None])[:, None, None]  # [B, 1, 1, S]
    expected = decode_attention(q[:, :, None].float(), keys.float(), values.float(), mask)[:, :, 0]
    got = filled_slots_attention(q, keys, values, n)
    assert got.dtype == DTYPE and got.shape == q.shape
    torch.testing.assert_close(got.float(), expected, atol=TOL, rtol=TOL)


def test_slots_past_the_length_are_never_read():
    """NaN in every slot past each row's length changes nothing: those slots are not even loaded."""
    g = torch.Generator().manual_seed(0)
    kv, dim, slots, lengths = 1, 16, CHUNK + 64, [3, CHUNK + 10]
    keys = torch.randn(2, kv, slots, dim, generator=g).to(DEVICE, DTYPE)
    values = torch.randn(2, kv, slots, dim, generator=g).to(DEVICE, DTYPE)
    q = torch.randn(2, 2, dim, generator=g).to(DEVICE, DTYPE)
    n = torch.tensor(lengths, device=DEVICE)
    clean = filled_slots_attention(q, keys, values, n)
    for row, length in enumerate(lengths):
        keys[row, :, length:] = float("nan")
        values[row, :, length:] = float("nan")
    torch.testing.assert_close(filled_slots_attention(q, keys, values, n), clean, atol=0, rtol=0)


def test_the_decode_step_attention_equals_sdpa():
    """``one_query_attention`` as a decode step calls it (its positions, its mask, fp16) through the kernel
    equals SDPA over the masked cache."""
    import torch.nn.functional as F

    from engine.model import layers

    assert layers.TRITON_ATTENTION
    g = torch.Generator().manual_seed(3)
    b, heads, kv, slots, dim = 3, 8, 2, 300, 32
    q = torch.randn(b, heads, 1, dim, generator=g).half().to(DEVICE)
    keys = torch.randn(b, kv, slots, dim, generator=g).half().to(DEVICE)
    values = torch.randn(b, kv, slots, dim, generator=g).half().to(DEVICE)
    write_pos = torch.tensor([[0], [40], [299]], device=DEVICE)
    mask = (torch.arange(slots, device=DEVICE)[None, None, :] <= write_pos[:, :, None])[:, None]
    got = layers.one_query_attention(q, keys, values, mask, write_pos)
    expected = F.scaled_dot_product_attention(q.float(), keys.float(), values.float(), attn_mask=mask,
                                              enable_gqa=True)
    torch.testing.assert_close(got.float(), expected, atol=2e-3, rtol=2e-3)


def test_a_length_past_the_slots_given_reads_only_those_slots():
    g = torch.Generator().manual_seed(5)
    keys = torch.randn(1, 1, 40, 16, generator=g).to(DEVICE, DTYPE)
    values = torch.randn(1, 1, 40, 16, generator=g).to(DEVICE, DTYPE)
    q = torch.randn(1, 2, 16, generator=g).to(DEVICE, DTYPE)
    whole = filled_slots_attention(q, keys, values, torch.tensor([40], device=DEVICE))
    big = torch.full((1, 1, 80, 16), float("nan"), dtype=DTYPE, device=DEVICE)
    big[:, :, :40] = keys
    past = torch.tensor([70], device=DEVICE)
    torch.testing.assert_close(filled_slots_attention(q, keys, values, past), whole)
    torch.testing.assert_close(filled_slots_attention(q, big[:, :, :40], values, past), whole)
