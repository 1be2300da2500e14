"""The decoder's causal convolutions: a narrow one (fewer outputs than NARROW_OUT) runs padded to
NARROW_OUT filters and gives what the checkpoint's convolution gives."""

from __future__ import annotations

import torch
import torch.nn.functional as F

from engine.codec.conv import NARROW_OUT, CausalConv1d


def _reference(layer: CausalConv1d, x: torch.Tensor) -> torch.Tensor:
    """The plain convolution of x after ``history`` zeros: what a first chunk of the layer must give."""
    conv = layer.conv
    return F.conv1d(F.pad(x, (layer.history, 0)), conv.weight, conv.bias, dilation=conv.dilation)


def test_a_narrow_convolution_gives_the_plain_convolutions_outputs_over_chunks():
    torch.manual_seed(0)
    layer = CausalConv1d(12, 1, kernel_size=7, dilation=3).double()
    x = torch.randn(3, 12, 40, dtype=torch.float64)
    tails = {layer.state_key: layer.new_tail(3, x.device, x.dtype)}
    with torch.inference_mode():
        chunks = [layer(x[..., start:start + 10], tails) for start in range(0, 40, 10)]
    out = torch.cat(chunks, dim=-1)
    assert out.shape == (3, 1, 40)
    torch.testing.assert_close(out, _reference(layer, x), rtol=1e-12, atol=1e-12)
    weight, bias = layer.padded_weights()
    assert weight.shape == (NARROW_OUT, 12, 7) and bias.shape == (NARROW_OUT,)
    assert not weight[1:].any() and not bias[1:].any()


def test_the_padded_weights_follow_the_parameters():
    torch.manual_seed(1)
    layer = CausalConv1d(4, 2, kernel_size=3)
    x = torch.randn(1, 4, 9)
    tails = {layer.state_key: layer.new_tail(1, x.device, x.dtype)}
    with torch.no_grad():
        first = layer.padded_weights()[0]
        assert layer.padded_weights()[0] is first  # made once
        layer.conv.weight.mul_(2.0)  # written in place (a checkpoint load does this)
        assert layer.padded_weights()[0] is not first
        tails[layer.state_key].zero_()
        torch.testing.assert_close(layer(x, tails), _reference(layer, x))
    layer.double()  # cast: new tensors
    assert layer.padded_weights()[0].dtype == torch.float64


def test_a_wide_convolution_runs_as_it_is():
    layer = CausalConv1d(4, NARROW_OUT, kernel_size=3)
    x = torch.randn(2, 4, 5)
    tails = {layer.state_key: layer.new_tail(2, x.device, x.dtype)}
    with torch.no_grad():
        torch.testing.assert_close(layer(x, tails), _reference(layer, x))
    assert layer._padded is None
