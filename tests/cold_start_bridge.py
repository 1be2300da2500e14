"""Fixtures for tests of the cold-start bridge (engine.core.cpu.numba_cache.cold_start), a plugin of tests/conftest.py.

``bridge``: int8 engines with the bridge on, its markers and lock in a folder of the test's own where a warm-up is
running (the test holds its lock, so the warm-up process an engine starts exits at once and the marker appears only
when the test writes it), on one thread (a thread count chosen frame by frame could round sums differently from run
to run). ``step_calls``: how many one-position steps ran through PyTorch's and through Numba's steps, counted on
their way through.
"""

from __future__ import annotations

import pytest


@pytest.fixture
def bridge(tmp_path, monkeypatch):
    import torch
    from filelock import FileLock

    from engine.core import options
    from engine.core.cpu import numba_cache
    from engine.core.cpu.numba_cache import cold_start

    folder = tmp_path / "numba"
    folder.mkdir()
    monkeypatch.setattr(cold_start, "MARKER_FOLDER", folder)
    before, threads = options.current(), torch.get_num_threads()
    options.configure(precision="fast", cpu_numba=True, cpu_warmup=True, threads=1)
    lock = FileLock(folder / numba_cache.LOCK_NAME)
    lock.acquire(timeout=0)
    try:
        yield folder
    finally:
        lock.release()
        cold_start.end_bridge()
        options.configure(before)
        torch.set_num_threads(threads)


@pytest.fixture
def step_calls(monkeypatch):
    from engine.core.cpu.one_position import BoundStep
    from engine.core.cpu.one_position_numba import NumbaBoundStep

    calls = {"pytorch": 0, "numba": 0}
    for cls, name in ((BoundStep, "pytorch"), (NumbaBoundStep, "numba")):
        def counted(self, *args, _step=cls.__call__, _name=name, **kwargs):
            calls[_name] += 1
            return _step(self, *args, **kwargs)

        monkeypatch.setattr(cls, "__call__", counted)
    return calls
