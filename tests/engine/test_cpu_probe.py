"""engine.cpu_probe: the processor's speed on a model size's real shapes, before any model is downloaded."""

from __future__ import annotations

import time

import pytest
import torch

from engine import Engine, Sampling, Voice
from engine.cpu_probe import FRAME_S, CpuSpeed, measure_cpu_speed
from engine.frames.eager import FrameGenerator
from engine.frames.threads import ThreadGovernor
from engine.prompts import build_prompt
from engine.runtime import cpu_threads


def test_the_realtime_factor_is_audio_over_the_time_to_make_and_decode_it():
    speed = CpuSpeed("0.6b", frame_ms=60.0, decode_ms=20.0, threads=4)
    assert speed.realtime_factor == pytest.approx(FRAME_S * 1000 / 80.0) == pytest.approx(1.0)
    assert CpuSpeed("1.7b", 150.0, 10.0, 4).realtime_factor == pytest.approx(0.5)


def test_a_measurement_runs_a_fixed_number_of_frames_on_a_plan_that_compiles_nothing(step_calls):
    """Where the Numba loops are not compiled (the tests compile theirs in-process: no marker), the probe measures
    PyTorch's int8 steps, as a model loaded now would speak first, and never waits for a compiler: a first frame
    and ``frames`` timed ones at each thread count the engine chooses between, through PyTorch's steps only."""
    threads = torch.get_num_threads()
    try:
        speed = measure_cpu_speed("0.6b", frames=2)
    finally:
        torch.set_num_threads(threads)
    counts = ThreadGovernor.for_this_machine().choices if ThreadGovernor.for_this_machine() else (cpu_threads(),)
    assert speed.size == "0.6b" and speed.threads in counts
    assert speed.frame_ms > 0 and speed.decode_ms > 0 and 0 < speed.realtime_factor < 100
    assert speed.plan.startswith("fast: torch-int8")
    assert step_calls["numba"] == 0
    # each frame: a talker step and 15 code-predictor passes (a prompt's first through its prefill): no more frames
    frames = 3 * len(counts)
    assert frames * 15 <= step_calls["pytorch"] <= frames * 17


@pytest.mark.parametrize("frames", [0, -1])
def test_a_measurement_of_no_frames_is_refused(frames):
    with pytest.raises(ValueError, match="frames"):
        measure_cpu_speed("0.6b", frames=frames)


@pytest.mark.slow
def test_the_probe_predicts_the_real_models_frame_time(full_size_0_6b):
    """The probe runs the engine's own frame loop on the same shapes and plan, so the real 0.6B model (synthetic
    weights, a real prompt) on the plan the probe measured takes within a factor of 1.5 of its figure on the same
    machine, measured back to back."""
    from engine.cpu_probe import _pytorch_steps

    probe = measure_cpu_speed("0.6b", frames=6, threads=torch.get_num_threads())
    engine = Engine.from_pretrained(full_size_0_6b, device="cpu", precision="fast")
    talker = engine.model.talker
    if probe.plan.startswith("fast: torch-int8"):  # the steps a load speaks on before the Numba loops are compiled
        _pytorch_steps(talker)
    prompt = build_prompt(talker, engine.config, engine.tokenizer, Voice.preset("ryan"),
                          "The quick brown fox jumps over the lazy dog near the river bank.")
    with torch.inference_mode():
        frames = FrameGenerator(talker, prompt, Sampling(seed=1, min_frames=64), 64).frames()
        next(frames)
        start = time.perf_counter()
        for _ in zip(range(6), frames, strict=False):
            pass
        real_ms = (time.perf_counter() - start) / 6 * 1000
    assert 1 / 1.5 < probe.frame_ms / real_ms < 1.5, (probe.frame_ms, real_ms)
