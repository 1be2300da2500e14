"""Test helpers: many ``BatchedStreams.stream`` callers at once, each on its own thread, and the check
that a caller got what it would have got alone."""

from __future__ import annotations

import threading

import numpy as np


def stream_concurrently(streams, requests, chunk_frames: int, timeout_s: float = 300) -> dict[int, list]:
    """Run ``streams.stream(text, voice, ...)`` for every (text, voice, sampling, max_frames) of ``requests``
    on its own thread, all at once (first chunks of 1 frame); returns each caller's chunks by index."""
    results: dict[int, list] = {}
    errors: list[BaseException] = []

    def call(i, text, voice, sampling, frames):
        try:
            results[i] = list(streams.stream(text, voice, chunk_frames=chunk_frames, first_chunk_frames=1,
                                             sampling=sampling, max_frames=frames))
        except BaseException as e:  # noqa: BLE001 - raised below, on the test's thread
            errors.append(e)

    threads = [threading.Thread(target=call, args=(i, *r)) for i, r in enumerate(requests)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=timeout_s)
    if errors:
        raise errors[0]
    return results


def assert_same_chunks(got: list, alone: list, atol: float) -> None:
    """Two chunk lists of one call: the same segments, frames and final marks, and audio within ``atol``."""
    assert [(c.segment, c.first_frame, c.n_frames, c.final) for c in got] == \
        [(c.segment, c.first_frame, c.n_frames, c.final) for c in alone]
    np.testing.assert_allclose(np.concatenate([c.samples for c in got]),
                               np.concatenate([c.samples for c in alone]), atol=atol)
