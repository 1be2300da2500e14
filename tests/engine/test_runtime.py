"""Device and memory checks: clear errors before anything is allocated."""

from __future__ import annotations

import pytest
import torch

from engine.errors import UnsupportedError
from engine.graphs.state import StaticState, cache_bytes
from engine.runtime import check_memory


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
