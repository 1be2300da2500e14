"""The Numba layer body over R rows (``engine.core.cpu.numba_layer.stack_step``, through ``NumbaBoundStep.rows``):
a prompt's rows give what R one-position steps give, and stay within the activations' rounding of the float32 stack
they stand for; the prompts of the Numba plan's single streams, and of a batch's lone joiner, go through it.

Rows against steps: each row is rounded with its own scale and its products' integer sums are exact in any order, but
the per-row norms, rotations and SiLU run inline for one row and in a parallel loop for several, two loops compiled
apart, and fast-math lets the compiler associate a row's float32 sums differently in each (a few ulps; some compiles
make them the same code). An activation that lands near the middle of two 15-bit steps can then round to the other,
moving each output it feeds by about 1/16383 of its row's peak: a few such steps through the layers are held to 2e-4
relative RMS (outputs and cache; up to 7e-5 seen with 21 rows). One row is the step's own code: equal, bit for bit.

Against ``DecoderStack.forward`` of the same weights dequantized to float32, the one difference is the activations'
rounding to 15-bit integers (at most half of 1/16383 of a row's largest value an element: ~7e-5 relative RMS for
Gaussian rows, whose peak is ~4 of their spreads), carried through a few layers and products: held to 1e-3 relative
RMS, where the int8 weights' own rounding (test_int8.py: ~0.4% a product) is not in play.
"""

from __future__ import annotations

import copy

import numpy as np
import pytest
import torch

import engine.core.cpu.numba_layer as kernels
import engine.core.cpu.one_position_numba as jit
from engine import Sampling, Voice
from engine.core.cpu.int8 import Int8Weight
from engine.core.cpu.one_position import one_position_stacks
from engine.core.frames.capacity import HISTORY, MAX_TRAILING
from engine.core.frames.eager import FrameGenerator
from engine.core.frames.state import StaticState
from engine.core.prompts import build_prompt

pytestmark = pytest.mark.skipif(jit.numba is None, reason="Numba is not installed")

PRODUCTS = ["16-bit", "vnni"]  # VNNI through the instruction where the processor has it, else its plain loops
ROWS_TOLERANCE = 2e-4  # rows against steps, relative RMS (the module's docstring says why)


def relative_rms(got: torch.Tensor, expected: torch.Tensor) -> float:
    return float((got.double() - expected.double()).norm() / expected.double().norm())


@pytest.fixture(scope="module")
def positions(fast):
    """``made(which, products)``: a ``NumbaPosition`` of the talker's or the predictor's stack taking those products
    (VNNI only where the stack's shapes take it: the tiny talker's do, the 48-wide predictor's do not)."""
    talker = fast.model.talker
    stacks = one_position_stacks(talker)
    built = {}

    def made(which: str, products: str) -> jit.NumbaPosition:
        if (which, products) not in built:
            stack = jit.NumbaPosition(stacks[which == "predictor"], vnni_sums=products == "vnni")
            if products == "vnni" and not stack.vnni_able:
                pytest.skip(f"the tiny {which}'s products are not in VNNI's shapes")
            built[which, products] = stack
        return built[which, products]

    return made


def stack_of(fast, which: str):
    talker = fast.model.talker
    return talker.model if which == "talker" else talker.code_predictor.model


def inputs(stack, rows: int, seed: int) -> torch.Tensor:
    return torch.randn(rows, stack.norm.weight.shape[0], generator=torch.Generator().manual_seed(seed))


def rows_and_steps(made: jit.NumbaPosition, stack, x: torch.Tensor, pos0: int):
    """x's rows at pos0.. through ``rows`` (every row's output) and through one-position steps, each over a cache
    whose first pos0 positions were stepped alike; the outputs and the two caches."""
    slots = pos0 + x.shape[0] + 3
    earlier = inputs(stack, pos0, 99)
    caches = [stack.new_cache(1, slots, torch.float32, "cpu") for _ in range(2)]
    bound = [made.over(cache) for cache in caches]
    with torch.inference_mode():
        for step in bound:
            for p in range(pos0):
                step(earlier[p : p + 1], p, final_norm=False)
        got = bound[0].rows(x, pos0, every=True)
        expected = torch.cat([bound[1](x[r : r + 1], pos0 + r) for r in range(x.shape[0])])
    return got, expected, caches


@pytest.mark.parametrize("products", PRODUCTS)
@pytest.mark.parametrize("which", ["talker", "predictor"])
@pytest.mark.parametrize(("rows", "pos0"), [(1, 0), (3, 0), (kernels.ROW_BLOCK + 5, 0), (6, 4),
                                            (kernels.ROW_BLOCK + 2, 7)])
def test_rows_are_the_steps_one_after_another(fast, positions, products, which, rows, pos0):
    """R rows at pos0.. (after pos0 positions stepped one at a time): every row's output and every key and value
    written are the one-position steps' (one row: bit for bit); nothing is written past the last row."""
    made, stack = positions(which, products), stack_of(fast, which)
    x = inputs(stack, rows, rows + pos0)
    got, expected, (cache, expected_cache) = rows_and_steps(made, stack, x, pos0)
    assert got.shape == expected.shape == x.shape and got.dtype == torch.float32
    if rows == 1:
        assert torch.equal(got, expected) and torch.equal(cache.k, expected_cache.k)
    assert relative_rms(got, expected) < ROWS_TOLERANCE
    assert relative_rms(cache.k, expected_cache.k) < ROWS_TOLERANCE
    assert relative_rms(cache.v, expected_cache.v) < ROWS_TOLERANCE
    assert cache.k[:, :, :, pos0 + rows :].abs().sum() == 0 and cache.k[:, :, :, pos0 + rows - 1].abs().sum() > 0


@pytest.mark.parametrize("products", PRODUCTS)
def test_a_long_prompt_goes_in_calls_of_prompt_rows_and_gives_the_same(fast, positions, products, monkeypatch):
    """Rows past ``PROMPT_ROWS`` go in several calls over one scratch: still the steps' outputs and cache; without
    ``every`` the last row's output alone, the same."""
    monkeypatch.setattr(jit, "PROMPT_ROWS", 8)
    made, stack = positions("talker", products), stack_of(fast, "talker")
    x = inputs(stack, 21, 5)
    got, expected, (cache, expected_cache) = rows_and_steps(made, stack, x, 2)
    assert relative_rms(got, expected) < ROWS_TOLERANCE
    assert relative_rms(cache.k, expected_cache.k) < ROWS_TOLERANCE
    assert relative_rms(cache.v, expected_cache.v) < ROWS_TOLERANCE
    again = made.over(stack.new_cache(1, x.shape[0] + 5, torch.float32, "cpu"))
    earlier = inputs(stack, 2, 99)
    with torch.inference_mode():
        for p in range(2):  # as rows_and_steps wrote them
            again(earlier[p : p + 1], p, final_norm=False)
        last = again.rows(x, 2)
    assert last.shape == (1, x.shape[1]) and torch.equal(last[0], got[-1])


@pytest.mark.parametrize("products", PRODUCTS)
def test_a_nan_row_stays_nan_as_the_steps_make_it(fast, positions, products):
    """A NaN in one row: that row's outputs NaN, and every later row's (its NaN key is in their attention), as the
    steps give them; the rows before it finite and the steps'."""
    made, stack = positions("talker", products), stack_of(fast, "talker")
    x = inputs(stack, 9, 3)
    x[5, 7] = torch.nan
    got, expected, (cache, expected_cache) = rows_and_steps(made, stack, x, 1)
    assert got[5:].isnan().all() and torch.isfinite(got[:5]).all()
    assert torch.equal(got.isnan(), expected.isnan()) and torch.equal(cache.k.isnan(), expected_cache.k.isnan())
    assert relative_rms(got[:5], expected[:5]) < ROWS_TOLERANCE


def dequantized(stack):
    """A float32 copy of an int8 stack: every ``Int8Weight`` replaced by the values it stands for."""
    copied = copy.deepcopy(stack)
    for layer in copied.layers:
        for module, name in ((layer.self_attn, "qkv_weight"), (layer.self_attn, "out_weight"),
                             (layer.mlp, "gate_up_weight"), (layer.mlp, "down_weight")):
            weight = getattr(module, name)
            assert isinstance(weight, Int8Weight)
            setattr(module, name, weight.dequantized())
    return copied


@pytest.mark.parametrize("products", PRODUCTS)
@pytest.mark.parametrize("which", ["talker", "predictor"])
def test_rows_are_the_float_stack_within_the_activations_rounding(fast, positions, products, which):
    made, stack = positions(which, products), stack_of(fast, which)
    reference = dequantized(stack)
    x = inputs(stack, 23, 8) * 0.5
    pos0, n = 3, x.shape[0]
    cache, expected_cache = (stack.new_cache(1, pos0 + n + 2, torch.float32, "cpu") for _ in range(2))
    earlier = inputs(stack, pos0, 4)
    with torch.inference_mode():
        bound = made.over(cache)
        got_earlier = bound.rows(earlier, 0, every=True)
        got = bound.rows(x, pos0, every=True)
        expected_earlier = reference(earlier[None], torch.arange(pos0)[None], expected_cache, kv_len=pos0)[0]
        expected = reference(x[None], torch.arange(pos0, pos0 + n)[None], expected_cache, kv_len=pos0 + n)[0]
    assert relative_rms(got_earlier, expected_earlier) < 1e-3
    assert relative_rms(got, expected) < 1e-3
    assert relative_rms(cache.k, expected_cache.k) < 1e-3 and relative_rms(cache.v, expected_cache.v) < 1e-3


def test_rows_outside_the_cache_are_refused(fast, positions):
    stack = stack_of(fast, "talker")
    step = positions("talker", "16-bit").over(stack.new_cache(1, 6, torch.float32, "cpu"))
    for rows, pos0 in ((7, 0), (3, 4), (2, -1), (0, 0)):
        with pytest.raises(IndexError):
            step.rows(inputs(stack, rows, 1), pos0)
    assert step.rows(inputs(stack, 6, 1)[None], 0).shape == (1, stack.norm.weight.shape[0])  # [1, R, H] taken too


def counted_rows(monkeypatch) -> list[int]:
    """The rows of every ``NumbaBoundStep.rows`` call from now on."""
    calls = []
    real = jit.NumbaBoundStep.rows
    monkeypatch.setattr(jit.NumbaBoundStep, "rows", lambda self, x, *a, **k: calls.append(x.shape[-2]) or
                        real(self, x, *a, **k))
    return calls


def test_a_synthesis_prefills_through_the_rows(fast, monkeypatch):
    calls = counted_rows(monkeypatch)
    audio = fast.synthesize("A prompt of many rows.", Voice.preset("vivian", "english"),
                            Sampling(greedy=True, min_frames=3), max_frames=3)
    assert calls and min(calls) > 1
    assert audio.codes.shape == (3, 16) and np.isfinite(audio.samples).all()


def test_a_lone_prompt_of_a_batch_goes_through_the_same_rows(fast, monkeypatch):
    """A batch's one joiner on the Numba plan (``StaticState.prefill_many``) is prefilled as a single stream's
    prompt is (``FrameGenerator.prefill``): the same hidden state and cache, bit for bit; two joiners at once keep
    PyTorch's padded pass."""
    talker = fast.model.talker
    prompt = build_prompt(talker, fast.config, fast.tokenizer, Voice.preset("vivian", "english"), "Hello there.")
    calls = counted_rows(monkeypatch)
    state = StaticState(talker, 2, 64, MAX_TRAILING, HISTORY)
    gen = FrameGenerator(talker, prompt, Sampling(seed=1), 4)
    with torch.inference_mode():
        state.prefill_many(talker, [(1, prompt, Sampling(seed=1), 1)])
        hidden = gen.prefill()
    n = prompt.length
    assert calls == [n, n]
    assert torch.equal(state.hidden[1], hidden[0])
    assert torch.equal(state.cache.k[:, 1, :, :n], gen.cache.k[:, 0, :, :n])
    assert torch.equal(state.cache.v[:, 1, :, :n], gen.cache.v[:, 0, :, :n])
    with torch.inference_mode():
        state.prefill_many(talker, [(0, prompt, Sampling(seed=1), 1), (1, prompt, Sampling(seed=1), 1)])
    assert calls == [n, n]


def test_prompt_step_binds_one_float32_stream_on_the_numba_plan(fast, engine_options):
    talker = fast.model.talker
    stack = talker.model
    assert isinstance(jit.prompt_step(talker, stack.new_cache(1, 8, torch.float32, "cpu")), jit.NumbaBoundStep)
    assert jit.prompt_step(talker, stack.new_cache(2, 8, torch.float32, "cpu")) is None
    assert jit.prompt_step(talker, stack.new_cache(1, 8, torch.float64, "cpu")) is None
    engine_options(cpu_numba=False)
    assert jit.prompt_step(talker, stack.new_cache(1, 8, torch.float32, "cpu")) is None
