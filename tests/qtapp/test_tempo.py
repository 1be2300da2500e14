"""ChunkTempo: per-sentence stretching of a chunk stream; lengths, tags and the final flag."""

from __future__ import annotations

import numpy as np

from engine.audio.chunks import SAMPLE_RATE, Chunk
from qtapp.tempo import ChunkTempo


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
        given = sum(len(s) for s, g in pieces if g == seg)
        assert sum(len(c.samples) for c in out if c.segment == seg) == round(given / 1.6)
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
    given = chunk(np.ones(1920, dtype=np.float32), 0, final=True)
    tempo = ChunkTempo(1.0)
    assert tempo.feed(given) == [given] and tempo.feed(given)[0] is given
    assert tempo.finish() == []
