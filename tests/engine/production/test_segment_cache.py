"""The segment cache: what goes in comes out as it will be written, damage is regenerated, the oldest go first."""

from __future__ import annotations

import os
import time

import numpy as np

from engine import Voice
from engine.production.segment_cache import SegmentCache, default_cache_dir, segment_key, voice_key


def test_put_returns_what_get_gives_and_empty_segments_are_kept(tmp_path):
    cache = SegmentCache(tmp_path)
    audio = (0.5 * np.sin(np.arange(4800) * 0.07)).astype(np.float32)
    stored = cache.put("a" * 64, audio)
    np.testing.assert_array_equal(stored, cache.get("a" * 64))
    np.testing.assert_allclose(stored, audio, atol=1 / 32768)
    assert cache.put("b" * 64, np.zeros(0, np.float32)).size == 0 and "b" * 64 in cache
    assert cache.get("c" * 64) is None


def test_a_damaged_entry_is_dropped_so_it_is_generated_again(tmp_path):
    cache = SegmentCache(tmp_path)
    cache.put("d" * 64, np.ones(100, np.float32) * 0.1)
    cache.path("d" * 64).write_bytes(b"fLaC garbage")
    assert cache.get("d" * 64) is None and "d" * 64 not in cache


def test_prune_drops_the_least_recently_used_beyond_the_limit(tmp_path):
    cache = SegmentCache(tmp_path, max_bytes=0)
    for i, key in enumerate(("1" * 64, "2" * 64, "3" * 64)):
        cache.put(key, np.full(2400, 0.1 * (i + 1), np.float32))
        os.utime(cache.path(key), (time.time() - 100 + i, time.time() - 100 + i))
    size = cache.path("3" * 64).stat().st_size
    cache.max_bytes = size
    assert cache.prune() == 2 and "3" * 64 in cache and "1" * 64 not in cache
    cache.max_bytes = 0
    assert cache.prune(keep={"3" * 64}) == 0 and "3" * 64 in cache


def test_keys_follow_what_decides_the_sound():
    vivian, ryan = voice_key(Voice.preset("vivian")), voice_key(Voice.preset("ryan"))
    named = Voice.preset("vivian").with_(name="Narrator")
    assert voice_key(named) == vivian != ryan
    key = segment_key("Hello.", vivian, {"dir": "m"}, {"seed": 1}, None)
    assert key == segment_key("Hello.", vivian, {"dir": "m"}, {"seed": 1}, None)
    assert len({key, segment_key("Hello!", vivian, {"dir": "m"}, {"seed": 1}, None),
                segment_key("Hello.", ryan, {"dir": "m"}, {"seed": 1}, None),
                segment_key("Hello.", vivian, {"dir": "n"}, {"seed": 1}, None),
                segment_key("Hello.", vivian, {"dir": "m"}, {"seed": 2}, None),
                segment_key("Hello.", vivian, {"dir": "m"}, {"seed": 1}, 9)}) == 6


def test_the_cache_folder_can_be_chosen(monkeypatch, tmp_path):
    monkeypatch.setenv("ORATOR_CACHE_DIR", str(tmp_path / "c"))
    assert default_cache_dir() == tmp_path / "c"


def test_each_plan_makes_its_own_model_key(tmp_path):
    """The plans make other numbers, so other audio: the model key carries what of the plan decides it
    (precision, steps, weights, decoder), and only that: threads and chunk growth do not change the key."""
    from dataclasses import replace
    from types import SimpleNamespace

    from engine.core.execution_plan import ExecutionPlan
    from engine.production.segment_cache import model_key

    (tmp_path / "config.json").write_text("{}")
    fast = ExecutionPlan("cpu", "fast", "numba-int8", "int8", "bfloat16", threads=1, thread_counts=(1, 2))
    plans = [fast, replace(fast, path="torch-int8"), replace(fast, decoder="float32"),
             ExecutionPlan("cpu", "exact", "float32", "float32", "float32")]
    keys = [model_key(SimpleNamespace(model_dir=tmp_path, dtype="torch.float32", execution_plan=p)) for p in plans]
    assert len({segment_key("Hi.", {}, k, {}, None) for k in keys}) == len(plans)
    assert keys[0]["plan"] == {"precision": "fast", "path": "numba-int8", "weights": "int8", "decoder": "bfloat16"}
    same = replace(fast, threads=2, thread_counts=(), grow_chunks=not fast.grow_chunks, kernels=("products: VNNI",))
    assert model_key(SimpleNamespace(model_dir=tmp_path, dtype="torch.float32", execution_plan=same)) == keys[0]


def test_the_cache_is_private_to_its_owner(tmp_path):
    """Folders 0700 and entries 0600, as the voices are, whatever the umask lets others read."""
    import stat

    old = os.umask(0o022)
    try:
        cache = SegmentCache(tmp_path / "cache")
        cache.put("e" * 64, np.full(2400, 0.1, np.float32))
        cache.put("f" * 64, np.zeros(0, np.float32))
    finally:
        os.umask(old)
    modes = {path.relative_to(tmp_path).as_posix(): stat.S_IMODE(path.stat().st_mode)
             for path in [tmp_path / "cache", *sorted((tmp_path / "cache").rglob("*"))]}
    assert modes == {"cache": 0o700, "cache/ee": 0o700, f"cache/ee/{'e' * 64}.flac": 0o600,
                     "cache/ff": 0o700, f"cache/ff/{'f' * 64}.flac": 0o600}
