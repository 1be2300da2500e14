"""Decoder layers running a one-position step's attention as one Triton block (``layers.attention_block``): the
code predictor's short cache through engine/core/gpu_kernels/short_attention.py, the talker's long one through
attention.py. Eager and compiled (the cache written in place) against the plain PyTorch code, on CPU in
Triton's interpreter; on a GPU in bf16 against a float32 run."""

from __future__ import annotations

import re

import pytest
import torch

pytest.importorskip("triton", reason="Triton is not installed (the test extra brings it)")

from engine.core.gpu_kernels import triton_available  # noqa: E402
from engine.core.gpu_kernels.attention import BLOCK_S, SPLITS, filled_slots_attention_block  # noqa: E402
from engine.core.gpu_kernels.short_attention import short_attention_block  # noqa: E402
from engine.core.model import layers  # noqa: E402
from tests.engine.kernels.attention_steps import DEVICE, decode, decoder_stack  # noqa: E402

# where the talker's shares grow from one slot block to two: decode steps across it
ONE_BLOCK_SHARES = SPLITS * BLOCK_S
# cache slots, positions decoded, positions of the first (plain) pass, and the block each step runs
CACHES = {
    "predictor": (16, 16, 2, short_attention_block),  # a frame's steps over the 16-slot cache
    "talker": (ONE_BLOCK_SHARES + 16, ONE_BLOCK_SHARES + 8, ONE_BLOCK_SHARES - 4, filled_slots_attention_block),
}
NAMES = {short_attention_block: "orator.short_attention_block",
         filled_slots_attention_block: "orator.filled_slots_attention_block"}  # as Inductor's code calls them


def _one_position_steps(block):
    """``layers.attention_block`` forced on for one-position steps (float32 and CPU included)."""
    return lambda qkv, k_cache, norm_weight: block if qkv.shape[1] == 1 else None


@pytest.mark.parametrize("cache", list(CACHES))
def test_the_layers_call_the_block_for_one_position_steps(monkeypatch, cache):
    """Wiring: ``Attention.forward`` through the block gives the plain hidden states and cache, and uses it for
    every one-position step of every layer (not for the first pass)."""
    slots, n, first, block = CACHES[cache]
    stack = decoder_stack(torch.float32)
    xs = torch.randn(2, n, 256, generator=torch.Generator().manual_seed(1)).to(DEVICE)
    with torch.inference_mode():
        plain, plain_cache = decode(stack, xs, first, slots)
        calls, choose = [], _one_position_steps(block)
        monkeypatch.setattr(layers, "attention_block", lambda qkv, *a: calls.append(qkv.shape[1]) or choose(qkv, *a))
        fused, fused_cache = decode(stack, xs, first, slots)
    assert calls.count(1) == (n - first) * 2 and calls.count(first) == 2  # steps x layers
    for got, expected in ((fused, plain), (fused_cache.k, plain_cache.k), (fused_cache.v, plain_cache.v)):
        torch.testing.assert_close(got, expected, atol=3e-5, rtol=3e-5)


@pytest.mark.parametrize("cache", list(CACHES))
def test_compiled_it_writes_the_cache_in_place(monkeypatch, cache):
    """Under torch.compile (Inductor; on CPU here, the kernels in the interpreter) the op gets the stack's cache
    itself, a view of the graph's input: no copy of the cache is written and copied back every step. The
    results are those of the plain code."""
    from torch._inductor.utils import run_and_get_code

    slots, n, first, block = CACHES[cache]
    stack = decoder_stack(torch.float32)
    xs = torch.randn(2, n, 256, generator=torch.Generator().manual_seed(3)).to(DEVICE)
    with torch.inference_mode():
        plain, plain_cache = decode(stack, xs, first, slots)
    monkeypatch.setattr(layers, "attention_block", _one_position_steps(block))
    torch._dynamo.reset()
    compiled = torch.compile(stack, fullgraph=True, dynamic=False)
    with torch.inference_mode():
        (fused, fused_cache), code = run_and_get_code(decode, stack, xs, first, slots, compiled)
    calls = re.findall(re.escape(NAMES[block]) + r"\.default\((.*)\)", "\n".join(code))
    assert len(calls) == 2  # one per layer
    for call in calls:  # qkv, the norm weights, cos, sin, then the caches
        k_cache, v_cache = call.split(", reinterpret_tensor(")[1:3]
        assert k_cache.startswith("arg") and v_cache.startswith("arg"), call
    for got, expected in ((fused, plain), (fused_cache.k, plain_cache.k), (fused_cache.v, plain_cache.v)):
        torch.testing.assert_close(got, expected, atol=3e-5, rtol=3e-5)


@pytest.mark.parametrize("cache", list(CACHES))
def test_compiled_with_a_symbolic_batch_over_the_first_rows_of_a_bigger_cache(monkeypatch, cache):
    """As the batched engine compiles and calls it (engine/core/frames/compile.py: dynamic=None, so the first batch
    size compiles static and the next one with a symbolic batch; the caches are the first rows of the whole
    batch's, ``state.CacheRows``): batches of 1, 2 and 3 rows give the plain code's hidden states and caches, no
    row past the batch is written, and the three take two compiles."""
    from torch._dynamo.utils import counters
    from torch._inductor.utils import run_and_get_code

    from engine.core.frames.state import CacheRows

    slots, n, first, block = CACHES[cache]
    n = min(n, first + 3)  # the batch sizes and the cache rows are the point here, not the slot blocks crossed
    stack = decoder_stack(torch.float32)
    xs = torch.randn(4, n, 256, generator=torch.Generator().manual_seed(4)).to(DEVICE)

    def run(forward, rows):  # the first pass plain, then one position per call through ``forward``
        whole = stack.new_cache(4, slots, xs.dtype, xs.device)
        cache, positions = CacheRows(whole, 0, rows), torch.arange(n, device=xs.device).expand(rows, n)
        out = [stack(xs[:rows, :first], positions[:, :first], cache)[:, -1]]
        out.extend(forward(xs[:rows, j : j + 1], positions[:, j : j + 1], cache)[:, -1] for j in range(first, n))
        return torch.stack(out, dim=1), whole

    with torch.inference_mode():
        plain = [run(stack, rows) for rows in (1, 2, 3)]
        monkeypatch.setattr(layers, "attention_block", _one_position_steps(block))
        torch._dynamo.reset()
        counters.clear()
        compiled = torch.compile(stack, fullgraph=True, dynamic=None)
        fused, code = run_and_get_code(lambda: [run(compiled, rows) for rows in (1, 2, 3)])
    assert counters["stats"]["unique_graphs"] == 2 and all(NAMES[block] in c for c in code)
    for rows, (hidden, whole), (plain_hidden, plain_whole) in zip((1, 2, 3), fused, plain, strict=True):
        torch.testing.assert_close(hidden, plain_hidden, atol=3e-5, rtol=3e-5)
        for got, expected in ((whole.k, plain_whole.k), (whole.v, plain_whole.v)):
            torch.testing.assert_close(got, expected, atol=3e-5, rtol=3e-5)
            assert not got[:, rows:].any()  # rows past the batch keep their zeros


# 0.6B shapes (hidden 1024, 16/8 heads of 128): a code-predictor frame (5 layers, 16 slots), and talker steps
# over the engine's 2,048-slot cache across the shares' growth from one slot block to two
GPU_CASES = {"predictor": (5, 16, 16, 2, short_attention_block),
             "talker": (4, 2048, ONE_BLOCK_SHARES + 8, ONE_BLOCK_SHARES - 8, filled_slots_attention_block)}


@pytest.mark.gpu
@pytest.mark.parametrize("compiled", [False, True])
@pytest.mark.parametrize("cache", list(GPU_CASES))
def test_layers_on_gpu_as_close_to_float32_with_the_block_as_without(monkeypatch, cache, compiled, engine_options):
    """bf16 on CUDA, eager and under torch.compile: the hidden states and cache with the block are as close to a
    float32 run of the same weights as those without it (bf16 rounding differs in places, and spreads through
    the layers); the real ``attention_block`` picks the block for each one-position step."""
    from torch._inductor.utils import run_and_get_code

    assert triton_available()
    n_layers, slots, n, first, block = GPU_CASES[cache]
    shapes = {"layers_": n_layers, "hidden": 1024, "heads": 16, "kv_heads": 8, "head_dim": 128}
    stack = decoder_stack(torch.bfloat16, **shapes)
    xs = torch.randn(4, n, 1024, generator=torch.Generator().manual_seed(2)).to(DEVICE, torch.bfloat16)
    with torch.inference_mode():
        truth = decode(decoder_stack(torch.float32, **shapes), xs.float(), first, slots)

    def run():
        torch._dynamo.reset()
        forward = torch.compile(stack, fullgraph=True, dynamic=False) if compiled else stack
        with torch.inference_mode():
            return decode(stack, xs, first, slots, forward)

    chosen = []
    if not compiled:
        choose = layers.attention_block
        monkeypatch.setattr(layers, "attention_block", lambda *a: chosen.append(choose(*a)) or chosen[-1])
    kernel, code = run_and_get_code(run)
    if compiled:
        assert NAMES[block] in "\n".join(code)
    else:
        assert chosen.count(block) == (n - first) * n_layers and chosen.count(None) == n_layers
    engine_options(triton=False)
    plain = run()

    def parts(result):  # hidden states, keys, values
        return result[0], result[1].k, result[1].v

    def error(got, expected):
        return ((got.float() - expected).norm() / expected.norm()).item()

    for k, p, t in zip(parts(kernel), parts(plain), parts(truth), strict=True):
        assert error(k, t) <= 1.25 * error(p, t) + 1e-4
