"""The soak benchmark's arithmetic: RSS growth per 1,000 requests over the run's second half, and its summary."""

from __future__ import annotations

from collections import Counter

import pytest
from hypothesis import given
from hypothesis import strategies as st

from bench.soak import MIX, Sample, growth_per_1000, request_of, summary


def test_a_steady_growth_is_its_slope_per_1000_requests():
    samples = [Sample(t, 10 * t, 500 + 0.002 * 10 * t) for t in range(0, 101, 2)]  # 2 MB per 1,000 requests
    assert growth_per_1000(samples) == pytest.approx(2.0)


def test_only_the_second_half_counts():
    """A first half that warms up (RSS climbing fast) and a level second half: no growth."""
    warm = [Sample(t, 10 * t, 400 + 2 * t) for t in range(0, 50)]
    level = [Sample(t, 10 * t, 500.0) for t in range(50, 101)]
    assert growth_per_1000(warm + level) == pytest.approx(0.0)
    assert growth_per_1000(warm) > 100


def test_too_little_to_measure_is_none():
    assert growth_per_1000([]) is None
    assert growth_per_1000([Sample(0, 0, 500)]) is None
    assert growth_per_1000([Sample(0, 0, 500), Sample(10, 0, 520)]) is None  # nothing served between them


@given(st.floats(-50, 50), st.floats(100, 5000), st.integers(1, 40), st.integers(3, 60))
def test_any_straight_line_gives_its_slope(slope, base, per_step, steps):
    samples = [Sample(float(t), per_step * t, base + slope * per_step * t / 1000) for t in range(steps)]
    assert growth_per_1000(samples) == pytest.approx(slope, abs=1e-6)


def test_the_summary_adds_up():
    samples = [Sample(0, 0, 500.0), Sample(5, 40, 530.0), Sample(10, 80, 520.0), Sample(20, 160, 520.0)]
    row = summary("batch 4", samples, Counter({"mp3": 100, "live": 58}), Counter({"voice: status 413": 2}), 20.04)
    assert row == {"backend": "batch 4", "summary": True, "duration_s": 20.0, "requests": 158,
                   "by_kind": {"live": 58, "mp3": 100}, "failed": {"voice: status 413": 2}, "rss_start_mb": 500.0,
                   "rss_end_mb": 520.0, "rss_max_mb": 530.0, "growth_mb_per_1000": 0.0}


def test_every_kind_of_the_mix_has_its_request():
    assert len(set(MIX)) == len(MIX) and all(callable(request_of(kind)) for kind in MIX)
