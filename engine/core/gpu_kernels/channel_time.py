"""Launch geometry shared by the codec decoder's elementwise kernels (``snake``, ``residual``)."""

from __future__ import annotations

import torch

from engine.core.codec.layout import is_channels_last

# The codec decoder's elementwise kernels (snake.py, residual.py): one program per (row, block of time steps,
# block of channels) of a [B, C, T] activation, whatever its strides (the decoder keeps its activations
# channels-last, [B, T, C] in memory, for cuDNN; the tests also pass time-contiguous ones), in float32,
# bfloat16 or float16 (float64 stays with PyTorch).
CHANNEL_TIME_DTYPES = (torch.float32, torch.bfloat16, torch.float16)
_TILE = 2048  # elements a program


def _power_of_two(n: int) -> int:
    return 1 << max(0, n - 1).bit_length()


def channel_time_launch(x: torch.Tensor) -> tuple[int, int, int, int, int]:
    """(time steps a program, channels a program, programs along time, programs along channels, warps) for such
    a kernel over x [B, C, T]: tiles of ~2,048 elements, long along x's innermost dimension (channels when
    ``x.stride(1) == 1``, time otherwise) so that a program's loads are contiguous."""
    _, c, t = x.shape
    if is_channels_last(x):
        block_c = max(16, min(128, _power_of_two(c)))
        block_t = max(2, min(_TILE // block_c, _power_of_two(t)))
    else:
        block_t = max(16, min(1024, _power_of_two(t)))
        block_c = max(2, min(_TILE // block_t, _power_of_two(c)))
    warps = 4 if block_t * block_c >= 1024 else 1
    return block_t, block_c, -(-t // block_t), -(-c // block_c), warps
