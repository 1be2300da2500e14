"""Numba's typed lists, which the kernels' records are made of, come from the cache in a second process: Numba does
not cache its own list functions, and compiling them anew took seconds of every load on a warm cache."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from engine.core.cpu import numba_layer

pytestmark = pytest.mark.skipif(numba_layer.numba is None, reason="Numba is not installed")

MAKE_LISTS = """
import json
import numpy as np
from engine.core.cpu import numba_layer
from numba.core.dispatcher import Dispatcher
from numba.typed import List, typedlist

made = List()
for _ in range(3):
    made.append(np.zeros((2, 4), np.int8))
assert made[1].shape == (2, 4) and len(made) == 3
stats = [f.stats for f in vars(typedlist).values() if isinstance(f, Dispatcher)]
print(json.dumps({"hits": sum(sum(s.cache_hits.values()) for s in stats),
                  "misses": sum(sum(s.cache_misses.values()) for s in stats)}))
"""


def _run(cache: Path) -> dict:
    env = dict(os.environ, NUMBA_CACHE_DIR=str(cache), PYTHONPATH=str(Path(__file__).parents[3]))
    done = subprocess.run([sys.executable, "-c", MAKE_LISTS], env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_a_second_process_loads_the_typed_lists_from_the_cache(tmp_path):
    first = _run(tmp_path)
    assert first["misses"] > 0 and first["hits"] == 0  # compiled and written
    assert any(tmp_path.rglob("*.nbi"))
    second = _run(tmp_path)
    assert second["misses"] == 0 and second["hits"] > 0
