"""When the fast path compiles its kernels: CUDA only, Volta or newer, and not when switched off."""

from __future__ import annotations

import torch

from engine.graphs.compile import compile_enabled


def test_compile_only_on_capable_gpus_unless_switched_off(monkeypatch):
    cuda = torch.device("cuda")
    monkeypatch.setattr(torch.cuda, "get_device_capability", lambda device=None: (8, 0))
    assert compile_enabled(cuda)
    assert not compile_enabled(torch.device("cpu"))
    monkeypatch.setenv("ORATOR_COMPILE", "0")
    assert not compile_enabled(cuda)
    monkeypatch.delenv("ORATOR_COMPILE")
    monkeypatch.setattr(torch.cuda, "get_device_capability", lambda device=None: (6, 1))
    assert not compile_enabled(cuda)
