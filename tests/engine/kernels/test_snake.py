"""The codec decoder's SnakeBeta in one Triton pass (engine/core/gpu_kernels/snake.py) against the PyTorch code it
replaces: contiguous input, channels-last input (as the decoder keeps its activations), a view of a longer tensor
(as a transposed convolution's trimmed output is),
time lengths from one step to several blocks, channels with their own parameters; bfloat16 and float16
(computed in float32, rounded once). On CPU in Triton's interpreter; on a GPU, also the decoder layer that
calls it."""

from __future__ import annotations

import pytest
import torch

pytest.importorskip("triton", reason="Triton is not installed (the test extra brings it)")

from engine.core.codec.conv import SnakeBeta  # noqa: E402
from engine.core.gpu_kernels import (
    snake,  # noqa: E402
    triton_available,  # noqa: E402
)

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"


def reference(x, log_alpha, log_beta):
    alpha, beta = log_alpha.exp()[None, :, None], log_beta.exp()[None, :, None]
    return x + (1.0 / (beta + 1e-9)) * torch.sin(x * alpha).pow(2)


def parameters(channels, seed):
    g = torch.Generator().manual_seed(seed)
    return (0.5 * torch.randn(channels, generator=g)).to(DEVICE), (0.5 * torch.randn(channels, generator=g)).to(DEVICE)


@pytest.mark.parametrize("t", [1, 16, 1000, 2500])
def test_equals_the_pytorch_code(t):
    log_alpha, log_beta = parameters(6, seed=t)
    x = 3 * torch.randn(3, 6, t, generator=torch.Generator().manual_seed(1)).to(DEVICE)
    got = snake.snake_beta_kernel(x, log_alpha, log_beta)
    assert got.shape == x.shape and got.is_contiguous()
    torch.testing.assert_close(got, reference(x, log_alpha, log_beta), atol=2e-6, rtol=2e-6)


def test_the_sine_is_float32_accurate_over_a_wide_range_of_arguments():
    """The kernel's sin^2 is a polynomial after reducing the argument by its nearest multiple of pi: over
    arguments from -2,000 to 2,000 (far past a decoder's activations) and close to every multiple of pi/2 up
    to +-1,900, each result is within 2.5e-7 (over beta) plus an ulp of the exact value for its float32 input.
    (alpha = 1, so the argument is x itself, not a rounded product.)"""
    channels = 4
    log_alpha = torch.zeros(channels)
    log_beta = torch.linspace(-0.7, 0.7, channels)
    near_quarter_turns = (torch.arange(-1200, 1200, dtype=torch.float64) * torch.pi / 2)[:, None] + torch.tensor(
        [-1e-3, -1e-6, 0.0, 1e-6, 1e-3], dtype=torch.float64)
    spread = torch.linspace(-2000, 2000, 20_000, dtype=torch.float64)
    x = torch.cat([near_quarter_turns.flatten(), spread]).to(torch.float32).expand(1, channels, -1).contiguous()
    got = snake.snake_beta_kernel(x.to(DEVICE), log_alpha.to(DEVICE), log_beta.to(DEVICE)).cpu().double()
    inv_beta = 1 / (log_beta.double().exp()[:, None] + 1e-9)
    exact = x.double() + inv_beta * torch.sin(x.double()) ** 2
    ulp = torch.finfo(torch.float32).eps * exact.abs()
    assert torch.all((got - exact).abs() <= 2.5e-7 * inv_beta + ulp), (got - exact).abs().max()


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
@pytest.mark.parametrize("parameter_dtype", ["same", torch.float32])
@pytest.mark.parametrize("t", [1, 1000])
def test_half_precision_is_the_float32_formula_rounded_once(t, dtype, parameter_dtype, bf16_rounded_to_nearest):
    """A bfloat16 or float16 decoder's activation: x and the parameters (in x's dtype, or float32) widened to
    float32, the float32 formula, one rounding to x's dtype on the store. Against that reference it agrees to
    an ulp of the dtype (the GPU's float32 sin may land on the other side of a rounding boundary) and is
    equal for nearly every element (a truncating store, or a computation in the narrow dtype, is not)."""
    log_alpha, log_beta = parameters(6, seed=t)
    parameter_dtype = dtype if parameter_dtype == "same" else parameter_dtype
    log_alpha, log_beta = log_alpha.to(parameter_dtype), log_beta.to(parameter_dtype)
    x = (3 * torch.randn(3, 6, t, generator=torch.Generator().manual_seed(1))).to(DEVICE, dtype)
    got = snake.snake_beta_kernel(x, log_alpha, log_beta)
    assert got.dtype == dtype and got.shape == x.shape and got.is_contiguous()
    expected = reference(x.float(), log_alpha.float(), log_beta.float()).to(dtype)
    torch.testing.assert_close(got, expected, atol=1e-2, rtol=1e-2)
    if t > 1:
        assert (got == expected).float().mean() > 0.99
    # and through the dispatching function: the kernel on CUDA, the PyTorch code (in x's dtype) elsewhere
    torch.testing.assert_close(snake.snake_beta(x, log_alpha, log_beta), expected, atol=5e-2, rtol=5e-2)


def test_a_view_of_a_longer_tensor():
    """Rows and channels further apart than T, time contiguous: read in place, written contiguous."""
    log_alpha, log_beta = parameters(4, seed=0)
    longer = torch.randn(2, 4, 300, generator=torch.Generator().manual_seed(2)).to(DEVICE)
    x = longer[..., 37:237]
    torch.testing.assert_close(snake.snake_beta_kernel(x, log_alpha, log_beta), reference(x, log_alpha, log_beta),
                               atol=2e-6, rtol=2e-6)


def test_writes_into_a_view_of_a_longer_buffer():
    """``out``: the activation written into place after a causal convolution's remembered frames, nothing
    else of the buffer touched."""
    log_alpha, log_beta = parameters(4, seed=3)
    x = torch.randn(2, 4, 90, generator=torch.Generator().manual_seed(4)).to(DEVICE)
    extended = torch.full((2, 4, 6 + 90), 7.0, device=DEVICE)
    got = snake.snake_beta_kernel(x, log_alpha, log_beta, out=extended[..., 6:])
    assert got.data_ptr() == extended[..., 6:].data_ptr()
    torch.testing.assert_close(extended[..., 6:], reference(x, log_alpha, log_beta), atol=2e-6, rtol=2e-6)
    assert torch.all(extended[..., :6] == 7.0)
    with pytest.raises(ValueError, match="out must be"):
        snake.snake_beta_kernel(x, log_alpha, log_beta, out=extended[..., 5:])


@pytest.mark.parametrize("channels", [6, 96, 200])
def test_channels_last_as_the_decoder_keeps_its_activations(channels):
    """x stored [B, T, C] (channels innermost), several channel blocks and a partial last one: the output is laid
    out channels-last too, and written into a channels-last view of a longer buffer in place."""
    log_alpha, log_beta = parameters(channels, seed=channels)
    x = torch.randn(2, 70, channels, generator=torch.Generator().manual_seed(5)).to(DEVICE).transpose(1, 2)
    got = snake.snake_beta_kernel(x, log_alpha, log_beta)
    assert got.stride(1) == 1 and got.transpose(1, 2).is_contiguous()
    torch.testing.assert_close(got, reference(x, log_alpha, log_beta), atol=2e-6, rtol=2e-6)
    extended = torch.full((2, 6 + 70, channels), 7.0, device=DEVICE).transpose(1, 2)
    snake.snake_beta_kernel(x, log_alpha, log_beta, out=extended[..., 6:])
    torch.testing.assert_close(extended[..., 6:], reference(x, log_alpha, log_beta), atol=2e-6, rtol=2e-6)
    assert torch.all(extended[..., :6] == 7.0)


def test_a_channels_last_view_of_a_longer_tensor_into_a_time_contiguous_output():
    """A transposed convolution's trimmed channels-last output read in place, written into another layout."""
    log_alpha, log_beta = parameters(40, seed=6)
    x = torch.randn(3, 300, 40, generator=torch.Generator().manual_seed(7)).to(DEVICE).transpose(1, 2)[..., 20:220]
    out = torch.empty(3, 40, 200, device=DEVICE)
    snake.snake_beta_kernel(x, log_alpha, log_beta, out=out)
    torch.testing.assert_close(out, reference(x, log_alpha, log_beta), atol=2e-6, rtol=2e-6)


def test_the_decoder_layer_uses_it_on_cuda_only_and_not_for_float64(monkeypatch):
    """SnakeBeta goes through the kernel for a float32 or bfloat16 CUDA tensor and through the PyTorch code
    otherwise (CPU, float64); each gives the layer's output."""
    calls = []
    kernel = snake.snake_beta_kernel
    monkeypatch.setattr(snake, "snake_beta_kernel", lambda *a: calls.append(a[0].device.type) or kernel(*a))
    layer = SnakeBeta(5).to(DEVICE)
    with torch.no_grad():
        layer.alpha.normal_(0, 0.5)
        layer.beta.normal_(0, 0.5)
    x = torch.randn(2, 5, 40).to(DEVICE)
    with torch.no_grad():
        torch.testing.assert_close(layer(x), reference(x, layer.alpha, layer.beta), atol=2e-6, rtol=2e-6)
        half = layer.to(torch.bfloat16)(x.to(torch.bfloat16))
        assert half.dtype == torch.bfloat16
        torch.testing.assert_close(half, reference(x.to(torch.bfloat16).float(), layer.alpha.float(),
                                                   layer.beta.float()).to(torch.bfloat16), atol=5e-2, rtol=5e-2)
        layer.double()(x.double())
    assert calls == (["cuda", "cuda"] if DEVICE == "cuda" and triton_available() else [])


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_a_bias_is_added_first_rounded_as_a_pass_of_its_own_would_round_it(dtype, bf16_rounded_to_nearest):
    """``bias``: the preceding convolution's, added to x before the activation (ResidualUnit's conv1 bias),
    the sum rounded to x's dtype as PyTorch's separate bias pass rounds it."""
    log_alpha, log_beta = parameters(6, seed=11)
    bias = torch.randn(6, generator=torch.Generator().manual_seed(12)).to(DEVICE, dtype)
    x = (3 * torch.randn(2, 6, 700, generator=torch.Generator().manual_seed(13))).to(DEVICE, dtype)
    got = snake.snake_beta_kernel(x, log_alpha, log_beta, bias=bias)
    biased = (x + bias[None, :, None]).float()  # rounded to x's dtype by the addition
    expected = reference(biased, log_alpha, log_beta).to(dtype)
    tolerance = 2e-6 if dtype == torch.float32 else 1e-2
    torch.testing.assert_close(got, expected, atol=tolerance, rtol=tolerance)
    if dtype == torch.bfloat16:  # float32: sin's last bits differ between implementations
        assert (got == expected).float().mean() > 0.99
    without = snake.snake_beta_kernel(x, log_alpha, log_beta)
    assert not torch.allclose(got.float(), without.float(), atol=1e-2)  # the bias did reach the activation
    torch.testing.assert_close(snake.snake_beta(x, log_alpha, log_beta, bias=bias), expected, atol=5e-2, rtol=5e-2)
