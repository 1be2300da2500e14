"""The residual sum with a convolution's bias in one pass (engine/core/gpu_kernels/residual.py) against the two
PyTorch additions it replaces: bit for bit in float32 and bfloat16, for contiguous and channels-last tensors and
for views. On CPU in Triton's interpreter; on a GPU for real."""

from __future__ import annotations

import pytest
import torch

pytest.importorskip("triton", reason="Triton is not installed (the test extra brings it)")

from engine.core.gpu_kernels import residual  # noqa: E402

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"


def tensors(shape, dtype, seed):
    g = torch.Generator().manual_seed(seed)
    x, y = (torch.randn(*shape, generator=g) for _ in range(2))
    bias = torch.randn(shape[1], generator=g)
    return x.to(DEVICE, dtype), y.to(DEVICE, dtype), bias.to(DEVICE, dtype)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("t", [1, 37, 2500])
def test_equals_the_two_pytorch_additions_bit_for_bit(t, dtype, bf16_rounded_to_nearest):
    x, y, bias = tensors((3, 5, t), dtype, seed=t)
    got = residual.add_biased_kernel(x, y, bias)
    assert got.dtype == dtype and got.shape == x.shape and got.is_contiguous()
    torch.testing.assert_close(got, x + (y + bias[None, :, None]), atol=0, rtol=0)


def test_views_contiguous_in_time():
    """A transposed convolution's trimmed output (rows and channels further apart than T) as either term."""
    x, _, bias = tensors((2, 4, 300), torch.float32, seed=1)
    _, y, _ = tensors((2, 4, 300), torch.float32, seed=2)
    a, b = x[..., 50:250], y[..., 10:210]
    torch.testing.assert_close(residual.add_biased_kernel(a, b, bias), a + (b + bias[None, :, None]), atol=0, rtol=0)


@pytest.mark.parametrize("channels", [5, 96, 300])
def test_channels_last_terms_as_the_decoder_keeps_them(channels, bf16_rounded_to_nearest):
    """Both terms stored [B, T, C], one a trimmed view of a longer tensor (a transposed convolution's output):
    bit for bit, and the sum laid out channels-last as the first term."""
    x, _, bias = tensors((2, channels, 300), torch.bfloat16, seed=channels)
    _, y, _ = tensors((2, channels, 200), torch.bfloat16, seed=channels + 1)
    a = x.transpose(1, 2).contiguous().transpose(1, 2)[..., 50:250]
    b = y.transpose(1, 2).contiguous().transpose(1, 2)
    got = residual.add_biased_kernel(a, b, bias)
    assert got.stride(1) == 1 and got.transpose(1, 2).is_contiguous()
    torch.testing.assert_close(got, a + (b + bias[None, :, None]), atol=0, rtol=0)


def test_refuses_what_it_cannot_add():
    x, y, bias = tensors((2, 4, 9), torch.float32, seed=3)
    with pytest.raises(ValueError, match="one shape and dtype"):
        residual.add_biased_kernel(x, y.double(), bias)
    with pytest.raises(ValueError, match="one shape and dtype"):
        residual.add_biased_kernel(x, y[..., :8], bias)


def test_the_dispatcher_falls_back_to_pytorch_off_the_gpu_and_without_a_bias():
    x, y, bias = tensors((2, 4, 9), torch.float64, seed=4)
    torch.testing.assert_close(residual.add_biased(x, y, bias), x + (y + bias[None, :, None]), atol=0, rtol=0)
    torch.testing.assert_close(residual.add_biased(x, y, None), x + y, atol=0, rtol=0)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_a_bias_of_the_first_term_is_added_first_as_its_own_pass_would(dtype, bf16_rounded_to_nearest):
    """``x_bias``: the transposed convolution's bias, left out of its output (``UpsampleBlock``), is added to x
    inside the sum: ``(x + x_bias) + (y + bias)``, each sum rounded to the dtype as PyTorch's passes round it;
    channels-last, x a trimmed view."""
    x, y, bias = tensors((2, 96, 300), dtype, seed=5)
    x_bias = torch.randn(96, generator=torch.Generator().manual_seed(6)).to(DEVICE, dtype)
    a = x.transpose(1, 2).contiguous().transpose(1, 2)[..., 40:240]
    b = y.transpose(1, 2).contiguous().transpose(1, 2)[..., :200]
    got = residual.add_biased_kernel(a, b, bias, x_bias)
    expected = (a + x_bias[None, :, None]) + (b + bias[None, :, None])
    torch.testing.assert_close(got, expected, atol=0, rtol=0)
    assert not torch.equal(got, residual.add_biased_kernel(a, b, bias))
    a, b, bias, x_bias = (t.double() for t in (a, b, bias, x_bias))  # the dispatcher's PyTorch fallback
    torch.testing.assert_close(residual.add_biased(a, b, bias, x_bias),
                               (a + x_bias[None, :, None]) + (b + bias[None, :, None]), atol=0, rtol=0)
