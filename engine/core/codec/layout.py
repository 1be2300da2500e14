"""The codec decoder's memory layout: its activations [B, C, T] are stored channels-last ([B, T, C] underneath), as
cuDNN's bf16/fp16 convolution kernels want them; these helpers make and recognise such tensors."""

from __future__ import annotations

import torch


def is_channels_last(x: torch.Tensor) -> bool:
    """Whether x [B, C, T] runs channel after channel in memory ([B, T, C] underneath), as the decoder's
    activations do."""
    return x.shape[1] > 1 and x.stride(1) == 1


def channels_last(batch: int, channels: int, frames: int, like: torch.Tensor) -> torch.Tensor:
    """An uninitialised [batch, channels, frames] tensor stored [batch, frames, channels], of ``like``'s dtype
    and device."""
    return like.new_empty(batch, frames, channels).transpose(1, 2)


def empty_like_layout(x: torch.Tensor) -> torch.Tensor:
    """A new tensor of x's shape [B, C, T] and dtype, laid out as x (channels-last or time-contiguous) even when x
    is a view (``torch.empty_like`` falls back to contiguous for views)."""
    return channels_last(*x.shape, x) if is_channels_last(x) else x.new_empty(x.shape)
