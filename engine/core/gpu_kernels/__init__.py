"""Hand-written Triton kernels for the decode hot path.

Used on CUDA when Triton is installed and the ``triton`` option is on (``engine.core.options``); each keeps the PyTorch
code it replaces as the reference that CPU runs and the tests compare against.
"""

from __future__ import annotations

import os

import torch

from engine.core import options


def _triton_installed() -> bool:
    """Triton imports and PyTorch can register Triton kernels as operators (``torch.library.triton_op``, PyTorch
    2.6+: the matrix-vector and sampling kernels are; the attention blocks, which write the caches, are
    ``torch.library.custom_op``s), and something can run them: a CUDA device, or Triton's interpreter
    (``TRITON_INTERPRET=1``, as the tests run them on a CPU). Elsewhere they are not defined: registering one imports
    Inductor and Dynamo, seconds of a CPU engine's load for kernels it never runs."""
    if not hasattr(torch.library, "triton_op"):
        return False
    if os.environ.get("TRITON_INTERPRET", "") != "1" and not torch.cuda.is_available():
        return False
    try:
        import triton  # noqa: F401
    except ImportError:
        return False
    return True


TRITON_INSTALLED = _triton_installed()  # the kernels are defined only then


def triton_available() -> bool:
    """Whether to run the Triton kernels now: installed, and the ``triton`` option on (``engine.core.options``)."""
    return TRITON_INSTALLED and options.current().triton


def runs_on(device: torch.device) -> bool:
    """Triton needs a GPU of compute capability 7.0+ (other devices only reach a kernel in the tests, in
    Triton's interpreter). Compiled code only runs where Inductor's Triton already does, and the eager
    check stays out of the traced graph."""
    if torch.compiler.is_compiling() or device.type != "cuda":
        return True
    return torch.cuda.get_device_capability(device) >= (7, 0)
