"""The decoder's causal blocks (engine/codec/conv.py) against plain compositions of their layers: where a block
moves a convolution's bias into a later pass, it computes what adding the bias in place computes."""

from __future__ import annotations

import torch

from engine.codec.conv import StreamingLayer, UpsampleBlock


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
