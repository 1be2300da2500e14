"""A stream's chunk sizes (engine.core.chunk_sizes): the first, then the stream's own, growing on the CPU path only
while
the audio made is far enough ahead of its listener; and a real stream of the tiny engine in grown chunks."""

from __future__ import annotations

import functools
import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine import Sampling, Voice
from engine.core.chunk_sizes import GROWN_CHUNK_FRAMES, HEADROOM, ChunkSizes
from engine.core.chunks import FRAME_RATE, SAMPLES_PER_FRAME
from tests.plans import BF16_DECODED_ATOL, PRECISIONS


class Clock:
    def __init__(self):
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def run(sizes: ChunkSizes, clock: Clock, seconds_per_frame: float, chunks: int) -> list[int]:
    """Sizes asked for as a stream that takes ``seconds_per_frame`` a frame makes ``chunks`` chunks."""
    got = []
    for _ in range(chunks):
        n = sizes.next_size()
        got.append(n)
        clock.now += n * seconds_per_frame
        sizes.made(n)
    return got


def test_without_a_larger_size_every_chunk_but_the_first_has_the_streams_size():
    clock = Clock()
    assert run(ChunkSizes(1, 4, clock=clock), clock, 0.001, 6) == [1, 4, 4, 4, 4, 4]


def test_a_stream_far_ahead_doubles_its_chunks_up_to_the_largest():
    clock = Clock()
    assert run(ChunkSizes(1, 4, 16, clock=clock), clock, 0.001, 6) == [1, 8, 16, 16, 16, 16]


def test_a_stream_slower_than_real_time_keeps_its_own_size():
    clock = Clock()
    assert run(ChunkSizes(1, 4, 16, clock=clock), clock, 0.1, 12) == [1] + [4] * 11


def test_a_stream_that_falls_behind_returns_to_its_own_size():
    clock = Clock()
    sizes = ChunkSizes(1, 4, 16, clock=clock)
    assert run(sizes, clock, 0.001, 4)[-1] == 16
    clock.now += 30.0  # a long stall (another program took the processor): the listener has caught up
    assert sizes.next_size() == 4


@pytest.mark.parametrize("args", [(0, 4, 16), (1, 0, 16), (1, -3, None), (1, 8, 4)])
def test_sizes_out_of_range_are_refused(args):
    with pytest.raises(ValueError):
        ChunkSizes(*args)


@settings(max_examples=200, deadline=None)
@given(first=st.integers(1, 8), size=st.integers(1, 8), extra=st.integers(0, 40),
       steps=st.lists(st.floats(0.0, 0.5), min_size=1, max_size=40))
def test_a_grown_chunk_never_outlasts_the_audio_ahead(first, size, extra, steps):
    """Whatever each frame takes, a chunk above the stream's size is only asked for where the audio already made,
    less what its listener has heard, lasts HEADROOM times what the chunk takes at the rate so far."""
    clock = Clock()
    sizes = ChunkSizes(first, size, size + extra, clock=clock)
    made, started = 0, None
    for index, seconds_per_frame in enumerate(steps):
        n = sizes.next_size()
        assert n == first if index == 0 else size <= n <= size + extra
        if index and n > size:
            ahead = made / FRAME_RATE - (clock.now - started)
            assert n * (clock.now / made) * HEADROOM <= ahead + 1e-9
        clock.now += n * seconds_per_frame
        started = clock.now if started is None else started
        sizes.made(n)
        made += n


@pytest.mark.parametrize("precision", PRECISIONS)
def test_a_cpu_stream_grows_its_chunks_and_says_the_same(plan_engine, engine_options, precision, monkeypatch):
    """A stream far ahead of real time on the CPU: its chunks grow to GROWN_CHUNK_FRAMES, and the audio is the
    fixed-size stream's, sample for sample within the decoder's rounding. How far ahead follows the machine's
    momentary speed, so the streams' clock is pinned: each reading a millisecond after the last."""
    import engine.core.engine

    ticks = itertools.count()
    clock = functools.partial(ChunkSizes, clock=lambda: next(ticks) / 1000)
    monkeypatch.setattr(engine.core.engine, "ChunkSizes", clock)
    engine_options(grow_chunks=True)  # the engine's default (the tests' is off: tests/conftest.py)
    eng = plan_engine(precision)
    assert eng.grows_chunks
    voice, sampling = Voice.preset("vivian", "english"), Sampling(seed=5, min_frames=60)
    text = "A sentence long enough for a few dozen frames of speech."
    grown = list(eng.stream(text, voice, sampling=sampling, max_frames=60))
    fixed = list(eng.stream(text, voice, sampling=sampling, max_frames=60, largest_chunk_frames=4))
    frames = [len(c.samples) // SAMPLES_PER_FRAME for c in grown if len(c.samples)]
    assert frames[0] == 1 and max(frames) == GROWN_CHUNK_FRAMES and frames == sorted(frames[:-1]) + frames[-1:]
    assert max(len(c.samples) for c in fixed) == 4 * SAMPLES_PER_FRAME
    np.testing.assert_allclose(np.concatenate([c.samples for c in grown]),
                               np.concatenate([c.samples for c in fixed]),
                               atol=BF16_DECODED_ATOL if eng.execution_plan.decoder == "bfloat16" else 1e-4)
    assert grown[-1].final and fixed[-1].final


def test_a_largest_size_below_the_streams_is_refused(tiny_engine):
    eng = tiny_engine("custom_voice")
    with pytest.raises(ValueError, match="largest"):
        next(eng.stream("Hi.", Voice.preset("vivian"), chunk_frames=8, largest_chunk_frames=4))


def test_the_option_keeps_a_cpu_streams_chunks_at_its_size(tiny_engine, engine_options):
    from engine.core.options import Options

    assert not Options.from_environment({"ORATOR_GROW_CHUNKS": "0"}).grow_chunks
    assert Options.from_environment({}).grow_chunks
    eng = tiny_engine("custom_voice")
    engine_options(grow_chunks=False)
    assert not eng.grows_chunks
    chunks = list(eng.stream("Words enough for some frames.", Voice.preset("vivian"), sampling=Sampling(seed=1),
                             max_frames=40))
    assert max(c.n_frames for c in chunks) == 4
