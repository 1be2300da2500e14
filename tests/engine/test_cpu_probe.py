"""engine.core.cpu.speed_probe: the processor's speed on a model size's real shapes, before any model is downloaded."""

from __future__ import annotations

import pytest
import torch

from engine.core.config import ModelConfig
from engine.core.cpu import numba_layer
from engine.core.cpu.int8 import Int8Weight
from engine.core.cpu.speed_probe import FRAME_S, CpuSpeed, measure_cpu_speed, placeholder_talker
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


def test_a_count_given_is_the_only_one_measured(step_calls):
    """A second size is measured at the count the first found faster: an untimed frame and ``frames`` timed ones,
    no more."""
    threads = torch.get_num_threads()
    try:
        speed = measure_cpu_speed("0.6b", frames=1, threads=1)
    finally:
        torch.set_num_threads(threads)
    assert speed.threads == 1 and speed.frame_ms > 0
    assert 2 * 15 <= step_calls["pytorch"] <= 2 * 17


def test_the_placeholder_writes_what_a_frame_reads_and_one_codebook_table_serves_all():
    """Every int8 weight is written (memory never written would read as one cached page of zeros); the code
    predictor's 15 codebook tables, a row of each read a frame, are one tensor, written once."""
    from engine.synthetic.checkpoint import config_dict

    talker = placeholder_talker(ModelConfig.from_dict(config_dict("tiny", "custom_voice")))
    weights = [m for m in talker.modules() for m in vars(m).values() if isinstance(m, Int8Weight)]
    assert weights and all(bool((w.q == 1).all()) for w in weights)
    tables = [emb.weight for emb in talker.code_predictor.model.codec_embedding]
    assert len(tables) > 1 and all(t is tables[0] for t in tables)
    assert all(bool((p == 0.01).all()) for p in talker.parameters() if p.is_floating_point())


@pytest.mark.skipif(numba_layer.numba is None, reason="Numba is not installed")
def test_a_codebook_table_shared_by_the_placeholder_is_projected_once(monkeypatch):
    """The Numba predictor frame projects each codebook table of a predictor narrower than its talker (the 1.7B's)
    at load; the probe's one shared table is projected once, and every codebook reads its rows."""
    from engine.core.cpu import one_position_numba as jit
    from engine.core.cpu.numba_predictor import PredictorTables
    from engine.synthetic.checkpoint import config_dict

    talker = placeholder_talker(ModelConfig.from_dict(config_dict("tiny", "custom_voice")))
    cp = talker.code_predictor
    assert not isinstance(cp.small_to_mtp_projection, torch.nn.Identity)  # "tiny" is projected, as the 1.7B
    projected = []
    project = cp.project
    monkeypatch.setattr(cp, "project", lambda x: projected.append(x.shape) or project(x))
    with torch.inference_mode():
        tables = PredictorTables(talker, [jit.NumbaHead(w) for w in cp.head_weights])
    assert len(projected) == 1
    inputs = list(tables.kernel.inputs)
    assert len(inputs) == len(cp.model.codec_embedding) - 1
    assert len({t.ctypes.data for t in inputs}) == 1  # one array's memory
