"""Fixtures the engine's tests share."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="module")
def fast(tiny_model_dir):
    """The tiny CustomVoice model on the fast CPU path (int8 weights), one a test module. Its code predictor (48 wide)
    is narrower than its talker (64)."""
    from engine import Engine

    return Engine.from_pretrained(tiny_model_dir("custom_voice"), device="cpu", cpu_int8=True)
