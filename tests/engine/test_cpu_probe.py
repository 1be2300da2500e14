"""engine.core.cpu.speed_probe: the processor's speed on a model size's real shapes, before any model is downloaded."""

from __future__ import annotations

import pytest
import torch

from engine.core.cpu.speed_probe import FRAME_S, CpuSpeed, measure_cpu_speed
from engine.core.cpu.threads import ThreadGovernor
from engine.core.runtime import cpu_threads


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
