"""The matrix-vector kernel against the PyTorch code it replaces: ``F.linear`` plain and with bias, with
SiLU(gate) * up computed on the fly, with the RMSNorm before it and the residual add after it; on CUDA
in bf16, on CPU in Triton's interpreter (float32)."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from engine.core.gpu_kernels import TRITON_INSTALLED, gemv
from engine.core.model.layers import RMSNorm

pytestmark = pytest.mark.skipif(not TRITON_INSTALLED, reason="Triton is not installed")

CUDA = torch.cuda.is_available()
DEVICE, DTYPE, TOL = ("cuda", torch.bfloat16, 2e-2) if CUDA else ("cpu", torch.float32, 1e-4)
# shapes of the 0.6B/1.7B projections on GPU; small ones (ragged edges included) in the interpreter
SHAPES = [(4096, 1024), (1024, 3072), (6144, 1024), (3072, 2048), (2048, 6144)] if CUDA else [(24, 40), (70, 1030)]


@pytest.mark.parametrize("n,k", SHAPES)
def test_gemv_equals_linear(n, k):
    g = torch.Generator().manual_seed(n + k)
    x = torch.randn(k, generator=g).to(DEVICE, DTYPE)
    w = (torch.randn(n, k, generator=g) / k**0.5).to(DEVICE, DTYPE)
    b = torch.randn(n, generator=g).to(DEVICE, DTYPE)
    expected = F.linear(x.float(), w.float(), b.float())
    torch.testing.assert_close(torch.ops.orator.gemv(x, w, b, False, None, 0.0, None).float(), expected,
                               atol=TOL, rtol=TOL)
    torch.testing.assert_close(torch.ops.orator.gemv(x, w, None, False, None, 0.0, None).float(),
                               expected - b.float(), atol=TOL, rtol=TOL)


@pytest.mark.parametrize("n,k", SHAPES)
def test_silu_mul_gemv_equals_mlp_down_projection(n, k):
    g = torch.Generator().manual_seed(n * k)
    gate_up = torch.randn(2 * k, generator=g).to(DEVICE, DTYPE)
    w = (torch.randn(n, k, generator=g) / k**0.5).to(DEVICE, DTYPE)
    gate, up = gate_up.float().chunk(2)
    expected = F.linear(F.silu(gate) * up, w.float())
    torch.testing.assert_close(torch.ops.orator.gemv(gate_up, w, None, True, None, 0.0, None).float(), expected,
                               atol=TOL, rtol=TOL)
    residual = torch.randn(n, generator=g).to(DEVICE, DTYPE)
    torch.testing.assert_close(torch.ops.orator.gemv(gate_up, w, None, True, None, 0.0, residual).float(),
                               expected + residual.float(), atol=TOL, rtol=TOL)


@pytest.mark.parametrize("n,k", SHAPES)
def test_norm_and_residual_fused_equal_the_layer_code(n, k):
    """``norm_linear`` = F.linear(RMSNorm(x)) and ``linear(..., residual=r)`` = r + F.linear(...), as the
    decoder layer computes them (the kernel directly, and the dispatching functions on CUDA)."""
    g = torch.Generator().manual_seed(n - k)
    x = (3 * torch.randn(k, generator=g)).to(DEVICE, DTYPE)
    w = (torch.randn(n, k, generator=g) / k**0.5).to(DEVICE, DTYPE)
    r = torch.randn(n, generator=g).to(DEVICE, DTYPE)
    norm = RMSNorm(k, 1e-6).to(DEVICE, DTYPE)
    with torch.no_grad():
        norm.weight.copy_(1 + 0.1 * torch.randn(k, generator=g))
        expected = F.linear(norm(x).float(), w.float())
        fused = torch.ops.orator.gemv(x, w, None, False, norm.weight, norm.eps, r)
        torch.testing.assert_close(fused.float(), expected + r.float(), atol=TOL, rtol=TOL)
        if CUDA:
            torch.testing.assert_close(gemv.norm_linear(x[None, None], norm, w)[0, 0].float(), expected,
                                       atol=TOL, rtol=TOL)
            torch.testing.assert_close(gemv.linear(x[None], w, residual=r[None])[0].float(),
                                       F.linear(x.float(), w.float()) + r.float(), atol=TOL, rtol=TOL)


def test_dispatch_uses_the_kernel_for_one_cuda_row_only():
    """Several rows, CPU tensors and float64 go to ``F.linear`` (bit-identical); one bf16 CUDA row to the kernel."""
    w = torch.randn(8, 16, dtype=torch.float64)
    x = torch.randn(3, 16, dtype=torch.float64)
    r = torch.randn(3, 8, dtype=torch.float64)
    norm = RMSNorm(16, 1e-6).double()
    assert torch.equal(gemv.linear(x, w), F.linear(x, w))
    assert torch.equal(gemv.linear(x, w, residual=r), r + F.linear(x, w))
    assert torch.equal(gemv.norm_linear(x, norm, w), F.linear(norm(x), w))
    assert not gemv._one_row(x[:1], w)
    if CUDA:
        wc, xc = w.to("cuda", torch.bfloat16), x[:1].to("cuda", torch.bfloat16)
        assert gemv._one_row(xc[None], wc)
        assert gemv.linear(xc[None], wc).shape == (1, 1, 8)
        assert not gemv._one_row(torch.cat([xc, xc]), wc)
