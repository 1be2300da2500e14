"""A decoder stack decoding one position at a time gives the same hidden states with its projections,
norms and residual adds in the matrix-vector kernel as with the plain PyTorch code.

The one-row test of ``engine.core.gpu_kernels.gemv`` is widened to float32 for the fused run, so the wiring of
``norm_linear``/``residual`` in the layers is checked end to end: on CPU in Triton's interpreter, on a
GPU compiled.
"""

from __future__ import annotations

import pytest
import torch

from engine.core.gpu_kernels import TRITON_INSTALLED, gemv
from engine.core.model.layers import DecoderStack, fuse_projections

pytestmark = pytest.mark.skipif(not TRITON_INSTALLED, reason="Triton is not installed")

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"


def _decode(stack: DecoderStack, xs: torch.Tensor) -> torch.Tensor:
    cache = stack.new_cache(1, xs.shape[0], xs.dtype, DEVICE)
    out = [stack(x[None, None], torch.tensor([[i]], device=DEVICE), cache) for i, x in enumerate(xs)]
    return torch.cat(out, dim=1)[0]


def test_fused_kernels_in_the_layers_give_the_plain_hidden_states(monkeypatch):
    torch.manual_seed(0)
    stack = DecoderStack(2, 64, 96, 4, 2, 16, 1e-6, 10000.0).eval()
    with torch.no_grad():
        for p in stack.parameters():
            p.normal_(0, 0.2)
    stack.to(DEVICE)
    fuse_projections(stack)  # after the move: the fused matrices are plain tensors, not parameters
    xs = torch.randn(5, 64).to(DEVICE)
    with torch.inference_mode():
        plain = _decode(stack, xs)
        calls = []

        def one_row(x, weight):  # any single row, float32 included
            calls.append(weight.shape)
            return x.numel() == x.shape[-1]

        monkeypatch.setattr(gemv, "_one_row", one_row)
        fused = _decode(stack, xs)
    assert len(calls) == 5 * 2 * 4  # positions x layers x (q/k/v, output, gate/up, down)
    torch.testing.assert_close(fused, plain, atol=1e-5, rtol=1e-5)
