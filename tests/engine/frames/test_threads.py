"""The CPU thread governor (engine/core/cpu/threads.py): it measures each count it may use, runs the faster, leaves a
count that has become slow at once, and comes back when that count is fast again; the fast CPU path uses it."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine import Engine, Sampling, Voice
from engine.core.cpu import threads
from engine.core.cpu.threads import EXPLORE_AT_MOST_EVERY, EXPLORE_EVERY, TRIAL_FRAMES, ThreadGovernor


def drive(governor: ThreadGovernor, frame_ms, frames: int) -> list[int]:
    """Run ``frames`` frames whose time is ``frame_ms(threads, index)``; returns the count each frame ran with."""
    used = []
    for i in range(frames):
        governor.before_frame()
        used.append(governor.current)
        governor.after_frame(frame_ms(governor.current, i))
    return used


def test_it_settles_on_the_faster_count_and_tries_the_other_now_and_then():
    applied = []
    governor = ThreadGovernor((1, 2), set_threads=applied.append)
    used = drive(governor, lambda n, i: {1: 175.0, 2: 110.0}[n], 200)
    assert used[:2] == [1, 2]  # the cautious count first, then the other measured at once
    assert used[-EXPLORE_EVERY:].count(2) >= EXPLORE_EVERY - 3
    assert 1 in used[100:]  # and the slower one is still tried now and then
    assert applied[0] == 1 and all(a != b for a, b in zip(applied, applied[1:], strict=False))  # only changes


def trials(used: list[int], settled: int) -> list[int]:
    """The frames at which a trial of a count other than ``settled`` began."""
    return [i for i in range(1, len(used)) if used[i] != settled and used[i - 1] == settled]


def test_trials_that_keep_finding_the_other_count_slow_come_ever_more_rarely():
    governor = ThreadGovernor((1, 2), set_threads=lambda n: None)
    used = drive(governor, lambda n, i: {1: 175.0, 2: 110.0}[n], 3000)  # an idle 2-core machine
    gaps = [b - a for a, b in zip(trials(used, 2), trials(used, 2)[1:], strict=False)]
    assert gaps[:4] == sorted(gaps[:4]) and gaps[1] > 1.5 * gaps[0]  # the wait doubles
    trial = TRIAL_FRAMES + 1  # a gap holds the trial's frames and the one back
    assert max(gaps) == gaps[-1] == EXPLORE_AT_MOST_EVERY + trial  # up to its longest, and there it stays
    assert used.count(1) < 3000 / (EXPLORE_EVERY + trial) * TRIAL_FRAMES / 3  # a third of a fixed wait's


def test_trials_keep_their_shortest_wait_while_the_counts_are_close():
    governor = ThreadGovernor((1, 2), set_threads=lambda n: None)
    used = drive(governor, lambda n, i: {1: 118.0, 2: 110.0}[n], 1000)
    gaps = [b - a for a, b in zip(trials(used, 2), trials(used, 2)[1:], strict=False)]
    assert gaps and set(gaps) == {EXPLORE_EVERY + TRIAL_FRAMES + 1}


def test_a_count_that_turns_slow_is_left_within_a_few_frames_and_taken_again_once_fast():
    governor = ThreadGovernor((1, 2), set_threads=lambda n: None)

    def busy_between(n, i):  # something else takes a core from frame 60 to 160: two threads crawl
        return 1000.0 if n == 2 and 60 <= i < 160 else {1: 175.0, 2: 110.0}[n]
    used = drive(governor, busy_between, 300)
    assert used[59] == 2
    assert used[64:160].count(2) <= 12  # a frame or two at the start and each trial
    assert used[-40:].count(2) >= 37


@settings(max_examples=60, deadline=None)
@given(times=st.lists(st.floats(0.0, 1e6, allow_nan=False), min_size=1, max_size=300),
       choices=st.lists(st.integers(1, 64), min_size=1, max_size=4))
def test_any_frame_times_keep_it_within_its_counts(times, choices):
    governor = ThreadGovernor(choices, set_threads=lambda n: None)
    used = drive(governor, lambda n, i: times[i], len(times))
    assert set(used) <= set(choices) and governor.fastest() in choices


@pytest.mark.parametrize("choices", [(), (0, 1), (-2,)])
def test_counts_must_be_positive(choices):
    with pytest.raises(ValueError):
        ThreadGovernor(choices)


def test_one_core_needs_no_governor(monkeypatch):
    monkeypatch.setattr(threads, "available_cores", lambda: 1)
    assert ThreadGovernor.for_this_machine() is None
    monkeypatch.setattr(threads, "available_cores", lambda: 8)
    assert ThreadGovernor.for_this_machine().choices == [7, 8]


def test_the_fast_cpu_path_is_governed_and_the_exact_path_and_a_chosen_count_are_not(tiny_model_dir, engine_options,
                                                                                    monkeypatch):
    monkeypatch.setattr(threads, "available_cores", lambda: 2)
    path = tiny_model_dir("custom_voice")
    fast = Engine.from_pretrained(path, device="cpu", cpu_int8=True)
    governor = fast._single_streamer().governor
    assert governor is not None and governor.choices == [1, 2]
    voice = Voice.preset("vivian", "english")
    measured, after_frame = set(), governor.after_frame

    def counted(ms):  # a spike near the end may start a trial afresh (its mean None again): count as they come
        if not governor._skip_next:
            measured.add(governor.current)
        after_frame(ms)

    governor.after_frame = counted
    fast.synthesize("Hello there.", voice, Sampling(greedy=True, min_frames=8), max_frames=8)
    assert measured == {1, 2}  # both counts measured on real frames
    assert fast.cpu_thread_counts == (1, 2)
    exact = Engine.from_pretrained(path, device="cpu", cpu_int8=False)
    assert exact._single_streamer().governor is None and len(exact.cpu_thread_counts) == 1
    engine_options(threads=1)
    chosen = Engine.from_pretrained(path, device="cpu", cpu_int8=True)
    assert chosen._single_streamer().governor is None and chosen.cpu_thread_counts == (1,)
    from qtapp.worker import describe_engine

    steps = ", compiled steps" if fast.cpu_numba_steps else ""  # the Numba steps, where Numba runs
    steps += ", VNNI products" if any(fast.cpu_vnni_products) else ""  # where they measured faster at load
    assert describe_engine(fast).endswith(f"(int8 weights{steps}, 1 or 2 threads as measured)")
    steps = ", compiled steps" if chosen.cpu_numba_steps else ""
    steps += ", VNNI products" if any(chosen.cpu_vnni_products) else ""
    assert describe_engine(chosen).endswith(f"(int8 weights{steps}, 1 thread)")
