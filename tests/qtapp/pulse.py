"""Shared by the real-audio tests: whether we run on CI, and how to give up when no PulseAudio answers."""

from __future__ import annotations

import os

import pytest

ON_CI = os.environ.get("CI", "").lower() in ("1", "true", "yes")


def unavailable(reason: str):
    """Fail on CI (which must provide the null sink), skip elsewhere."""
    if ON_CI:
        pytest.fail(f"CI must provide a PulseAudio null sink (scripts/test.sh starts one): {reason}")
    pytest.skip(f"no PulseAudio server reachable ({reason}); scripts/test.sh starts one")
