"""The cold-start bridge (engine.core.cpu.numba_cache.cold_start): an int8 engine whose Numba steps are not in the
cache speaks on the PyTorch steps while a warm-up process compiles them, and switches at the first segment boundary
after the warm-up's marker appears, each segment wholly from one plan; with the marker there it takes the Numba steps at
once. The warm-up is the test's (it holds the warm-up's lock): tests/engine/numba_cache/test_warmup.py runs the real
one.
"""

from __future__ import annotations

import logging
import subprocess
import sys
from collections import defaultdict

import numpy as np
import pytest
import torch

from engine import Engine, Sampling, Voice
from engine.core import options
from engine.core.chunk_sizes import ChunkSizes
from engine.core.cpu import numba_cache
from engine.core.cpu import one_position_numba as jit
from engine.core.cpu.numba_cache import cold_start, warmup

pytestmark = pytest.mark.skipif(jit.numba is None, reason="Numba is not installed")
TEXT = "The first sentence is here. A second one follows it. And a third one ends the text."
MAX_FRAMES = 8
SWITCHED = "the Numba CPU steps are compiled"


def _spoken(engine, on_chunk=lambda chunk: None):
    """(codes, audio) a segment of TEXT, spoken as ``stream`` speaks it (first chunk of one frame, then four)."""
    plan = engine.plan(TEXT, Voice.preset(engine.speakers[0]), Sampling(seed=7), MAX_FRAMES, segment_chars=0)
    codes, audio = defaultdict(list), defaultdict(list)
    for chunk, chunk_codes in engine._run(plan, ChunkSizes(1, 4)):
        codes[chunk.segment].append(chunk_codes)
        audio[chunk.segment].append(chunk.samples)
        on_chunk(chunk)
    assert len(codes) == 3
    return ({s: np.concatenate(c) for s, c in codes.items()}, {s: np.concatenate(a) for s, a in audio.items()})


def test_speaks_before_the_warm_up_finished_and_switches_at_a_segment_boundary(bridge, step_calls, tiny_model_dir,
                                                                               caplog):
    engine = Engine.from_pretrained(tiny_model_dir("custom_voice"), device="cpu", dtype=torch.float32)
    assert engine.cpu_int8 and not cold_start.numba_now()
    assert not engine.cpu_numba_steps  # nothing compiled while the bridge holds: warming up takes no time
    plan = engine.execution_plan  # the target kernels, and the bridge that speaks until they are compiled
    assert plan.path.startswith("numba-int8") and plan.bridge.startswith("torch-int8 until")
    key = numba_cache.compiled_key()
    calls: dict[int, dict[str, int]] = defaultdict(lambda: {"pytorch": 0, "numba": 0})
    seen = dict(step_calls)

    def on_chunk(chunk):
        nonlocal seen
        for name in seen:  # the steps made since the last chunk made this one
            calls[chunk.segment][name] += step_calls[name] - seen[name]
        seen = dict(step_calls)
        if chunk.segment == 0:  # the warm-up finishes while the first segment is spoken
            numba_cache.write_marker(bridge, key)

    with caplog.at_level(logging.INFO, logger=cold_start.__name__):
        codes, audio = _spoken(engine, on_chunk)
    assert calls[0]["pytorch"] > 0 and calls[0]["numba"] == 0  # every chunk of segment 0, after the marker too
    for segment in (1, 2):
        assert calls[segment]["numba"] > 0 and calls[segment]["pytorch"] == 0
    assert [r.getMessage() for r in caplog.records].count(
        "the Numba CPU steps are compiled: the segments from now on step through them") == 1
    assert engine.cpu_numba_steps
    assert engine.execution_plan is plan  # the bridge's switch is the one change of plan, recorded in it already

    options.configure(cpu_numba=False)  # the PyTorch steps alone
    pytorch_codes, pytorch_audio = _spoken(engine)
    options.configure(cpu_numba=True)  # the Numba steps alone
    numba_codes, _ = _spoken(engine)
    np.testing.assert_array_equal(codes[0], pytorch_codes[0])
    np.testing.assert_array_equal(audio[0], pytorch_audio[0])
    for segment in (1, 2):
        np.testing.assert_array_equal(codes[segment], numba_codes[segment])


def test_with_the_marker_there_the_engine_takes_the_numba_steps_at_once(bridge, step_calls, tiny_model_dir):
    numba_cache.write_marker(bridge, numba_cache.compiled_key())
    engine = Engine.from_pretrained(tiny_model_dir("custom_voice"), device="cpu", dtype=torch.float32)
    assert cold_start.numba_now() and engine.cpu_numba_steps
    assert not (bridge / numba_cache.LOG_NAME).exists()  # no warm-up was started
    _spoken(engine)
    assert step_calls["numba"] > 0 and step_calls["pytorch"] == 0


def test_one_warm_up_a_process(bridge, tiny_model_dir):
    first = Engine.from_pretrained(tiny_model_dir("custom_voice"), device="cpu", dtype=torch.float32)
    started = cold_start.current()
    assert started is not None and started.process is not None
    assert started.process.wait(timeout=300) == 0  # the test holds the lock: it found a warm-up running
    second = Engine.from_pretrained(tiny_model_dir("base"), device="cpu", dtype=torch.float32)
    assert cold_start.current() is started
    assert not first.cpu_numba_steps and not second.cpu_numba_steps


@pytest.mark.parametrize("change", [{"cpu_warmup": False}, {"cpu_numba": False}, {"precision": "exact"}])
def test_no_bridge_where_the_options_ask_for_none(bridge, tiny_model_dir, change):
    options.configure(**change)
    engine = Engine.from_pretrained(tiny_model_dir("custom_voice"), device="cpu", dtype=torch.float32)
    assert cold_start.current() is None and not (bridge / numba_cache.LOG_NAME).exists()
    assert engine.execution_plan.bridge is None


def test_a_failed_warm_up_is_said_once_and_the_pytorch_steps_go_on(tmp_path, caplog):
    process = subprocess.Popen([sys.executable, "-c", "raise SystemExit(3)"])
    process.wait(timeout=60)
    failed = cold_start.ColdStart(tmp_path, numba_cache.compiled_key(), process)
    with caplog.at_level(logging.WARNING, logger=cold_start.__name__):
        assert not failed.at_segment_boundary()
        assert not failed.at_segment_boundary()
    assert len(caplog.records) == 1 and "exit code 3" in caplog.records[0].getMessage()


def test_a_warm_up_that_finds_another_running_exits_at_once(tmp_path):
    from filelock import FileLock

    with FileLock(tmp_path / numba_cache.LOCK_NAME):
        assert warmup.main([str(tmp_path)]) == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == [numba_cache.LOCK_NAME]  # no marker
