"""The fast CPU path's Numba steps (engine.core.cpu.one_position_numba) against the PyTorch ones
(engine.core.cpu.one_position), which tests/engine/model/test_one_position.py holds to ``DecoderStack.forward``.

Tolerances: both multiply the same int8 values and row scales, but PyTorch's kernel rounds each product's
activations to bfloat16 (up to 0.4% an element) where the Numba kernel keeps them float32, and the Numba loops sum
in another order. Each projection's output differs by well under 1%, and so do the layers' outputs and caches: a
step's output and the caches are held to 2% relative RMS over 14 positions, twice the bound the PyTorch steps are
held to against ``DecoderStack.forward``.
"""

from __future__ import annotations

import logging
import threading

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import engine.core.cpu.numba_layer as kernels
import engine.core.cpu.one_position_numba as jit
from engine import Engine, Sampling, Voice
from engine.core.cpu.one_position import one_position_stacks
from engine.core.frames.eager import FrameGenerator
from engine.core.prompts import build_prompt

pytestmark = pytest.mark.skipif(jit.numba is None, reason="Numba is not installed")


def relative_rms(got: torch.Tensor, expected: torch.Tensor) -> float:
    return float((got.double() - expected.double()).norm() / expected.double().norm())


@pytest.fixture(scope="module")
def steps(fast):
    talker = fast.model.talker
    made = jit.numba_stacks(talker, one_position_stacks(talker))
    assert made is not None
    return made


@pytest.mark.parametrize("which", ["talker", "predictor"])
def test_a_step_is_the_pytorch_step_at_every_position(fast, steps, which):
    talker = fast.model.talker
    index = 0 if which == "talker" else 1
    stack = (talker.model, talker.code_predictor.model)[index]
    reference = one_position_stacks(talker)[index]
    width, positions = stack.norm.weight.shape[0], 14
    x = torch.randn(positions, width, generator=torch.Generator().manual_seed(3))
    cache, expected_cache = (stack.new_cache(1, 16, torch.float32, "cpu") for _ in range(2))
    step, expected_step = steps[index].over(cache), reference.over(expected_cache)
    with torch.inference_mode():
        for pos in range(positions):
            got, expected = step(x[pos : pos + 1], pos), expected_step(x[pos : pos + 1], pos)
            assert got.shape == expected.shape == (1, width) and got.dtype == torch.float32
            assert relative_rms(got, expected) < 0.02, pos
        assert relative_rms(cache.k, expected_cache.k) < 0.02 and relative_rms(cache.v, expected_cache.v) < 0.02
        assert cache.k[:, :, :, positions:].abs().sum() == 0  # nothing written past the last position
        assert step(x[:1], positions, final_norm=False) is None  # written into the cache only
        assert cache.k[:, :, :, positions].abs().sum() > 0


def test_a_head_is_the_pytorch_product(fast, steps):
    head, weight = steps[2][4], fast.model.talker.code_predictor.head(4)
    x = torch.randn(1, weight.shape[1], generator=torch.Generator().manual_seed(4))
    got, expected = head.row(x), weight.row(x).float()
    assert got.shape == expected.shape and got.dtype == torch.float32
    assert relative_rms(got, expected) < 0.01
    exact = x.double() @ weight.dequantized().double().T  # float32 activations: nearer the float product
    assert relative_rms(got, exact) < relative_rms(expected, exact)


def product_bound(q: np.ndarray, scale: np.ndarray, x: np.ndarray) -> np.ndarray:
    """How far the kernel's product may be from the exact one: each activation rounds by at most half its scale
    step (1/ACTIVATION_MAX of the largest), and the float32 sums of the runs and the final scaling add a few
    parts in a million of the absolute sum."""
    step = np.abs(x).max() / kernels.ACTIVATION_MAX
    absolute = np.abs(q.astype(np.float64)) @ np.abs(x.astype(np.float64))
    return scale * (0.5 * step * np.abs(q.astype(np.float64)).sum(1) + 1e-5 * absolute) + 1e-37


activations = st.integers(1, 2 * kernels.SEGMENT + 50).flatmap(lambda k: hnp.arrays(
    np.float32, k, elements=st.floats(-(2.0**100), 2.0**100, width=32) | st.sampled_from([0.0, 1e-38, -3e-20, 5e4])))


@settings(max_examples=150, deadline=None)
@given(x=activations, rows=st.integers(1, 2 * kernels.ROW_BLOCK + 3), seed=st.integers(0, 2**16))
def test_a_product_is_within_its_rounding_of_the_exact_product(x, rows, seed):
    rng = np.random.default_rng(seed)
    q = rng.integers(-127, 128, (rows, x.shape[0]), dtype=np.int8)
    scale = rng.uniform(1e-4, 1e-1, rows).astype(np.float32)
    y = np.empty(rows, np.float32)
    kernels.product(q, scale, x, np.empty(x.shape[0], np.int16), y)
    exact = scale * (q.astype(np.float64) @ x.astype(np.float64))
    if np.abs(x).max() < kernels.TINY:
        assert np.all(y == 0)  # values that small count as zeros
        return
    assert np.all(np.isfinite(y))
    assert np.all(np.abs(y - exact) <= product_bound(q, scale, x))


def test_the_largest_sums_do_not_overflow():
    """Every weight and activation at its extreme: the int32 sums are at their largest, and stay exact."""
    k = 3 * kernels.SEGMENT + 5
    q = np.full((3, k), 127, np.int8)
    q[1] = -127
    x = np.full(k, 7.5, np.float32)
    y = np.empty(3, np.float32)
    kernels.product(q, np.ones(3, np.float32), x, np.empty(k, np.int16), y)
    np.testing.assert_allclose(y, [127 * 7.5 * k, -127 * 7.5 * k, 127 * 7.5 * k], rtol=1e-6)


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_a_nan_or_infinity_in_the_activations_makes_the_outputs_nan(bad):
    x = np.linspace(-1, 1, 300).astype(np.float32)
    x[123] = bad
    y = np.zeros(4, np.float32)
    kernels.product(np.ones((4, 300), np.int8), np.ones(4, np.float32), x, np.empty(300, np.int16), y)
    assert np.all(np.isnan(y))  # as a float product's would be: never a finite value made from garbage


def test_positions_outside_the_cache_are_refused(fast, steps):
    stack = fast.model.talker.model
    step = steps[0].over(stack.new_cache(1, 4, torch.float32, "cpu"))
    x = torch.zeros(1, stack.norm.weight.shape[0])
    for pos in (4, 5, -1, 10**9):
        with pytest.raises(IndexError):
            step(x, pos)
    with pytest.raises(ValueError):
        steps[0].over(stack.new_cache(1, 4, torch.float64, "cpu"))


def test_frames_run_through_the_numba_steps_by_default(fast, steps, engine_options):
    talker = fast.model.talker
    prompt = build_prompt(talker, fast.config, fast.tokenizer, Voice.preset("vivian", "english"), "Hello there.")
    gen = FrameGenerator(talker, prompt, Sampling(seed=2, min_frames=6), 6)
    assert isinstance(gen.talker_step, jit.NumbaBoundStep) and gen.heads is steps[2]
    frames = torch.stack(list(gen.frames()))
    assert frames.shape == (6, 16) and frames.dtype == torch.int64
    assert bool(((frames >= 0) & (frames < fast.config.talker_config.vocab_size)).all())
    again = torch.stack(list(FrameGenerator(talker, prompt, Sampling(seed=2, min_frames=6), 6).frames()))
    assert torch.equal(frames, again)  # seeded: the same frames every time
    engine_options(cpu_numba=False)
    plain = FrameGenerator(talker, prompt, Sampling(seed=2, min_frames=6), 6)
    assert plain.heads is None and not isinstance(plain.talker_step, jit.NumbaBoundStep)


def test_a_failed_compile_falls_back_to_the_pytorch_steps(tiny_model_dir, monkeypatch, caplog):
    other = Engine.from_pretrained(tiny_model_dir("custom_voice"), device="cpu", cpu_int8=True)
    talker = other.model.talker

    def broken(*args):
        raise RuntimeError("no LLVM here")

    monkeypatch.setattr(kernels, "stack_step", broken)  # what a bound step calls
    monkeypatch.setattr(jit, "_failed", [])
    talker._numba_stacks = None  # the engine built its steps at load: build them again, now failing
    with caplog.at_level(logging.WARNING, logger=jit.__name__):
        assert jit.numba_stacks(talker, one_position_stacks(talker)) is None
    assert "no LLVM here" in caplog.text
    prompt = build_prompt(talker, other.config, other.tokenizer, Voice.preset("vivian", "english"), "Hi.")
    gen = FrameGenerator(talker, prompt, Sampling(seed=1, min_frames=2), 2)
    assert gen.heads is None and len(list(gen.frames())) == 2


def test_streams_on_two_threads_step_as_they_would_alone(fast, steps):
    stack = fast.model.talker.model
    width = stack.norm.weight.shape[0]
    inputs = [torch.randn(12, width, generator=torch.Generator().manual_seed(s)) for s in (5, 6)]

    def run(x, out):
        step = steps[0].over(stack.new_cache(1, 12, torch.float32, "cpu"))
        with torch.inference_mode():
            out.extend(step(x[p : p + 1], p) for p in range(12))

    alone = [[], []]
    for x, out in zip(inputs, alone, strict=True):
        run(x, out)
    together = [[], []]
    threads = [threading.Thread(target=run, args=(x, out)) for x, out in zip(inputs, together, strict=True)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for a, b in zip(alone, together, strict=True):
        np.testing.assert_array_equal(torch.cat(a).numpy(), torch.cat(b).numpy())


def test_the_engine_says_whether_its_frames_step_through_numba(fast, engine_options, tiny_model_dir):
    from qtapp.worker import describe_engine

    assert fast.cpu_numba_steps is True
    assert "(int8 weights, compiled steps, " in describe_engine(fast)
    engine_options(cpu_numba=False)
    plain = Engine.from_pretrained(tiny_model_dir("custom_voice"), device="cpu", cpu_int8=True)
    assert plain.cpu_numba_steps is False
    assert "(int8 weights, " in describe_engine(plain) and "compiled" not in describe_engine(plain)
    exact = Engine.from_pretrained(tiny_model_dir("custom_voice"), device="cpu", cpu_int8=False)
    assert exact.cpu_numba_steps is False


# A fresh interpreter: the module's warning routing applies to the process, as in the command line or the studio.
WARNINGS_PROBE = """
import logging, sys, warnings
import numba
import engine.core.cpu.one_position_numba
logging.basicConfig(level=logging.DEBUG, stream=sys.stdout, format="%(levelname)s %(name)s %(message)s")
warnings.warn("a pedantic internal check", numba.NumbaIRAssumptionWarning)
warnings.warn("something a user should read", UserWarning)
"""


def test_numbas_compiler_warnings_go_to_the_debug_log_and_others_still_show():
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-W", "default", "-c", WARNINGS_PROBE], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    assert "a pedantic internal check" not in done.stderr  # nothing on the user's terminal
    assert f"DEBUG {kernels.__name__}" in done.stdout and "a pedantic internal check" in done.stdout
    assert "UserWarning: something a user should read" in done.stderr
