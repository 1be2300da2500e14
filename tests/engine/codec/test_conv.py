"""The decoder's causal blocks (engine/core/codec/conv.py) against plain compositions of their layers: where a block
moves a convolution's bias into a later pass, it computes what adding the bias in place computes; where a CPU
computes a transposed convolution as a product, the convolution's output."""

from __future__ import annotations

import copy

import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.core.codec.conv import CausalConv1d, CausalConvTranspose1d, StreamingLayer, UpsampleBlock, lay_out_weight


def test_the_upsampled_signal_gets_its_bias_inside_the_first_residual_unit():
    """``UpsampleBlock`` runs its transposed convolution without the bias and hands the bias to the first
    residual unit (its activation and its sum): the same output, and the same streaming tails, as the
    convolution with its bias followed by the units; over two chunks, so the tails carry over."""
    torch.manual_seed(0)
    block = UpsampleBlock(8, 4, rate=3).double()
    with torch.no_grad():
        for parameter in block.parameters():
            parameter.normal_(0, 0.5)
    snake, upsample, *units = block.block
    tails = {}
    for name, module in block.named_modules():  # as SpeechDecoder names its streaming layers
        if isinstance(module, StreamingLayer) and module.history:
            module.state_key = name
            tails[name] = module.new_tail(2, torch.device("cpu"), torch.float64)
    plain_tails = {name: tail.clone() for name, tail in tails.items()}
    x = torch.randn(2, 8, 10, dtype=torch.float64)
    with torch.no_grad():
        for chunk in (x[..., :6], x[..., 6:]):
            got = block(chunk, tails)
            h = upsample(chunk, plain_tails, activation=snake)  # with its bias
            for unit in units:
                h = unit(h, plain_tails)
            torch.testing.assert_close(got, h, atol=1e-12, rtol=1e-12)
            for name in tails:
                torch.testing.assert_close(tails[name], plain_tails[name], atol=1e-12, rtol=1e-12)
    assert upsample.conv.bias.abs().min() > 0  # a bias that, left out, would show


@settings(max_examples=40, deadline=None)
@given(c_in=st.integers(1, 24), c_out=st.integers(1, 24), stride=st.integers(1, 6), pieces=st.integers(1, 3),
       chunks=st.lists(st.integers(1, 5), min_size=1, max_size=3), batch=st.integers(1, 2),
       with_bias=st.booleans(), seed=st.integers(0, 2**16))
def test_a_cpu_transposed_convolution_as_a_product_equals_the_convolution(c_in, c_out, stride, pieces, chunks, batch,
                                                                           with_bias, seed):
    """On a CPU in float32 a transposed convolution whose kernel is a whole number of strides runs as one matrix
    product and an overlap-add (``CausalConvTranspose1d._overlap_added``): chunk after chunk, the same output
    (to float32 rounding) and the same tails as the float64 convolution, channels-last as the layers hand on."""
    torch.manual_seed(seed)
    fast = CausalConvTranspose1d(c_in, c_out, pieces * stride, stride)
    with torch.no_grad():
        fast.conv.weight.copy_(torch.randn_like(fast.conv.weight))
        fast.conv.weight.data = lay_out_weight(fast.conv.weight.data)
    reference = copy.deepcopy(fast).double()
    fast.state_key = reference.state_key = "up"
    tails = {"up": fast.new_tail(batch, torch.device("cpu"), torch.float32)} if fast.history else {}
    reference_tails = {name: tail.double() for name, tail in tails.items()}
    with torch.no_grad():
        for frames in chunks:
            x = torch.randn(batch, frames, c_in).transpose(1, 2)  # channels-last, as the decoder's activations
            got = fast(x, tails, with_bias=with_bias)
            expected = reference(x.double(), reference_tails, with_bias=with_bias)
            assert got.shape == (batch, c_out, frames * stride) and got.stride(1) == 1
            torch.testing.assert_close(got.double(), expected, atol=1e-5, rtol=1e-5)
            for name in tails:
                torch.testing.assert_close(tails[name].double(), reference_tails[name], atol=0, rtol=0)


@settings(max_examples=40, deadline=None)
@given(c_in=st.integers(1, 24), c_out=st.integers(1, 96), kernel=st.integers(1, 7), dilation=st.integers(1, 9),
       chunks=st.lists(st.integers(1, 14), min_size=1, max_size=3), batch=st.integers(1, 2),
       with_bias=st.booleans(), activation=st.booleans(), seed=st.integers(0, 2**16))
def test_a_cpu_convolution_as_a_product_equals_the_convolution(c_in, c_out, kernel, dilation, chunks, batch,
                                                               with_bias, activation, seed):
    """On a CPU in float32 a pointwise convolution, or one with at least 8 output channels a frame
    (``PRODUCT_FRAMES_PER_CHANNEL``), runs as one matrix product over each frame's input window
    (``CausalConv1d._as_product``); chunk after chunk, long and short (some chunks take the product, some the
    convolution), the same output (to float32 rounding) and the same tails as the float64 convolution,
    channels-last as the layers hand on."""
    torch.manual_seed(seed)
    fast = CausalConv1d(c_in, c_out, kernel, dilation)
    with torch.no_grad():
        fast.conv.weight.copy_(torch.randn_like(fast.conv.weight))
        fast.conv.weight.data = lay_out_weight(fast.conv.weight.data)
        fast.conv.bias.copy_(torch.randn_like(fast.conv.bias))
    reference = copy.deepcopy(fast).double()
    fast.state_key = reference.state_key = "conv"
    tails = {"conv": fast.new_tail(batch, torch.device("cpu"), torch.float32)} if fast.history else {}
    reference_tails = {name: tail.double() for name, tail in tails.items()}
    act = (lambda x, out=None: torch.tanh(x, out=out)) if activation else None
    with torch.no_grad():
        for frames in chunks:
            x = torch.randn(batch, frames, c_in).transpose(1, 2)  # channels-last, as the decoder's activations
            got = fast(x, tails, act, with_bias=with_bias)
            expected = reference(x.double(), reference_tails, act, with_bias=with_bias)
            assert got.shape == (batch, c_out, frames) and got.stride(1) == 1
            torch.testing.assert_close(got.double(), expected, atol=1e-5, rtol=1e-5)
            for name in tails:
                torch.testing.assert_close(tails[name].double(), reference_tails[name], atol=1e-6, rtol=1e-6)


def test_which_cpu_convolutions_run_as_products(monkeypatch):
    """Pointwise convolutions always; wider ones while their output channels are at least 8 a frame: the
    decoder's first convolution (1,536 channels) for chunks up to 48 frames of 4 steps."""
    taken = []
    monkeypatch.setattr(CausalConv1d, "_as_product", lambda self, e, frames, b: taken.append(frames) or
                        torch.zeros(e.shape[0], self.conv.out_channels, frames))
    wide, narrow, pointwise = CausalConv1d(4, 64, 7), CausalConv1d(4, 63, 7), CausalConv1d(4, 2, 1)
    for layer in (wide, narrow, pointwise):
        layer.state_key = "c"
    with torch.no_grad():
        for layer in (wide, narrow, pointwise):
            tails = {"c": layer.new_tail(1, torch.device("cpu"), torch.float32)} if layer.history else {}
            layer(torch.randn(1, 4, 8), tails)
            layer.double()(torch.randn(1, 4, 8, dtype=torch.float64),
                           {n: t.double() for n, t in tails.items()})  # float64, the reference: never
    assert taken == [8, 8]  # wide (64 >= 8 * 8) and pointwise, in float32 only
