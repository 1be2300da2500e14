"""Fixtures the engine's tests share."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture(scope="module")
def fast(tiny_model_dir):
    """The tiny CustomVoice model on the fast CPU path (int8 weights), one a test module. Its code predictor (48 wide)
    is narrower than its talker (64)."""
    from engine import Engine

    return Engine.from_pretrained(tiny_model_dir("custom_voice"), device="cpu", cpu_int8=True)


@pytest.fixture
def resident_mib():
    """A reader of this process's resident memory in MiB (Linux's /proc); the test is skipped elsewhere."""
    status = Path("/proc/self/status")
    if not status.is_file():
        pytest.skip("reads resident memory from Linux's /proc")

    def read() -> float:
        with status.open() as f:
            return next(int(line.split()[1]) for line in f if line.startswith("VmRSS")) / 1024

    return read
