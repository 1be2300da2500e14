"""The measured Triton matrix product computes ``F.linear`` (in Triton's interpreter on the CPU, float32: the
interpreter's bf16 products are not the GPU's), whole and with K split over programs."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

pytest.importorskip("triton", reason="Triton is not installed (the test extra brings it)")

from bench import skinny_gemm  # noqa: E402


@pytest.mark.parametrize("config", [(32, 128, 1, 3), (16, 128, 2, 3), (16, 64, 4, 4)])
def test_triton_linear_computes_the_projection(config):
    torch.manual_seed(0)
    x, w = torch.randn(40, 384), torch.randn(72, 384) / 20
    y = torch.empty(40, 72)
    skinny_gemm.triton_linear(x, w, y, *config)
    torch.testing.assert_close(y, F.linear(x, w), rtol=1e-4, atol=1e-4)
