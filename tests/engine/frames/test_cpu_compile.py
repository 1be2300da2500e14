"""The exact CPU path's compiled predictor step (float32 weights): the same codes as the plain eager loop, compiled
once at warm-up, and the plain step kept for good when compiling fails. The fast path's compiled steps:
test_cpu_compiled.py."""

from __future__ import annotations

import numpy as np
import pytest

from engine import Engine, Sampling, Voice
from engine.frames import compile as compile_module
from engine.frames.compile import CompiledPredictorStep, cpp_compiler

TEXT = "Compiled or not, every code the same."


@pytest.mark.skipif(cpp_compiler() is None, reason="no C++ compiler for Inductor's CPU code")
def test_compiled_predictor_gives_the_plain_loops_codes(tiny_model_dir, engine_options):
    path = tiny_model_dir("custom_voice")
    engine_options(compile=False)
    plain = Engine.from_pretrained(path, device="cpu", cpu_int8=False)
    engine_options(compile=True, cpu_compile=True)
    fast = Engine.from_pretrained(path, device="cpu", cpu_int8=False)
    fast.warmup()
    step = fast._single_streamer().predictor_step
    assert isinstance(step, CompiledPredictorStep) and not step.failed
    assert plain._single_streamer().predictor_step is None
    voice = Voice.preset("vivian", "english")
    for sampling in (Sampling(greedy=True, min_frames=12), Sampling(seed=11, min_frames=12)):
        np.testing.assert_array_equal(fast.generate_codes(TEXT, voice, sampling, max_frames=12),
                                      plain.generate_codes(TEXT, voice, sampling, max_frames=12))
    assert not step.failed


def test_a_failed_compile_falls_back_to_the_plain_step_for_good(tiny_model_dir, engine_options, monkeypatch, caplog):
    engine_options(compile=False)
    plain = Engine.from_pretrained(tiny_model_dir("custom_voice"), device="cpu", cpu_int8=False)
    step = CompiledPredictorStep()
    calls = []

    def broken(*args):
        calls.append(1)
        raise RuntimeError("no compiler today")

    step.compiled = broken
    plain._single_streamer().predictor_step = step
    voice = Voice.preset("ryan", "english")
    sampling = Sampling(greedy=True, min_frames=6)
    got = plain.generate_codes(TEXT, voice, sampling, max_frames=6)
    assert step.failed and calls == [1] and "no compiler today" in caplog.text
    plain._single_streamer().predictor_step = None
    np.testing.assert_array_equal(got, plain.generate_codes(TEXT, voice, sampling, max_frames=6))


def test_no_compiler_means_no_compile(monkeypatch, engine_options):
    import torch

    engine_options(compile=True, cpu_compile=False)
    monkeypatch.setattr(compile_module, "cpp_compiler", lambda: "/usr/bin/c++")
    assert not compile_module.cpu_compile_enabled(torch.device("cpu"))  # opt-in: slower on a CPU by default
    engine_options(cpu_compile=True)
    monkeypatch.setattr(compile_module, "cpp_compiler", lambda: None)
    assert not compile_module.cpu_compile_enabled(torch.device("cpu"))
    monkeypatch.setattr(compile_module, "cpp_compiler", lambda: "/usr/bin/c++")
    assert compile_module.cpu_compile_enabled(torch.device("cpu"))
    monkeypatch.setattr(compile_module.sys, "frozen", True, raising=False)
    assert not compile_module.cpu_compile_enabled(torch.device("cpu"))
    monkeypatch.delattr(compile_module.sys, "frozen")
    engine_options(compile=False)
    assert not compile_module.cpu_compile_enabled(torch.device("cpu"))
