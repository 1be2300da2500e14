"""Device and memory checks: clear errors before anything is allocated; host values put on the device
without waiting for it; the heap settled for the garbage collector."""

from __future__ import annotations

import time
import weakref

import numpy as np
import pytest
import torch

from engine.core.frames.state import StaticState, cache_bytes
from engine.core.runtime import (
    YOUNG_COLLECTION_EVERY,
    autotuned_convolutions,
    check_memory,
    on_device,
    release_free_memory,
    settle_heap,
)
from engine.errors import UnsupportedError


def test_cache_bytes_is_what_the_state_allocates(tiny_engine):
    talker = tiny_engine("custom_voice").model.talker
    state = StaticState(talker, batch=3, max_seq=40, max_trailing=8, history=4)
    assert cache_bytes(talker, 3, 40) == state.cache.k.nbytes + state.cache.v.nbytes


def test_too_many_streams_for_the_free_gpu_memory_is_a_clear_error(monkeypatch):
    monkeypatch.setattr(torch.cuda, "mem_get_info", lambda device=None: (3 * 2**30, 80 * 2**30))
    with pytest.raises(UnsupportedError, match=r"needs 4\.0 GiB of GPU memory, but only 3\.0 GiB is free\. Fewer"):
        check_memory(4 * 2**30, torch.device("cuda"), "the cache", "Fewer.")
    check_memory(2 * 2**30, torch.device("cuda"), "the cache", "Fewer.")  # fits: no error
    check_memory(2**50, torch.device("cpu"), "the cache", "Fewer.")  # the CPU is not checked


def test_on_device_keeps_the_values_and_their_type():
    ids = on_device([[1, 2, 3]], torch.device("cpu"))
    assert ids.dtype == torch.long and ids.tolist() == [[1, 2, 3]]
    floats = on_device(np.array([0.5, -1.25], dtype=np.float64), torch.device("cpu"), None)
    assert floats.dtype == torch.float64 and floats.tolist() == [0.5, -1.25]


@pytest.mark.gpu
def test_on_device_does_not_wait_for_the_work_queued_on_the_gpu():
    """With about a second of work queued on the stream, putting values on the GPU returns at once, and the
    values are there once the stream gets to them (also after the host list is gone)."""
    device = torch.device("cuda")
    torch.cuda.synchronize()
    torch.cuda._sleep(2_000_000_000)  # ~1 s at the H200's ~2 GHz
    start = time.perf_counter()
    values = [on_device(list(range(i, i + 64)), device) for i in range(20)]
    took = time.perf_counter() - start
    torch.cuda.synchronize()
    waited = time.perf_counter() - start
    assert took < 0.2 < waited
    assert all(v.tolist() == list(range(i, i + 64)) for i, v in enumerate(values))
    on_gpu = torch.arange(4, device=device, dtype=torch.float64)  # a tensor already there: copied, not staged
    assert torch.equal(on_device(on_gpu, device, torch.float32), on_gpu.float())


@pytest.mark.parametrize("before", [False, True])
def test_autotuned_convolutions_turns_cudnn_timing_on_inside_and_restores_it_after_an_error(before, monkeypatch):
    monkeypatch.setattr(torch.backends.cudnn, "benchmark", before)
    deterministic, enabled = torch.backends.cudnn.deterministic, torch.backends.cudnn.enabled
    with pytest.raises(KeyError), autotuned_convolutions():
        assert torch.backends.cudnn.benchmark is True
        assert (torch.backends.cudnn.deterministic, torch.backends.cudnn.enabled) == (deterministic, enabled)
        raise KeyError("fails inside")
    assert torch.backends.cudnn.benchmark is before


def test_settle_heap_collects_then_freezes_what_is_left_and_later_objects_are_still_collected():
    import gc

    class Cycle:
        def __init__(self):
            self.me = self

    garbage, kept = Cycle(), Cycle()
    dead = weakref.ref(garbage)
    del garbage
    try:
        settle_heap()
        assert dead() is None  # the garbage went first
        frozen = gc.get_freeze_count()
        assert frozen > 0 and kept not in gc.get_objects()  # the survivors are out of the collector's reach
        later = Cycle()
        later_ref = weakref.ref(later)
        del later
        gc.collect()
        assert later_ref() is None  # objects made afterwards are collected as before
    finally:
        gc.unfreeze()


def test_settled_heap_takes_a_burst_of_new_objects_without_a_collection_and_still_collects_their_cycles():
    import gc

    class Cycle:
        def __init__(self):
            self.me = self

    passes = []

    def heard(phase, info):
        if phase == "start":
            passes.append(info["generation"])

    thresholds = gc.get_threshold()
    gc.callbacks.append(heard)
    try:
        settle_heap()
        passes.clear()
        burst = [{"request": i} for i in range(20_000)]  # what ~140 server requests leave alive a while
        assert passes == []  # Python's default (700) would have collected the young generation ~28 times
        del burst
        cycles = [weakref.ref(Cycle()) for _ in range(YOUNG_COLLECTION_EVERY + 1)]  # garbage only a pass frees
        assert passes  # their count crossed the threshold: a young collection ran on its own
        assert any(ref() is None for ref in cycles)  # and freed the cycles made before it
    finally:
        gc.callbacks.remove(heard)
        gc.set_threshold(*thresholds)
        gc.unfreeze()


def test_release_free_memory_gives_back_what_the_heap_kept(resident_mib):
    """Many small tensors freed with every 64th kept (so the heap cannot shrink from its top) stay resident in the
    C allocator's free lists until ``release_free_memory`` returns their pages to the system."""
    if not release_free_memory():
        pytest.skip("this C library has no malloc_trim (not glibc)")
    blocks = [torch.ones(16 * 1024) for _ in range(4096)]  # 64 KiB each, under glibc's mmap threshold: 256 MiB
    kept = blocks[::64]
    del blocks
    before = resident_mib()
    assert release_free_memory()
    assert before - resident_mib() > 128
    assert all(b.eq(1.0).all() for b in kept)  # what is still in use is untouched

