"""Hand-written Triton kernels for the decode hot path.

Used on CUDA when Triton is importable (``ORATOR_TRITON=0`` turns them off); each keeps the PyTorch
code it replaces as the reference that CPU runs and the tests compare against.
"""

from __future__ import annotations

import os


def triton_available() -> bool:
    """Triton imports and ``ORATOR_TRITON`` is not 0."""
    if os.environ.get("ORATOR_TRITON", "1") in ("0", "false", "no"):
        return False
    try:
        import triton  # noqa: F401
    except ImportError:
        return False
    return True
