"""Causal convolution blocks of the codec decoder, each able to run on a stream of chunks exactly.

Every layer here sees only the past, so a stream can be cut anywhere: a layer with memory keeps
the last inputs it needs in a ``tails`` tensor (``[B, C_in, history]``), written in place on every
call. Starting from zero tails reproduces the zero padding of a whole-sequence pass bit for bit.
Module and parameter names follow the official checkpoint (``conv.weight``, ``block.1``, ...).

Layout: activations, tails and convolution weights are channels-last, shaped [B, C, T] but stored
[B, T, C] (``channels_last``; weights by ``SpeechDecoder.from_dir``), and the convolutions run as 2-D ones
over [B, C, 1, T] in ``torch.channels_last``. cuDNN's bf16/fp16 kernels work in that layout: given
[B, C, T] contiguous, it converts every convolution's input and output around them
(docs/benchmarks.md#decoder-channels-last).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from functools import partial

import torch
import torch.nn.functional as F
from torch import nn

from engine.core.codec.layout import channels_last
from engine.core.gpu_kernels.residual import add_biased
from engine.core.gpu_kernels.snake import snake_beta

Tails = dict[str, torch.Tensor]
# A CPU convolution of k > 1 runs as a product when its output channels are at least this many times its frames
# (docs/benchmarks.md#cpu-conv-product)
PRODUCT_FRAMES_PER_CHANNEL = 8
Activation = Callable[..., torch.Tensor]  # a SnakeBeta, or one with its pre-activation bias bound (partial)


def lay_out_weight(weight: torch.Tensor) -> torch.Tensor:
    """A convolution's weight [O, I, k] (same values) stored [O, k, I]: once unsqueezed to [O, I, 1, k] it is
    ``torch.channels_last``, as the layers' 2-D convolutions want it (else converted on every call)."""
    return weight.transpose(1, 2).contiguous().transpose(1, 2)


class StreamingLayer(nn.Module):
    """A layer that remembers ``history`` input frames between chunks.

    ``state_key`` names its entry in the decoder state; the owning ``SpeechDecoder`` sets it to the
    layer's module path.
    """

    def __init__(self, in_channels: int, history: int):
        super().__init__()
        self.in_channels = in_channels
        self.history = history
        self.state_key = ""

    def new_tail(self, batch: int, device: torch.device, dtype: torch.dtype) -> torch.Tensor:
        """Zeros [batch, C_in, history], channels-last."""
        return torch.zeros(batch, self.history, self.in_channels, device=device, dtype=dtype).transpose(1, 2)

    def _with_past(self, x: torch.Tensor, tails: Tails, activation: Activation | None = None) -> torch.Tensor:
        """``[tail, activation(x)]`` along time (``activation(x)`` alone without history), the activation
        written straight into place (no second pass over the activated input to join it to the tail); the
        tail is overwritten with the last ``history`` frames. Channels-last, as x is."""
        if not self.history:
            return x if activation is None else activation(x)
        tail = tails[self.state_key]  # [B, C, history]
        b, c, t = x.shape
        extended = channels_last(b, c, self.history + t, x)  # (torch.cat would lay it out time-contiguous)
        extended[..., : self.history].copy_(tail)
        if activation is None:
            extended[..., self.history :].copy_(x)
        else:
            activation(x, out=extended[..., self.history :])
        tail.copy_(extended[..., t:])
        return extended


class CausalConv1d(StreamingLayer):
    """Stride-1 Conv1d padded on the left by ``(kernel_size - 1) * dilation`` frames of the past."""

    def __init__(self, in_channels: int, out_channels: int, kernel_size: int, dilation: int = 1, groups: int = 1):
        super().__init__(in_channels, (kernel_size - 1) * dilation)
        self.conv = nn.Conv1d(in_channels, out_channels, kernel_size, dilation=dilation, groups=groups)

    def forward(self, x: torch.Tensor, tails: Tails, activation: Activation | None = None,
                with_bias: bool = True) -> torch.Tensor:
        """[B, C_in, T] -> [B, C_out, T]: the convolution of ``activation(x)`` (of x without one); without its
        bias when ``with_bias`` is False (the caller adds ``conv.bias`` in a pass it makes anyway)."""
        conv = self.conv
        extended = self._with_past(x, tails, activation)
        frames, (c_out, _, kernel) = x.shape[-1], conv.weight.shape
        # On a CPU a pointwise convolution, or one whose weight outweighs its input window (a few frames through
        # many channels), is faster as one matrix product (docs/benchmarks.md#cpu-conv-product); float64, the
        # reference, keeps the convolution
        if (extended.device.type == "cpu" and extended.dtype != torch.float64 and conv.groups == 1
                and (kernel == 1 or frames * PRODUCT_FRAMES_PER_CHANNEL <= c_out)):
            return self._as_product(extended, frames, with_bias)
        y = F.conv2d(extended.unsqueeze(2), conv.weight.unsqueeze(2),
                     conv.bias if with_bias else None, dilation=(1, conv.dilation[0]), groups=conv.groups)
        return y.squeeze(2)

    def _as_product(self, extended: torch.Tensor, frames: int, with_bias: bool) -> torch.Tensor:
        """The convolution as a product: each output frame's input window, its k frames (``dilation`` apart)
        side by side, times the weight laid out [O, k * I] (``lay_out_weight``: a free reshape)."""
        conv = self.conv
        c_out, c_in, kernel = conv.weight.shape
        rows = extended.transpose(1, 2)  # [B, history + T, C_in], contiguous (channels-last)
        if kernel > 1:
            b, length, _ = rows.shape
            dilation = conv.dilation[0]
            rows = rows.as_strided((b, frames, kernel, c_in), (length * c_in, c_in, dilation * c_in, 1),
                                   rows.storage_offset()).reshape(b, frames, kernel * c_in)
        weight = conv.weight.transpose(1, 2).reshape(c_out, kernel * c_in)
        return F.linear(rows, weight, conv.bias if with_bias else None).transpose(1, 2)  # [B, C_out, T]


class CausalConvTranspose1d(StreamingLayer):
    """ConvTranspose1d with its ``kernel_size - stride`` overhanging outputs cut from the right.

    Each input frame writes ``kernel_size`` outputs starting at ``frame * stride``, so the outputs of
    one frame also depend on the ``ceil(kernel_size / stride) - 1`` frames before it: those are the
    history. With ``kernel_size == stride`` frames do not overlap and nothing is remembered.
    """

    def __init__(self, in_channels: int, out_channels: int, kernel_size: int, stride: int):
        if kernel_size < stride:
            raise ValueError("a causal transposed convolution needs kernel_size >= stride")
        super().__init__(in_channels, math.ceil(kernel_size / stride) - 1)
        self.stride = stride
        self.conv = nn.ConvTranspose1d(in_channels, out_channels, kernel_size, stride=stride)

    def forward(self, x: torch.Tensor, tails: Tails, activation: Activation | None = None,
                with_bias: bool = True) -> torch.Tensor:
        """[B, C_in, T] -> [B, C_out, T * stride]: the transposed convolution of ``activation(x)``; without its
        bias when ``with_bias`` is False (the caller adds ``conv.bias`` in passes it makes anyway)."""
        frames = x.shape[-1]
        conv = self.conv
        extended = self._with_past(x, tails, activation)
        if extended.device.type == "cpu" and extended.dtype != torch.float64 and conv.kernel_size[0] % self.stride == 0:
            return self._overlap_added(extended, frames, with_bias)
        y = F.conv_transpose2d(extended.unsqueeze(2), conv.weight.unsqueeze(2),
                               conv.bias if with_bias else None, stride=(1, self.stride)).squeeze(2)
        # [B, C_out, (history + T - 1) * stride + kernel]
        start = self.history * self.stride
        return y[..., start : start + frames * self.stride]

    def _overlap_added(self, extended: torch.Tensor, frames: int, with_bias: bool) -> torch.Tensor:
        """The same transposed convolution as one matrix product and an overlap-add, for a kernel a whole number
        of strides long: each input frame's ``kernel`` outputs [C_out, kernel] are its row times the weight, and
        output frame t sums the i-th stride-long piece of input frame t - i. On a CPU PyTorch runs these
        transposed convolutions outside oneDNN, at a third of a plain product's speed
        (docs/benchmarks.md#cpu-decoder); float64, the reference, keeps the convolution."""
        conv = self.conv
        c_in, c_out, kernel = conv.weight.shape  # stored [C_in, kernel, C_out] (lay_out_weight): a free reshape
        pieces, stride = kernel // self.stride, self.stride
        b, _, length = extended.shape
        rows = extended.transpose(1, 2)  # [B, history + T, C_in], contiguous
        blocks = torch.matmul(rows, conv.weight.permute(0, 2, 1).reshape(c_in, kernel * c_out))
        blocks = blocks.view(b, length, pieces, stride, c_out)
        out = blocks[:, self.history :, 0]  # [B, T, stride, C_out]
        for i in range(1, pieces):
            out = out + blocks[:, self.history - i : length - i, i]
        if with_bias:
            out = out + conv.bias
        return out.reshape(b, frames * stride, c_out).transpose(1, 2)  # [B, C_out, T * stride], channels-last


class SnakeBeta(nn.Module):
    """``x + sin(x * e^alpha)^2 / (e^beta + 1e-9)`` per channel; alpha and beta are stored as logs."""

    def __init__(self, channels: int):
        super().__init__()
        self.alpha = nn.Parameter(torch.zeros(channels))
        self.beta = nn.Parameter(torch.zeros(channels))

    def forward(self, x: torch.Tensor, out: torch.Tensor | None = None,
                bias: torch.Tensor | None = None) -> torch.Tensor:  # [B, C, T]
        """The activation of x (of ``x + bias``, per channel, when given), written into ``out`` (a view,
        contiguous in time) when given."""
        return snake_beta(x, self.alpha, self.beta, out, bias)  # one Triton pass on CUDA (gpu_kernels/snake.py)


class ConvNeXtBlock(nn.Module):
    """Causal depthwise conv k7 -> LayerNorm -> Linear x4 -> GELU -> Linear -> gamma, plus the input."""

    def __init__(self, dim: int):
        super().__init__()
        self.dwconv = CausalConv1d(dim, dim, kernel_size=7, groups=dim)
        self.norm = nn.LayerNorm(dim, eps=1e-6)
        self.pwconv1 = nn.Linear(dim, 4 * dim)
        self.pwconv2 = nn.Linear(4 * dim, dim)
        self.gamma = nn.Parameter(torch.full((dim,), 1e-6))

    def forward(self, x: torch.Tensor, tails: Tails) -> torch.Tensor:  # [B, C, T]
        h = self.dwconv(x, tails).transpose(1, 2)  # [B, T, C]
        h = self.pwconv2(F.gelu(self.pwconv1(self.norm(h))))
        return x + (self.gamma * h).transpose(1, 2)


class ResidualUnit(nn.Module):
    """Snake -> causal conv k7 (dilated) -> Snake -> conv k1, plus the input."""

    def __init__(self, dim: int, dilation: int):
        super().__init__()
        self.act1 = SnakeBeta(dim)
        self.conv1 = CausalConv1d(dim, dim, kernel_size=7, dilation=dilation)
        self.act2 = SnakeBeta(dim)
        self.conv2 = CausalConv1d(dim, dim, kernel_size=1)

    def forward(self, x: torch.Tensor, tails: Tails, x_bias: torch.Tensor | None = None) -> torch.Tensor:
        """[B, C, T] -> [B, C, T]; the unit of ``x + x_bias`` (per channel) when ``x_bias`` is given, with that
        sum made inside act1's pass and the residual sum's, not in a pass of its own."""
        # conv1's bias is added in act2's pass and conv2's in the residual sum: two passes over the activations
        # fewer than PyTorch's (it adds a convolution's bias in a pass of its own), the same sums
        act1 = self.act1 if x_bias is None else partial(self.act1, bias=x_bias)
        h = self.conv1(x, tails, activation=act1, with_bias=False)
        y = self.conv2(h, tails, activation=partial(self.act2, bias=self.conv1.conv.bias), with_bias=False)
        return add_biased(x, y, self.conv2.conv.bias, x_bias)


class UpsampleBlock(nn.Module):
    """``block``: Snake, causal ConvTranspose (k = 2 * rate, stride rate), residual units dilated 1, 3, 9."""

    def __init__(self, in_dim: int, out_dim: int, rate: int):
        super().__init__()
        self.block = nn.ModuleList(
            [SnakeBeta(in_dim), CausalConvTranspose1d(in_dim, out_dim, 2 * rate, rate)]
            + [ResidualUnit(out_dim, dilation) for dilation in (1, 3, 9)]
        )

    def forward(self, x: torch.Tensor, tails: Tails) -> torch.Tensor:  # [B, C_in, T] -> [B, C_out, T * rate]
        snake, upsample, first, *units = self.block
        # the upsampled signal's bias goes into the first unit's two passes over it (its activation, its sum)
        x = first(upsample(x, tails, activation=snake, with_bias=False), tails, x_bias=upsample.conv.bias)
        for unit in units:
            x = unit(x, tails)
        return x
