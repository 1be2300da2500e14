"""Hand-written Triton kernels for the decode hot path.

Used on CUDA when Triton is importable (``ORATOR_TRITON=0`` turns them off); each keeps the PyTorch
code it replaces as the reference that CPU runs and the tests compare against.
"""

from __future__ import annotations

import os

import torch


def triton_available() -> bool:
    """Triton imports, ``ORATOR_TRITON`` is not 0, and PyTorch can register Triton kernels as operators
    (``torch.library.triton_op``, PyTorch 2.6+: the matrix-vector and sampling kernels are; the attention
    blocks, which write the caches, are ``torch.library.custom_op``s)."""
    if os.environ.get("ORATOR_TRITON", "1") in ("0", "false", "no") or not hasattr(torch.library, "triton_op"):
        return False
    try:
        import triton  # noqa: F401
    except ImportError:
        return False
    return True


def runs_on(device: torch.device) -> bool:
    """Triton needs a GPU of compute capability 7.0+ (other devices only reach a kernel in the tests, in
    Triton's interpreter). Compiled code only runs where Inductor's Triton already does, and the eager
    check stays out of the traced graph."""
    if torch.compiler.is_compiling() or device.type != "cuda":
        return True
    return torch.cuda.get_device_capability(device) >= (7, 0)


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
