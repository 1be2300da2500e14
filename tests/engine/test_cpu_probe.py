"""engine.cpu_probe: the processor's speed on a model size's real shapes, before any model is downloaded."""

from __future__ import annotations

import time

import pytest
import torch

from engine import Engine, Sampling, Voice
from engine.cpu_probe import FRAME_S, CpuSpeed, measure_cpu_speed
from engine.frames.eager import FrameGenerator
from engine.prompts import build_prompt
from engine.runtime import available_cores, cpu_threads


def test_the_realtime_factor_is_audio_over_the_time_to_make_and_decode_it():
    speed = CpuSpeed("0.6b", frame_ms=60.0, decode_ms=20.0, threads=4)
    assert speed.realtime_factor == pytest.approx(FRAME_S * 1000 / 80.0) == pytest.approx(1.0)
    assert CpuSpeed("1.7b", 150.0, 10.0, 4).realtime_factor == pytest.approx(0.5)


def test_a_measurement_takes_about_its_time_and_uses_the_engines_threads():
    threads = torch.get_num_threads()
    try:
        start = time.perf_counter()
        speed = measure_cpu_speed("0.6b", seconds=0.2)
        took = time.perf_counter() - start
    finally:
        torch.set_num_threads(threads)
    # the thread count the fast path settles on: the cores less one, or all of them where that measured faster
    assert speed.size == "0.6b" and speed.threads in {cpu_threads(), available_cores()}
    assert speed.frame_ms > 0 and speed.decode_ms > 0 and 0 < speed.realtime_factor < 100
    assert took < 30  # two frames at least, a chunk decoded; the build is most of it


@pytest.mark.slow
def test_the_probe_predicts_the_real_models_frame_time(full_size_0_6b):
    """The probe runs the engine's own frame loop on the same shapes, so the real 0.6B model (synthetic weights, a
    real prompt) takes within a factor of 1.5 of its figure on the same machine, measured back to back."""
    engine = Engine.from_pretrained(full_size_0_6b, device="cpu", cpu_int8=True)  # the path the probe measures
    talker = engine.model.talker
    prompt = build_prompt(talker, engine.config, engine.tokenizer, Voice.preset("ryan"),
                          "The quick brown fox jumps over the lazy dog near the river bank.")
    with torch.inference_mode():
        frames = FrameGenerator(talker, prompt, Sampling(seed=1, min_frames=64), 64).frames()
        next(frames)
        start = time.perf_counter()
        for _ in zip(range(6), frames, strict=False):
            pass
        real_ms = (time.perf_counter() - start) / 6 * 1000
    del engine, talker
    probe = measure_cpu_speed("0.6b", seconds=0.5, threads=torch.get_num_threads())  # the count the loop above ran
    assert 1 / 1.5 < probe.frame_ms / real_ms < 1.5, (probe.frame_ms, real_ms)
