"""Fixtures of the kernel tests: ``bf16_rounded_to_nearest``."""

from __future__ import annotations

import numpy as np
import pytest
import torch


@pytest.fixture
def bf16_rounded_to_nearest(monkeypatch):
    """On CPU, Triton's interpreter made to round float32 -> bf16 to nearest (it truncates), as a GPU does."""
    if torch.cuda.is_available():
        return
    pytest.importorskip("triton", reason="Triton is not installed (the test extra brings it)")
    import triton.language as tl
    from triton.runtime import interpreter

    convert = getattr(interpreter, "_convert_float", None)
    if convert is None:
        pytest.skip("this Triton's interpreter converts floats some other way")

    def to_nearest(data, src, dst, rounding_mode):
        if src != tl.float32 or dst != tl.bfloat16:
            return convert(data, src, dst, rounding_mode)
        rounded = torch.from_numpy(np.ascontiguousarray(data).view(np.float32).copy()).to(torch.bfloat16)
        return rounded.view(torch.int16).numpy().view(np.uint16)

    monkeypatch.setattr(interpreter, "_convert_float", to_nearest)
