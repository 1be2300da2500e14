"""ECAPA-TDNN speaker encoder of the Base models: a log-mel spectrogram -> one speaker vector.

Module and parameter names equal the checkpoint's ``speaker_encoder.*`` tensors without the prefix.
Every convolution pads "same" by reflecting its input (as the official model does with
``padding="same", padding_mode="reflect"``); here the padding is explicit so the math is visible.
The input of ``SpeakerEncoder.forward`` comes from ``engine.core.codec.mel.log_mel_spectrogram``.
"""

from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional as F

from engine.core.config import SpeakerEncoderConfig
from engine.errors import CheckpointError

_STD_EPS = 1e-12  # floor of the variance inside the statistics pooling


class ReflectConv1d(nn.Conv1d):
    """A stride-1 ``Conv1d`` whose output is as long as its input, padded by reflection."""

    def __init__(self, in_channels: int, out_channels: int, kernel_size: int = 1, dilation: int = 1):
        super().__init__(in_channels, out_channels, kernel_size, dilation=dilation)
        total = dilation * (kernel_size - 1)
        self.pad_left, self.pad_right = total // 2, total - total // 2

    def forward(self, x: torch.Tensor) -> torch.Tensor:  # [B, C, T] -> [B, C_out, T]
        if self.pad_left or self.pad_right:
            x = F.pad(x, (self.pad_left, self.pad_right), mode="reflect")
        return super().forward(x)


class TimeDelayBlock(nn.Module):
    """Dilated convolution followed by ReLU (a TDNN layer)."""

    def __init__(self, in_channels: int, out_channels: int, kernel_size: int = 1, dilation: int = 1):
        super().__init__()
        self.conv = ReflectConv1d(in_channels, out_channels, kernel_size, dilation)

    def forward(self, x: torch.Tensor) -> torch.Tensor:  # [B, C, T] -> [B, C_out, T]
        return F.relu(self.conv(x))


class Res2NetBlock(nn.Module):
    """Splits channels into ``scale`` groups; group i > 0 sees its input plus group i-1's output."""

    def __init__(self, channels: int, scale: int, kernel_size: int, dilation: int):
        super().__init__()
        if channels % scale:
            raise CheckpointError(f"speaker encoder: {channels} channels do not split into {scale} groups")
        width = channels // scale
        self.scale = scale
        self.blocks = nn.ModuleList(TimeDelayBlock(width, width, kernel_size, dilation) for _ in range(scale - 1))

    def forward(self, x: torch.Tensor) -> torch.Tensor:  # [B, C, T]
        groups = torch.chunk(x, self.scale, dim=1)  # scale x [B, C/scale, T]
        outputs = [groups[0]]
        previous = None
        for block, group in zip(self.blocks, groups[1:], strict=True):
            previous = block(group if previous is None else group + previous)
            outputs.append(previous)
        return torch.cat(outputs, dim=1)


class SqueezeExcitation(nn.Module):
    """Rescales each channel by a gate computed from the channel means over time."""

    def __init__(self, channels: int, bottleneck: int):
        super().__init__()
        self.conv1 = ReflectConv1d(channels, bottleneck)
        self.conv2 = ReflectConv1d(bottleneck, channels)

    def forward(self, x: torch.Tensor) -> torch.Tensor:  # [B, C, T]
        gate = x.mean(dim=2, keepdim=True)  # [B, C, 1]
        gate = torch.sigmoid(self.conv2(F.relu(self.conv1(gate))))
        return x * gate


class SERes2NetBlock(nn.Module):
    """TDNN -> Res2Net -> TDNN -> squeeze-excitation, with a residual connection."""

    def __init__(self, channels: int, scale: int, se_channels: int, kernel_size: int, dilation: int):
        super().__init__()
        self.tdnn1 = TimeDelayBlock(channels, channels)
        self.res2net_block = Res2NetBlock(channels, scale, kernel_size, dilation)
        self.tdnn2 = TimeDelayBlock(channels, channels)
        self.se_block = SqueezeExcitation(channels, se_channels)

    def forward(self, x: torch.Tensor) -> torch.Tensor:  # [B, C, T]
        return x + self.se_block(self.tdnn2(self.res2net_block(self.tdnn1(x))))


def _weighted_stats(x: torch.Tensor, weights: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Mean and standard deviation over time of ``x`` [B, C, T] under ``weights`` summing to 1 over T."""
    mean = (weights * x).sum(dim=2)  # [B, C]
    variance = (weights * (x - mean.unsqueeze(2)).pow(2)).sum(dim=2)
    return mean, variance.clamp(min=_STD_EPS).sqrt()


class AttentiveStatisticsPooling(nn.Module):
    """Per-channel attention over time, conditioned on the global mean and std; returns [mean, std]."""

    def __init__(self, channels: int, attention_channels: int):
        super().__init__()
        self.tdnn = TimeDelayBlock(channels * 3, attention_channels)
        self.conv = ReflectConv1d(attention_channels, channels)

    def forward(self, x: torch.Tensor) -> torch.Tensor:  # [B, C, T] -> [B, 2C, 1]
        frames = x.shape[2]
        uniform = torch.full_like(x[:, :1], 1.0 / frames)  # [B, 1, T]
        mean, std = _weighted_stats(x, uniform)
        context = torch.cat([x, mean.unsqueeze(2).expand_as(x), std.unsqueeze(2).expand_as(x)], dim=1)
        attention = torch.softmax(self.conv(torch.tanh(self.tdnn(context))), dim=2)  # [B, C, T]
        mean, std = _weighted_stats(x, attention)
        return torch.cat([mean, std], dim=1).unsqueeze(2)


class SpeakerEncoder(nn.Module):
    """ECAPA-TDNN: ``forward(mels [B, T, mel_dim]) -> [B, enc_dim]``."""

    def __init__(self, config: SpeakerEncoderConfig):
        super().__init__()
        channels, kernels, dilations = config.enc_channels, config.enc_kernel_sizes, config.enc_dilations
        if not len(channels) == len(kernels) == len(dilations) or len(channels) < 3:
            raise CheckpointError("speaker encoder: enc_channels, enc_kernel_sizes and enc_dilations must "
                                  "have the same length (at least 3)")
        self.config = config
        self.blocks = nn.ModuleList([TimeDelayBlock(config.mel_dim, channels[0], kernels[0], dilations[0])])
        for i in range(1, len(channels) - 1):
            if channels[i] != channels[i - 1]:
                raise CheckpointError("speaker encoder: SE-Res2Net blocks need equal input and output channels")
            self.blocks.append(SERes2NetBlock(channels[i], config.enc_res2net_scale, config.enc_se_channels,
                                              kernels[i], dilations[i]))
        self.mfa = TimeDelayBlock(sum(channels[1:-1]), channels[-1], kernels[-1], dilations[-1])
        self.asp = AttentiveStatisticsPooling(channels[-1], config.enc_attention_channels)
        self.fc = ReflectConv1d(channels[-1] * 2, config.enc_dim)

    def forward(self, mels: torch.Tensor) -> torch.Tensor:  # [B, T, mel_dim] -> [B, enc_dim]
        x = mels.transpose(1, 2)  # [B, mel_dim, T]
        block_outputs = []
        for block in self.blocks:
            x = block(x)
            block_outputs.append(x)
        x = self.mfa(torch.cat(block_outputs[1:], dim=1))  # [B, C_last, T]
        return self.fc(self.asp(x)).squeeze(2)
