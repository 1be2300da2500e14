"""A prompt's pass through an int8 stack in Numba's loops around the integer products
(``engine.core.cpu.prompt_numba``): ``DecoderStack.forward``'s outputs and cache writes within float32 rounding, hostile
rows kept to themselves, and the prompts it takes."""

from __future__ import annotations

import pytest
import torch

from engine import Sampling, Voice
from engine.core.cpu import int8, prompt_numba

pytestmark = pytest.mark.skipif(prompt_numba.numba is None or not int8.int_products(),
                                reason="needs Numba and PyTorch's CPU int8 matrix product")


def relative(got: torch.Tensor, expected: torch.Tensor) -> float:
    return float((got.double() - expected.double()).norm() / expected.double().norm())


def both_ways(stack, x: torch.Tensor, start: int, monkeypatch):
    """``stack``'s outputs and caches for prompt x at positions start.., through the Numba pass and the PyTorch
    one, each over a cache of a few more slots than it fills."""
    n = x.shape[1]
    positions = torch.arange(start, start + n)[None]
    made = []
    for numba_pass in (True, False):
        if not numba_pass:
            monkeypatch.setattr(prompt_numba, "takes", lambda *a: False)
        cache = stack.new_cache(1, start + n + 5, torch.float32, "cpu")
        with torch.inference_mode():
            made.append((stack(x, positions, cache, kv_len=start + n), cache))
    return made


@pytest.mark.parametrize("which", ["talker", "predictor"])
def test_a_prompt_is_the_pytorch_pass_within_rounding(fast, monkeypatch, which):
    """Outputs and the keys and values written, at positions after a few already filled: within the 15-bit
    activations' rounding step (a norm one float32 step apart can round an activation to its neighbour), and
    nothing written outside the prompt's slots."""
    talker = fast.model.talker
    stack = talker.model if which == "talker" else talker.code_predictor.model
    x = torch.randn(1, 21, stack.norm.weight.shape[0], generator=torch.Generator().manual_seed(5)) * 0.5
    assert prompt_numba.takes(stack, x, torch.arange(3, 24)[None], stack.new_cache(1, 30, torch.float32, "cpu"), 24)
    calls = []
    real = prompt_numba.forward
    monkeypatch.setattr(prompt_numba, "forward", lambda *a: calls.append(1) or real(*a))
    (got, cache), (expected, expected_cache) = both_ways(stack, x, 3, monkeypatch)
    assert calls == [1]
    assert got.shape == expected.shape == x.shape and got.dtype == torch.float32
    assert relative(got, expected) < 5e-4
    assert relative(cache.k, expected_cache.k) < 5e-4 and relative(cache.v, expected_cache.v) < 5e-4
    assert cache.k[:, :, :, :3].abs().sum() == 0 and cache.k[:, :, :, 24:].abs().sum() == 0
    assert cache.k[:, :, :, 3:24].abs().sum() > 0


@pytest.mark.parametrize("bad", ["nan", "inf", "zeros", "huge"])
def test_a_hostile_last_row_gives_what_the_pytorch_pass_gives(fast, monkeypatch, bad):
    """A NaN or an infinity in the prompt's last row: NaN where the PyTorch pass gives NaN (its attention
    carries a NaN key into every row's masked scores) and nothing raised; a row of zeros or of huge values: every
    output finite and within rounding of the PyTorch pass."""
    stack = fast.model.talker.model
    x = torch.randn(1, 18, stack.norm.weight.shape[0], generator=torch.Generator().manual_seed(6))
    x[0, -1] = {"nan": torch.nan, "inf": torch.inf, "zeros": 0.0, "huge": 3e37}[bad]
    if bad == "nan":
        x[0, -1, 1:] = 1.0
    (got, _), (expected, _) = both_ways(stack, x, 0, monkeypatch)
    assert torch.equal(got.isnan(), expected.isnan())
    if bad in ("nan", "inf"):
        assert got[0, -1].isnan().all()
    else:
        assert torch.isfinite(got).all() and relative(got, expected) < 5e-4


def test_which_prompts_it_takes(fast, engine_options):
    """One stream's CPU float32 prompt of GEMM_ROWS rows or more at positions inside the cache; not a shorter one
    (the one-row kernels'), a batch, float64, positions outside the cache (the loops do not check indices: the
    PyTorch pass raises there) or with the Numba option off."""
    stack = stack_of(fast)
    width = stack.norm.weight.shape[0]
    cache = stack.new_cache(1, 40, torch.float32, "cpu")

    def takes(x, positions=None, kv_len=40, cache=cache):
        positions = torch.arange(x.shape[1])[None] if positions is None else positions
        return prompt_numba.takes(stack, x, positions, cache, kv_len)

    rows = int8.GEMM_ROWS
    assert takes(torch.zeros(1, rows, width))
    assert not takes(torch.zeros(1, rows - 1, width))
    assert not takes(torch.zeros(2, 20, width), cache=stack.new_cache(2, 40, torch.float32, "cpu"))
    assert not takes(torch.zeros(1, 20, width, dtype=torch.float64))
    assert not takes(torch.zeros(1, 20, width), torch.arange(30, 50)[None])  # past the cache's 40 slots
    assert not takes(torch.zeros(1, 20, width), torch.arange(-1, 19)[None])
    assert not takes(torch.zeros(1, 20, width), kv_len=41)
    with pytest.raises(IndexError):  # the PyTorch pass, which such a prompt takes, refuses it
        with torch.inference_mode():
            stack(torch.zeros(1, 20, width), torch.arange(30, 50)[None], cache, kv_len=40)
    engine_options(cpu_numba=False)
    assert not takes(torch.zeros(1, 20, width))


def test_a_frozen_app_keeps_pytorchs_pass(fast, monkeypatch):
    """Where nothing compiled is cached (a frozen app compiles at each start) prompts keep PyTorch's pass."""
    stack = stack_of(fast)
    x = torch.zeros(1, 20, stack.norm.weight.shape[0])
    cache = stack.new_cache(1, 40, torch.float32, "cpu")
    assert prompt_numba.takes(stack, x, torch.arange(20)[None], cache, 40)
    monkeypatch.setattr(prompt_numba, "cacheable", lambda: False)
    assert not prompt_numba.takes(stack, x, torch.arange(20)[None], cache, 40)


def stack_of(engine):
    return engine.model.talker.model


def test_a_synthesis_prefills_through_it(fast, monkeypatch):
    calls = []
    real = prompt_numba.forward
    monkeypatch.setattr(prompt_numba, "forward", lambda *a: calls.append(a[1].shape[1]) or real(*a))
    audio = fast.synthesize("A prompt long enough to take the matrix products.", Voice.preset("vivian", "english"),
                            Sampling(greedy=True, min_frames=3), max_frames=3)
    assert calls and min(calls) >= int8.GEMM_ROWS
    assert audio.codes.shape == (3, 16) and torch.isfinite(torch.from_numpy(audio.samples)).all()
