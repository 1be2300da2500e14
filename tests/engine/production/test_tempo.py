"""Tempo change without pitch change: output duration is input / speed, the pitch stays put; ``ChunkTempo``
keeps a chunk stream's segments, spans and final flag (per segment for the studio, whole for the server)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.core.chunks import SAMPLE_RATE, Chunk
from engine.production.tempo import ChunkTempo, TimeStretcher, stretch

RATE = 24000


def voiced(seconds: float = 2.0, f0: float = 180.0) -> np.ndarray:
    t = np.arange(int(RATE * seconds)) / RATE
    return (0.3 * np.sin(2 * np.pi * f0 * t) + 0.1 * np.sin(2 * np.pi * 3 * f0 * t)).astype(np.float32)


def dominant_frequency(samples: np.ndarray) -> float:
    middle = samples[len(samples) // 4: 3 * len(samples) // 4]
    spectrum = np.abs(np.fft.rfft(middle * np.hanning(len(middle))))
    return float(np.fft.rfftfreq(len(middle), 1 / RATE)[np.argmax(spectrum)])


@pytest.mark.parametrize("speed", [0.25, 0.5, 0.8, 1.25, 2.0, 4.0])
def test_duration_scales_and_pitch_is_kept(speed):
    samples = voiced()
    out = stretch(samples, speed)
    assert len(out) == round(len(samples) / speed)
    assert dominant_frequency(out) == pytest.approx(180.0, rel=0.02)
    rms_in, rms_out = np.sqrt(np.mean(samples ** 2)), np.sqrt(np.mean(out[len(out) // 4: -len(out) // 4] ** 2))
    assert rms_out == pytest.approx(rms_in, rel=0.1)  # no cancellation from misaligned overlaps


def test_streaming_in_chunks_equals_the_whole():
    samples = voiced(1.5)
    stretcher = TimeStretcher(1.5)
    pieces = [stretcher.process(samples[i:i + 1920]) for i in range(0, len(samples), 1920)]
    assert sum(len(p) for p in pieces) > 0  # output flows before the end
    np.testing.assert_array_equal(np.concatenate(pieces + [stretcher.flush()]), stretch(samples, 1.5))


@pytest.mark.parametrize(("speed", "length"), [(4.0, 1200), (3.0, 1500), (4.0, 1921), (2.5, 1200)])
def test_a_short_input_at_a_high_speed_is_never_too_long(speed, length):
    """What ``process`` hands out never passes round(input / speed), so ``flush`` can always end there."""
    stretcher = TimeStretcher(speed)
    early = stretcher.process(np.ones(length, dtype=np.float32))
    assert len(early) <= round(length / speed)
    assert len(early) + len(stretcher.flush()) == round(length / speed)


@pytest.mark.parametrize("speed", [0.2, 4.5, 0.0])
def test_out_of_range_speed_is_refused(speed):
    with pytest.raises(ValueError):
        TimeStretcher(speed)


def chunk(samples: np.ndarray, segment: int, final: bool = False) -> Chunk:
    return Chunk(samples, SAMPLE_RATE, 0, len(samples) // 1920, segment, (segment * 10, segment * 10 + 9), 0.0, final)


def test_each_segment_is_flushed_before_the_next_begins():
    rng = np.random.default_rng(0)
    pieces = [(rng.standard_normal(7680).astype(np.float32), seg) for seg in (0, 0, 0, 1, 1)]
    tempo = ChunkTempo(1.6)
    out = []
    for i, (samples, seg) in enumerate(pieces):
        out += tempo.feed(chunk(samples, seg, final=i == len(pieces) - 1))
    for seg in (0, 1):
        given_samples = sum(len(s) for s, g in pieces if g == seg)
        assert sum(len(c.samples) for c in out if c.segment == seg) == round(given_samples / 1.6)
    assert [c.segment for c in out] == sorted(c.segment for c in out)
    assert [c.final for c in out] == [False] * (len(out) - 1) + [True]
    assert all(c.span == (c.segment * 10, c.segment * 10 + 9) for c in out)


def test_a_stream_ending_without_a_final_chunk_is_finished_explicitly():
    tempo = ChunkTempo(0.5)
    ready = tempo.feed(chunk(np.ones(3840, dtype=np.float32), 2))
    rest = tempo.finish()
    assert sum(len(c.samples) for c in ready + rest) == 7680
    assert tempo.finish() == []


def test_speed_one_returns_the_same_chunk():
    given_chunk = chunk(np.ones(1920, dtype=np.float32), 0, final=True)
    tempo = ChunkTempo(1.0)
    assert tempo.feed(given_chunk) == [given_chunk] and tempo.feed(given_chunk)[0] is given_chunk
    assert tempo.finish() == []


def test_a_whole_response_is_one_signal_across_segments():
    """The server's use: segment changes do not restart the stretcher, so the output is ``stretch`` of the
    concatenated input, bit for bit."""
    samples = voiced(1.2)
    tempo = ChunkTempo(1.5, per_segment=False)
    out = []
    for i, start in enumerate(range(0, len(samples), 1920)):
        out += tempo.feed(chunk(samples[start:start + 1920], segment=i // 4))
    out += tempo.finish()
    np.testing.assert_array_equal(np.concatenate([c.samples for c in out]), stretch(samples, 1.5))
    assert tempo.finish() == []


@pytest.mark.parametrize("speed", [0.2, 4.5, 0.0, float("nan")])
def test_chunk_tempo_refuses_a_speed_out_of_range_at_once(speed):
    with pytest.raises(ValueError):
        ChunkTempo(speed)


@settings(max_examples=40, deadline=None)
@given(speed=st.sampled_from([0.5, 0.8, 1.25, 2.0, 4.0]),
       pieces=st.lists(st.tuples(st.integers(0, 5000), st.integers(0, 3)), min_size=1, max_size=12),
       final=st.booleans(), per_segment=st.booleans())
def test_any_chunking_keeps_each_segment_length_and_order(speed, pieces, final, per_segment):
    """Whatever the chunk sizes (empty ones included) and segment runs: nothing is lost or invented (per
    segment: each run of a segment comes out at round(length / speed)), segments stay in order, and exactly
    the last chunk is final when the input ended with a final chunk."""
    rng = np.random.default_rng(len(pieces))
    segments = sorted(seg for _, seg in pieces)
    inputs = [chunk(rng.standard_normal(n).astype(np.float32), seg, final=final and i == len(pieces) - 1)
              for i, ((n, _), seg) in enumerate(zip(pieces, segments, strict=True))]
    tempo = ChunkTempo(speed, per_segment=per_segment)
    out = [c for given_chunk in inputs for c in tempo.feed(given_chunk)] + tempo.finish()
    assert [c.segment for c in out] == sorted(c.segment for c in out)
    if per_segment:
        for seg in set(segments):
            length = sum(len(c.samples) for c in inputs if c.segment == seg)
            assert sum(len(c.samples) for c in out if c.segment == seg) == round(length / speed)
    else:
        assert sum(len(c.samples) for c in out) == round(sum(len(c.samples) for c in inputs) / speed)
    assert [c.final for c in out] == [final and i == len(out) - 1 for i in range(len(out))]
