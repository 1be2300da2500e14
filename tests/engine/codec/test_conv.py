"""The decoder's causal blocks (engine/codec/conv.py) against plain compositions of their layers: where a block
moves a convolution's bias into a later pass, it computes what adding the bias in place computes; where a CPU
computes a transposed convolution as a product, the convolution's output."""

from __future__ import annotations

import copy

import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.codec.conv import CausalConvTranspose1d, StreamingLayer, UpsampleBlock, lay_out_weight


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
