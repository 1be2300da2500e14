"""``--self-test`` (qtapp.self_test) on the int8 plan while the Numba steps are not compiled: it speaks on the PyTorch
steps through the studio's worker and player and passes, while a warm-up process holds the compile (the test holds
its lock: ``bridge`` in tests/cold_start_bridge.py)."""

from __future__ import annotations

import pytest

from engine.core.cpu import one_position_numba as jit
from engine.core.cpu.numba_cache import cold_start
from qtapp.null_audio import NullSoundDevice
from qtapp.self_test import MAX_FRAMES, speak_once

pytestmark = pytest.mark.skipif(jit.numba is None, reason="Numba is not installed")


def test_the_self_test_passes_while_the_warm_up_runs(qapp, bridge, step_calls, tiny_model_dir):
    seconds = speak_once(tiny_model_dir("custom_voice"), NullSoundDevice())
    assert seconds == pytest.approx(MAX_FRAMES * 1920 / 24000)
    assert cold_start._bridge is not None and not cold_start.numba_now()
    assert step_calls["pytorch"] > 0 and step_calls["numba"] == 0  # nothing waited for the compiler
