"""The sweep's launcher drives the real matrix-vector kernel (in Triton's interpreter on the CPU) with the
kernel's current signature: what it times is what the frame runs."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

pytest.importorskip("triton", reason="Triton is not installed (the test extra brings it)")

from bench.tuning import gemv_configs  # noqa: E402


@pytest.mark.parametrize("silu", [False, True])
def test_launch_computes_the_projection(silu):
    torch.manual_seed(0)
    n, k = 24, 64
    w = torch.randn(n, k, dtype=torch.float32)
    x = torch.randn(2 * k if silu else k, dtype=torch.float32)
    y = torch.empty(n, dtype=torch.float32)
    gemv_configs.launch(x, w, y, silu, 4, 32, 4)
    xin = F.silu(x[:k]) * x[k:] if silu else x
    torch.testing.assert_close(y, F.linear(xin, w), rtol=1e-4, atol=1e-4)
