"""The real warm-up process (engine.core.cpu.numba_cache.warmup) into an empty Numba cache, then a second process that
loads a full-size 0.6B: it finds the marker, steps through the Numba kernels at once, and compiles nothing (no file of
the cache is added or changed), so what the tiny models compiled serves a model of another size; nor does the Welcome
dialog's measurement in a third. Minutes on 2 cores."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from engine.core.cpu import numba_cache
from engine.core.cpu import one_position_numba as jit

ROOT = Path(numba_cache.ENGINE_ROOT).parent
SPEAK = """
import json, sys, torch
from engine import Engine, Sampling, Voice
from engine.core.cpu.numba_cache import cold_start
engine = Engine.from_pretrained(sys.argv[1], device="cpu", dtype=torch.float32)
at_load = cold_start.numba_now()
text = ("A first sentence, long enough that its prompt takes the kernel in calls of many rows. "
        "Then a second one, every bit as long as the first one was, to end with.")
engine.synthesize(text, Voice.preset(engine.speakers[0]), Sampling(seed=1), max_frames=4, segment_chars=0)
print(json.dumps({"numba_at_load": at_load, "numba_steps": engine.cpu_numba_steps,
                  "bridge": cold_start.current() is not None}))
"""
WELCOME = """
from engine.core.cpu.speed_probe import measure_cpu_speed
small = measure_cpu_speed("0.6b")
print(small.plan, "|", measure_cpu_speed("1.7b", threads=small.threads).plan)
"""


def _files(folder: Path) -> dict[str, tuple[int, int]]:
    """Every file of the cache (not the warm-up's log and lock) with its size and modification time."""
    skip = {numba_cache.LOG_NAME, numba_cache.LOCK_NAME}
    return {str(p.relative_to(folder)): (p.stat().st_size, p.stat().st_mtime_ns) for p in folder.rglob("*")
            if p.is_file() and p.name not in skip}


@pytest.mark.slow
@pytest.mark.timeout(3600)
@pytest.mark.skipif(jit.numba is None, reason="Numba is not installed")
def test_the_warm_up_compiles_all_that_a_full_size_model_runs(tmp_path, full_size_0_6b):
    cache = tmp_path / "numba"
    env = dict(os.environ, NUMBA_CACHE_DIR=str(cache), ORATOR_CPU_INT8="1", ORATOR_CPU_WARMUP="1")
    subprocess.run([sys.executable, "-m", "engine.core.cpu.numba_cache.warmup", str(cache)], cwd=ROOT, env=env,
                   check=True, timeout=3000)
    assert len(list(cache.glob("ready-*.json"))) == 1
    compiled = _files(cache)
    assert any(name.endswith(".nbc") for name in compiled)

    out = subprocess.run([sys.executable, "-c", SPEAK, str(full_size_0_6b)], cwd=ROOT, env=env, check=True,
                         capture_output=True, text=True, timeout=1200)
    assert json.loads(out.stdout.splitlines()[-1]) == {"numba_at_load": True, "numba_steps": True, "bridge": False}
    assert _files(cache) == compiled
    # the Welcome dialog's measurement of both sizes, on their placeholder weights, compiles nothing either
    out = subprocess.run([sys.executable, "-c", WELCOME], cwd=ROOT, env=env, check=True, capture_output=True,
                         text=True, timeout=1200)
    assert out.stdout.splitlines()[-1] == "fast: numba-int8 | fast: numba-int8"
    assert _files(cache) == compiled
