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


# The codec decoder's elementwise kernels (snake.py, residual.py): one program per (row, channel, block of
# time steps) of a [B, C, T] activation, in float32, bfloat16 or float16 (float64 stays with PyTorch).
CHANNEL_TIME_DTYPES = (torch.float32, torch.bfloat16, torch.float16)


def channel_time_launch(t: int) -> tuple[int, int, int]:
    """(time steps a program, programs along time, warps) for such a kernel over ``t`` time steps: blocks of up
    to 1,024 steps, four warps for long blocks and one for short ones."""
    block = max(16, min(1024, 1 << (t - 1).bit_length()))  # the next power of two
    return block, -(-t // block), 4 if block >= 512 else 1
