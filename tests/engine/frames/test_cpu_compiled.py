"""The fast CPU path's compiled one-position steps (engine.frames.cpu_compiled) against its eager ones.

Tolerances: the compiled graph computes the eager step's operations on the same values, fused, so its float32 sums
round in another order. An ulp of difference can round a bfloat16 activation to its neighbour (0.4% apart) before
the next int8 product, so outputs are held to 1% relative RMS, as the eager steps are to ``DecoderStack.forward``.
On the tiny model the codes of whole frames are equal, greedy and seeded.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from engine import Engine, Sampling, Voice
from engine.frames import cpu_compiled
from engine.frames.compile import cpp_compiler
from engine.frames.cpu_compiled import CompiledPositions
from engine.frames.eager import FrameGenerator
from engine.model.one_position import one_position_stacks
from engine.prompts import build_prompt

pytestmark = pytest.mark.skipif(cpp_compiler() is None, reason="no C++ compiler for Inductor's CPU code")
TEXT = "Compiled or not, every frame the same."


def relative_rms(got: torch.Tensor, expected: torch.Tensor) -> float:
    return float((got.double() - expected.double()).norm() / expected.double().norm())


@pytest.fixture(autouse=True)
def pytorch_steps(engine_options):
    """The eager steps these compiled ones are held to are the PyTorch ones (``engine.model.one_position``)."""
    engine_options(cpu_numba=False)


def test_the_compiled_talker_step_is_the_eager_one(fast):
    talker = fast.model.talker
    stacks = one_position_stacks(talker)
    made = CompiledPositions.for_talker(talker, stacks)
    assert CompiledPositions.for_talker(talker, stacks) is made  # made once per talker
    width = talker.model.norm.weight.shape[0]
    x = torch.randn(12, width, generator=torch.Generator().manual_seed(2))
    cache, expected_cache = (talker.model.new_cache(1, 40, torch.float32, "cpu") for _ in range(2))
    compiled, eager = made.talker_over(cache), stacks[0].over(expected_cache)
    with torch.inference_mode():
        for pos in range(12):  # lengths 1..12: one graph, its cache length symbolic
            got, expected = compiled(x[pos : pos + 1], pos), eager(x[pos : pos + 1], pos)
            assert got.shape == expected.shape == (1, width)
            assert relative_rms(got, expected) < 0.01, pos
    assert relative_rms(cache.k, expected_cache.k) < 0.01 and relative_rms(cache.v, expected_cache.v) < 0.01
    assert cache.k[:, :, :, 12:].abs().sum() == 0  # nothing written past the current position
    assert not made.failed


@pytest.mark.parametrize("sampling", [Sampling(greedy=True, min_frames=20), Sampling(seed=5, min_frames=20)],
                         ids=["greedy", "seeded"])
def test_compiled_frames_are_the_eager_frames(fast, sampling):
    talker = fast.model.talker
    made = CompiledPositions.for_talker(talker, one_position_stacks(talker))
    prompt = build_prompt(talker, fast.config, fast.tokenizer, Voice.preset("vivian", "english"), TEXT)
    eager = torch.stack(list(FrameGenerator(talker, prompt, sampling, 20, 5).frames()))
    compiled = torch.stack(list(FrameGenerator(talker, prompt, sampling, 20, 5, compiled=made).frames()))
    assert eager.shape == (20, 16)
    assert torch.equal(compiled, eager)
    assert not made.failed


def test_the_engine_compiles_the_fast_path_when_asked(tiny_model_dir, engine_options):
    engine_options(compile=True, cpu_compile=True)
    fast = Engine.from_pretrained(tiny_model_dir("custom_voice"), device="cpu", cpu_int8=True)
    fast.warmup()
    streamer = fast._single_streamer()
    assert isinstance(streamer.compiled, CompiledPositions) and streamer.predictor_step is None
    engine_options(cpu_compile=False)
    plain = Engine.from_pretrained(tiny_model_dir("custom_voice"), device="cpu", cpu_int8=True)
    assert plain._single_streamer().compiled is None
    voice, sampling = Voice.preset("ryan", "english"), Sampling(seed=9, min_frames=10)
    np.testing.assert_array_equal(fast.generate_codes(TEXT, voice, sampling, max_frames=10),
                                  plain.generate_codes(TEXT, voice, sampling, max_frames=10))
    assert not streamer.compiled.failed


def test_a_failed_compile_runs_the_eager_steps_for_good(fast, monkeypatch, caplog):
    talker = fast.model.talker
    cp = talker.code_predictor
    made = CompiledPositions(*one_position_stacks(talker), cp.head_weights, cp.config.num_code_groups)
    calls = []

    def broken(name):
        def fn(*args):
            calls.append(name)
            raise RuntimeError("no compiler today")
        return fn

    monkeypatch.setattr(cpu_compiled, "_compiled_fn", broken)
    prompt = build_prompt(talker, fast.config, fast.tokenizer, Voice.preset("ryan", "english"), TEXT)
    sampling = Sampling(seed=4, min_frames=8)
    got = torch.stack(list(FrameGenerator(talker, prompt, sampling, 8, 4, compiled=made).frames()))
    assert made.failed and calls == ["predictor"] and "no compiler today" in caplog.text
    assert torch.equal(got, torch.stack(list(FrameGenerator(talker, prompt, sampling, 8, 4).frames())))
