"""``FrameGuard``: a loop of code 0 or a segment past its budget is cut at the same frame however its frames
arrive, and speech-like code sequences are never cut."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.core.frames.guard import LOOP_PERIOD, LOOP_WINDOW, FrameGuard


def reference_cut(codes: list[int], budget: int, period: int = LOOP_PERIOD, window: int = LOOP_WINDOW):
    """(frames kept, why) by brute force: frame j completes a loop when frames j - window + 1 .. j each equal the
    one p before them, for some p <= period; the budget keeps ``budget`` frames."""
    for j in range(len(codes)):
        for p in range(1, period + 1):
            first = j - window + 1
            if first - p >= 0 and all(codes[t] == codes[t - p] for t in range(first, j + 1)):
                if j < budget:
                    return j, "loop"
        if j + 1 == budget:
            return budget, "budget"
    return len(codes), None


def feed(codes: list[int], budget: int, cuts: list[int]) -> tuple[int, str | None]:
    guard = FrameGuard(budget)
    bounds = sorted({min(c, len(codes)) for c in cuts} | {0, len(codes)})
    kept = 0
    for a, b in zip(bounds, bounds[1:], strict=False):
        k = guard.keep(np.array(codes[a:b]))
        assert 0 <= k <= b - a and (k == b - a or guard.cut)
        kept += k
        if guard.cut:
            assert guard.keep(np.array([1, 2, 3])) == 0  # nothing more once cut
            break
    why = None if guard.warning is None else "loop" if "repeat" in guard.warning else "budget"
    return kept, why


_LOOPY = st.lists(st.sampled_from([0, 1, 2, 7]), max_size=300)  # few symbols: loops of every period
_RANDOM = st.lists(st.integers(0, 2047), max_size=300)


@settings(max_examples=300, deadline=None)
@given(codes=_LOOPY | _RANDOM | st.builds(lambda head, pattern, n: head + pattern * n, _RANDOM,
                                           st.lists(st.integers(0, 2047), min_size=1, max_size=12),
                                           st.integers(0, 80)),
       budget=st.integers(1, 400), cuts=st.lists(st.integers(0, 300), max_size=10))
def test_the_cut_is_the_brute_force_one_however_the_frames_arrive(codes, budget, cuts):
    assert feed(codes, budget, cuts) == reference_cut(codes, budget)


def test_a_frozen_frame_is_cut_after_the_window():
    guard = FrameGuard(1000)
    assert guard.keep(np.arange(20)) == 20
    assert guard.keep(np.full(100, 5)) == LOOP_WINDOW and "pattern of 1 frame " in guard.warning


def test_a_word_loop_of_a_few_frames_is_cut():
    guard = FrameGuard(1000)
    pattern = [11, 300, 42, 9, 1800, 77, 5]
    assert guard.keep(np.array(pattern * 30)) == len(pattern) + LOOP_WINDOW - 1  # the first repeat starts at 7
    assert "pattern of 7 frames" in guard.warning


def test_a_pattern_longer_than_the_period_is_not_a_loop():
    pattern = list(range(100, 100 + LOOP_PERIOD + 1))
    guard = FrameGuard(10_000)
    assert guard.keep(np.array(pattern * 40)) == len(pattern) * 40 and not guard.cut


def test_pauses_in_speech_are_not_loops():
    """Speech-like codes (the tiny model's) with a 2 s pause (one code held) and a stutter are kept whole."""
    rng = np.random.default_rng(0)
    codes = np.concatenate([rng.integers(0, 2048, 200), np.full(25, 3), rng.integers(0, 2048, 50),
                            np.tile([4, 5, 6], 10), rng.integers(0, 2048, 100)])
    guard = FrameGuard(len(codes) + 1)
    assert guard.keep(codes) == len(codes) and not guard.cut


def test_the_budget_keeps_exactly_budget_frames_and_says_so(caplog):
    guard = FrameGuard(50, "segment 3")
    assert guard.keep(np.arange(30)) == 30 and not guard.cut
    with caplog.at_level("DEBUG", logger="engine"):
        assert guard.keep(np.arange(30, 60)) == 20
    assert "frame budget (50 frames" in guard.warning
    assert caplog.records[-1].getMessage().startswith("segment 3 cut at its frame budget")
    assert caplog.records[-1].levelname == "DEBUG"  # callers tell the user once (describe_cuts)


@pytest.mark.parametrize("budget", [0, -5])
def test_a_budget_of_no_frames_is_refused(budget):
    with pytest.raises(ValueError, match="budget"):
        FrameGuard(budget)
