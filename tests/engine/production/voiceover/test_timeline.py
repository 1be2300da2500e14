"""Lines laid in time (engine.production.voiceover.timeline): never overlapping, never early, sped up only as far as
allowed, and only what still does not fit overruns."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.production.voiceover.timeline import GAP_S, describe, lay_out, speech_bounds

RATE = 24000
GAP = round(GAP_S * RATE)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 20 * RATE), st.integers(0, 5 * RATE), st.integers(0, 6 * RATE)),
                min_size=1, max_size=12),
       st.floats(1.0, 2.0))
def test_lines_never_overlap_never_start_early_and_overrun_only_at_the_tempo_limit(raw, max_tempo):
    starts = sorted(start for start, _, _ in raw)
    cues = [(i + 1, start, start + length) for i, (start, (_, length, _)) in enumerate(zip(starts, raw, strict=True))]
    lengths = [speech for _, _, speech in raw]
    placed = lay_out(cues, lengths, RATE, max_tempo)
    for before, after in zip(placed, placed[1:], strict=False):
        assert after.start >= before.end + (GAP if before.length else 0) or after.start == after.cue_start
        assert after.start >= before.end or before.length == 0
    for p, length in zip(placed, lengths, strict=True):
        assert p.start >= p.cue_start
        assert 1.0 <= p.tempo <= max_tempo
        assert abs(p.length - length / p.tempo) <= 1
        if p.overrun:
            assert p.tempo == max_tempo
        if p.tempo > 1.0:
            assert length > p.cue_end - p.start


def test_what_is_pushed_sped_up_or_overruns_is_described_by_cue():
    placed = lay_out([(1, 0, RATE), (2, RATE // 2, 2 * RATE), (3, 5 * RATE, 5 * RATE + RATE // 10)],
                     [RATE * 2, RATE // 2, RATE], RATE, 1.25)
    lines = describe(placed, RATE)
    assert lines[0].startswith("cue 1: sped up 1.25x; overruns its end by 0.60 s")
    assert lines[1].startswith("cue 2: starts 1.20 s late: cue 1 was still speaking")
    assert lines[2].startswith("cue 3: sped up 1.25x; overruns")


def test_a_push_of_a_few_milliseconds_is_said_in_milliseconds_not_as_zero():
    gap = round(GAP_S * RATE)
    # cue 2 begins 4 ms before the gap after cue 1's speech has passed
    placed = lay_out([(1, 0, RATE), (2, RATE // 2 + gap - RATE // 250, 2 * RATE)], [RATE // 2, RATE // 4], RATE)
    assert placed[1].pushed_by == 1 and placed[1].delay == RATE // 250
    assert describe(placed, RATE) == ["cue 2: starts 4 ms late: cue 1 was still speaking"]


def test_speech_bounds_trim_the_silence_around_speech():
    audio = np.zeros(RATE * 2, dtype=np.float32)
    audio[RATE // 2:RATE] = np.random.default_rng(0).standard_normal(RATE // 2) * 0.1
    first, end = speech_bounds(audio, RATE)
    assert abs(first - RATE // 2) <= round(0.03 * RATE)
    assert abs(end - RATE) <= round(0.03 * RATE)
    assert speech_bounds(np.zeros(RATE, dtype=np.float32), RATE) == (0, 0)
