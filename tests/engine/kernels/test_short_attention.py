"""The code predictor's one-kernel attention step (q/k norms, RoPE, cache write, attention over <= 16 slots)
against the PyTorch code of ``engine.model.layers`` it replaces: the output, and the cache written at each
row's slot and nowhere else. On CPU in Triton's interpreter, which rounds float32 -> bf16 by truncation
where a GPU rounds to nearest: bf16 is checked to a few ulps as it comes, and to the bit (now and then
one ulp off) with the interpreter made to round as a GPU does. Then the decoder layers calling it: eager,
compiled (the cache written in place), and on a GPU in bf16 against a float32 run."""

from __future__ import annotations

import re

import numpy as np
import pytest
import torch

pytest.importorskip("triton", reason="Triton is not installed (the test extra brings it)")

from engine.kernels.short_attention import short_attention_block  # noqa: E402
from engine.model import layers  # noqa: E402
from engine.model.layers import DecoderStack, RMSNorm, RotaryEmbedding, fuse_projections, rotate_half  # noqa: E402

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"
EPS = 1e-6
TOL = {torch.float32: 1e-5, torch.bfloat16: 3e-2}


def reference(qkv, q_norm, k_norm, cos, sin, k_cache, v_cache, write_pos, heads):
    """``Attention.forward``'s steps between the projections, for one position per row (writes the caches)."""
    b = qkv.shape[0]
    kv, slots, dim = k_cache.shape[1:]
    q, k, v = qkv.split([heads * dim, kv * dim, kv * dim], dim=-1)
    q, k = q_norm(q.view(b, heads, dim)), k_norm(k.view(b, kv, dim))
    cos, sin = cos[:, None], sin[:, None]
    q = q * cos + rotate_half(q) * sin
    k = k * cos + rotate_half(k) * sin
    rows = torch.arange(b, device=qkv.device)
    k_cache[rows, :, write_pos] = k
    v_cache[rows, :, write_pos] = v.view(b, kv, dim)
    mask = (torch.arange(slots, device=qkv.device)[None, :] <= write_pos[:, None]).view(b, 1, 1, slots)
    return layers.short_attention(q[:, :, None], k_cache, v_cache, mask).reshape(b, heads * dim)


def inputs(groups, dtype, write_pos, kv=2, dim=128, slots=16, seed=0):
    g = torch.Generator().manual_seed(seed)
    b, heads = len(write_pos), kv * groups
    qkv = (2 * torch.randn(b, (heads + 2 * kv) * dim, generator=g)).to(dtype)
    q_norm, k_norm = RMSNorm(dim, EPS), RMSNorm(dim, EPS)
    with torch.no_grad():
        q_norm.weight.copy_(1 + 0.2 * torch.randn(dim, generator=g))
        k_norm.weight.copy_(1 + 0.2 * torch.randn(dim, generator=g))
    q_norm, k_norm = (n.to(DEVICE, dtype).requires_grad_(False) for n in (q_norm, k_norm))
    pos = torch.tensor(write_pos, device=DEVICE)
    cos, sin = RotaryEmbedding(dim, 10000.0).to(DEVICE)(pos[:, None], dtype)  # [B, 1, 1, D]
    # the caches are views skipping a row at each end, as a batch bucket of a bigger cache is
    k_big = torch.randn(b + 2, kv, slots, dim, generator=g).to(DEVICE, dtype)
    v_big = torch.randn(b + 2, kv, slots, dim, generator=g).to(DEVICE, dtype)
    return qkv.to(DEVICE), q_norm, k_norm, cos[:, 0, 0], sin[:, 0, 0], k_big, v_big, pos


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("groups", [1, 2, 4])
def test_equals_the_layer_code_and_writes_only_the_new_slots(groups, dtype):
    write_pos = [0, 7, 15, 3]
    qkv, q_norm, k_norm, cos, sin, k_big, v_big, pos = inputs(groups, dtype, write_pos, seed=groups)
    k_ref, v_ref = k_big.clone(), v_big.clone()
    expected = reference(qkv, q_norm, k_norm, cos, sin, k_ref[1:-1], v_ref[1:-1], pos, 2 * groups)
    k_got, v_got = k_big.clone(), v_big.clone()
    got = short_attention_block(qkv, q_norm.weight, k_norm.weight, cos, sin, k_got[1:-1], v_got[1:-1], pos, EPS)
    assert got.dtype == dtype and got.shape == expected.shape
    tol = TOL[dtype]
    torch.testing.assert_close(got.float(), expected.float(), atol=tol, rtol=tol)

    written = torch.zeros(k_big.shape[:3], dtype=torch.bool, device=DEVICE)  # [rows, kv, slots]
    written[torch.arange(len(write_pos), device=DEVICE) + 1, :, pos] = True
    assert torch.equal(k_got[~written], k_big[~written]) and torch.equal(v_got[~written], v_big[~written])
    torch.testing.assert_close(k_got[written].float(), k_ref[written].float(), atol=tol, rtol=tol)
    assert torch.equal(v_got[written], v_ref[written])  # the values are copied as they are


@pytest.fixture
def bf16_rounded_to_nearest(monkeypatch):
    """On CPU, Triton's interpreter made to round float32 -> bf16 to nearest (it truncates), as a GPU does."""
    if DEVICE == "cuda":
        return
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


@pytest.mark.parametrize("groups", [1, 2])
def test_bf16_rounds_as_the_layer_code(groups, bf16_rounded_to_nearest):
    """Norms, RoPE and the output rounded to bf16 where the layer code rounds them: the same bits (now and then
    one ulp off, from the order of float32 sums)."""
    write_pos = [0, 9, 15]
    qkv, q_norm, k_norm, cos, sin, k_big, v_big, pos = inputs(groups, torch.bfloat16, write_pos, seed=10 + groups)
    k_ref, v_ref = k_big.clone(), v_big.clone()
    expected = reference(qkv, q_norm, k_norm, cos, sin, k_ref[1:-1], v_ref[1:-1], pos, 2 * groups)
    got = short_attention_block(qkv, q_norm.weight, k_norm.weight, cos, sin, k_big[1:-1], v_big[1:-1], pos, EPS)
    for a, b in ((got, expected), (k_big, k_ref), (v_big, v_ref)):
        assert (a != b).float().mean() < 0.01
        torch.testing.assert_close(a, b, atol=1e-3, rtol=2**-7)  # one ulp


def test_slots_after_the_new_one_are_never_read():
    """NaN in every slot past each row's new slot (and in the new slot itself, overwritten) changes nothing."""
    write_pos = [0, 5, 14]
    qkv, q_norm, k_norm, cos, sin, k_big, v_big, pos = inputs(2, torch.float32, write_pos, seed=7)
    clean = short_attention_block(qkv, q_norm.weight, k_norm.weight, cos, sin, k_big.clone(), v_big.clone(), pos,
                                  EPS)
    for row, p in enumerate(write_pos):
        k_big[row, :, p:] = float("nan")
        v_big[row, :, p:] = float("nan")
    got = short_attention_block(qkv, q_norm.weight, k_norm.weight, cos, sin, k_big, v_big, pos, EPS)
    torch.testing.assert_close(got, clean, atol=0, rtol=0)


def predictor_stack(dtype, layers_=2, hidden=256, heads=4, kv_heads=2, head_dim=64) -> DecoderStack:
    torch.manual_seed(0)
    stack = DecoderStack(layers_, hidden, 2 * hidden, heads, kv_heads, head_dim, EPS, 1000000.0).eval()
    with torch.no_grad():
        for p in stack.parameters():
            p.normal_(0, 0.1)
        for m in stack.modules():
            if isinstance(m, RMSNorm):
                m.weight.add_(1.0)
        for p in stack.parameters():  # bf16 values: a float32 stack holds the weights of the bf16 one
            p.copy_(p.bfloat16())
    stack.to(DEVICE, dtype)
    fuse_projections(stack)  # after the move: the fused matrices are plain tensors, not parameters
    return stack


def decode_frame(stack: DecoderStack, xs: torch.Tensor, forward=None):
    """The predictor's steps over a fresh 16-slot cache: the first pass over two positions, then one position
    per call over the whole (masked) cache, as the frame step runs them. xs: [B, 16, H] -> the hidden states
    [B, 15, H] and the cache."""
    forward = stack if forward is None else forward
    b, n, _ = xs.shape
    cache = stack.new_cache(b, n, xs.dtype, xs.device)
    positions = torch.arange(n, device=xs.device).expand(b, n)
    out = [stack(xs[:, :2], positions[:, :2], cache)[:, -1]]  # two positions: the plain code
    for j in range(2, n):
        out.append(forward(xs[:, j : j + 1], positions[:, j : j + 1], cache)[:, -1])
    return torch.stack(out, dim=1), cache


def test_the_layers_call_the_kernel_for_one_position_steps(monkeypatch):
    """Wiring: ``Attention.forward`` through the kernel (forced for float32, on CPU too) gives the plain hidden
    states and cache, and is used for every one-position step of every layer (not for the two-position one)."""
    stack = predictor_stack(torch.float32)
    xs = torch.randn(2, 16, 256, generator=torch.Generator().manual_seed(1)).to(DEVICE)
    with torch.inference_mode():
        plain, plain_cache = decode_frame(stack, xs)
        calls = []

        def any_one_position_step(qkv, k_cache, norm_weight):
            calls.append(qkv.shape[1])
            return qkv.shape[1] == 1

        monkeypatch.setattr(layers, "short_attention_in_one_kernel", any_one_position_step)
        fused, fused_cache = decode_frame(stack, xs)
    assert calls.count(1) == 14 * 2 and calls.count(2) == 2  # steps x layers
    for got, expected in ((fused, plain), (fused_cache.k, plain_cache.k), (fused_cache.v, plain_cache.v)):
        torch.testing.assert_close(got, expected, atol=3e-5, rtol=3e-5)


def test_compiled_it_writes_the_cache_in_place(monkeypatch):
    """Under torch.compile (Inductor; on CPU here, the kernel in the interpreter) the op gets the stack's cache
    itself, a view of the graph's input: no copy of the cache is written and copied back every step. The
    results are those of the plain code."""
    from torch._inductor.utils import run_and_get_code

    stack = predictor_stack(torch.float32)
    xs = torch.randn(2, 16, 256, generator=torch.Generator().manual_seed(3)).to(DEVICE)
    with torch.inference_mode():
        plain, plain_cache = decode_frame(stack, xs)
    monkeypatch.setattr(layers, "short_attention_in_one_kernel", lambda qkv, k_cache, norm_weight: qkv.shape[1] == 1)
    torch._dynamo.reset()
    compiled = torch.compile(stack, fullgraph=True, dynamic=False)
    with torch.inference_mode():
        (fused, fused_cache), code = run_and_get_code(decode_frame, stack, xs, compiled)
    calls = re.findall(r"orator\.short_attention_block\.default\((.*)\)", "\n".join(code))
    assert len(calls) == 2  # one per layer
    for call in calls:  # qkv, the norm weights, cos, sin, then the caches
        k_cache, v_cache = call.split(", reinterpret_tensor(")[1:3]
        assert k_cache.startswith("arg") and v_cache.startswith("arg"), call
    for got, expected in ((fused, plain), (fused_cache.k, plain_cache.k), (fused_cache.v, plain_cache.v)):
        torch.testing.assert_close(got, expected, atol=3e-5, rtol=3e-5)


@pytest.mark.gpu
@pytest.mark.parametrize("compiled", [False, True])
def test_predictor_layers_on_gpu_as_close_to_float32_with_the_kernel_as_without(monkeypatch, compiled):
    """A code-predictor frame (0.6B shapes: hidden 1024, 16/8 heads of 128, 5 layers) in bf16 on CUDA, eager and
    under torch.compile: the hidden states and cache with the kernel are as close to a float32 run of the same
    weights as those without it (bf16 rounding differs in places, and spreads through the layers)."""
    from torch._inductor.utils import run_and_get_code

    assert layers.TRITON_ATTENTION
    shapes = {"layers_": 5, "hidden": 1024, "heads": 16, "kv_heads": 8, "head_dim": 128}
    stack = predictor_stack(torch.bfloat16, **shapes)
    xs = torch.randn(4, 16, 1024, generator=torch.Generator().manual_seed(2)).to(DEVICE, torch.bfloat16)
    with torch.inference_mode():
        truth = decode_frame(predictor_stack(torch.float32, **shapes), xs.float())

    def run():
        torch._dynamo.reset()
        forward = torch.compile(stack, fullgraph=True, dynamic=False) if compiled else stack
        with torch.inference_mode():
            return decode_frame(stack, xs, forward)

    calls = []
    if not compiled:
        block = layers.Attention.short_attention_block
        monkeypatch.setattr(layers.Attention, "short_attention_block", lambda *a: calls.append(1) or block(*a))
    kernel, code = run_and_get_code(run)
    if compiled:
        assert "orator.short_attention_block" in "\n".join(code)
    else:
        assert len(calls) == 14 * 5  # steps x layers
    monkeypatch.setattr(layers, "TRITON_ATTENTION", False)
    plain = run()

    def parts(result):  # hidden states, keys, values
        return result[0], result[1].k, result[1].v

    def error(got, expected):
        return ((got.float() - expected).norm() / expected.norm()).item()

    for k, p, t in zip(parts(kernel), parts(plain), parts(truth), strict=True):
        assert error(k, t) <= 1.25 * error(p, t) + 1e-4
