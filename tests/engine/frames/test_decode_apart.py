"""The CPU decoder on a thread of its own (engine.frames.decode_apart): the same chunks, in the same order, with the
same audio as decoding between frames; errors and cancelling charged to the call that met them."""

from __future__ import annotations

import threading

import numpy as np
import pytest
import torch

from engine import Engine, Sampling, Voice
from engine.frames import decode_apart
from engine.frames.decode_apart import DecodeApart, decoder_threads
from engine.frames.threads import ThreadGovernor

TEXT = "First sentence here. And a second one, a little longer than the first."
VOICE = Voice.preset("vivian", "english")


def engine_with(tiny_model_dir, engine_options, threads: int) -> Engine:
    engine_options(decoder_threads=threads)
    return Engine.from_pretrained(tiny_model_dir("custom_voice"), device="cpu", cpu_int8=True)


def stream_of(eng: Engine, **kwargs):
    """Two segments of 14 frames each, in a 1-frame chunk then 3-frame ones."""
    return eng.stream(TEXT, VOICE, chunk_frames=3, first_chunk_frames=1, sampling=Sampling(seed=7, min_frames=20),
                      max_frames=14, largest_chunk_frames=3, segment_chars=0, **kwargs)


def chunks_of(eng: Engine, **kwargs) -> list:
    return list(stream_of(eng, **kwargs))


@pytest.fixture(scope="module")
def inline_chunks(tiny_model_dir):
    from engine import options

    before = options.current()
    options.configure(decoder_threads=0)
    try:
        eng = Engine.from_pretrained(tiny_model_dir("custom_voice"), device="cpu", cpu_int8=True)
        assert eng._single_streamer().apart is None
        return chunks_of(eng)
    finally:
        options.configure(before)


def test_the_chunks_are_those_decoded_between_frames(tiny_model_dir, engine_options, inline_chunks):
    eng = engine_with(tiny_model_dir, engine_options, 1)
    assert eng._single_streamer().apart is not None
    got = chunks_of(eng)
    assert len({c.segment for c in inline_chunks}) == 2 and len(inline_chunks) > 6  # first chunks, then apart
    assert [(c.segment, c.first_frame, c.n_frames, c.final) for c in got] == \
           [(c.segment, c.first_frame, c.n_frames, c.final) for c in inline_chunks]
    for a, b in zip(got, inline_chunks, strict=True):
        assert a.samples.shape == b.samples.shape
        np.testing.assert_allclose(a.samples, b.samples, rtol=0, atol=1e-5)
    again = chunks_of(eng)  # the decoder state starts afresh each call
    assert all(np.array_equal(a.samples, b.samples) for a, b in zip(again, got, strict=True))


def test_a_decode_error_reaches_its_caller_and_the_next_call_runs(tiny_model_dir, engine_options, inline_chunks):
    eng = engine_with(tiny_model_dir, engine_options, 1)
    real = eng.decoder.decode_chunk
    calls = {"n": 0}

    def failing(codes, state):
        calls["n"] += 1
        if calls["n"] == 3:
            raise RuntimeError("decoder broke")
        return real(codes, state)

    eng.decoder.decode_chunk = failing
    got = []
    with pytest.raises(RuntimeError, match="decoder broke"):
        for chunk in stream_of(eng):
            got.append(chunk)
    assert len(got) == 2  # the chunks before the failed one, in order
    eng.decoder.decode_chunk = real
    after = chunks_of(eng)
    assert [c.n_frames for c in after] == [c.n_frames for c in inline_chunks]


def test_a_cancelled_or_abandoned_call_leaves_no_decode_running(tiny_model_dir, engine_options, inline_chunks):
    eng = engine_with(tiny_model_dir, engine_options, 1)
    cancel = threading.Event()
    for i, _ in enumerate(stream_of(eng, cancel=cancel)):
        if i == 2:
            cancel.set()
    stream = stream_of(eng)
    next(stream), next(stream), next(stream)
    stream.close()  # the consumer walks away with chunks still decoding
    after = chunks_of(eng)
    assert [c.n_frames for c in after] == [c.n_frames for c in inline_chunks]
    for a, b in zip(after, inline_chunks, strict=True):
        np.testing.assert_allclose(a.samples, b.samples, rtol=0, atol=1e-5)


def test_the_decoder_thread_keeps_its_own_thread_count():
    torch.set_num_threads(2)
    main = torch.get_num_threads()
    apart = DecodeApart(1)
    try:
        assert apart.submit(torch.get_num_threads).result() == 1
        assert apart.submit(lambda: threading.current_thread().name).result().startswith("orator-decoder")
        assert torch.get_num_threads() == main
    finally:
        apart.close()
    with pytest.raises(ValueError):
        DecodeApart(0)


def test_the_decoder_gets_a_core_of_its_own_only_where_there_are_enough(monkeypatch, engine_options):
    monkeypatch.setattr(decode_apart, "DECODE_APART_CORES", 6)
    for cores, expected in ((2, 0), (4, 0), (6, 1), (16, 1)):
        monkeypatch.setattr(decode_apart, "available_cores", lambda cores=cores: cores)
        assert decoder_threads() == expected
    engine_options(decoder_threads=3)
    assert decoder_threads() == 3
    engine_options(decoder_threads=0)
    assert decoder_threads() == 0
    engine_options(decoder_threads=None)
    monkeypatch.setattr(decode_apart, "DECODE_APART_CORES", 0)  # off whatever the cores
    assert decoder_threads() == 0


def test_the_governor_leaves_the_decoders_cores_out(monkeypatch):
    from engine.frames import threads

    monkeypatch.setattr(threads, "available_cores", lambda: 8)
    assert ThreadGovernor.for_this_machine().choices == [7, 8]
    assert ThreadGovernor.for_this_machine(reserved=1).choices == [6, 7]
    monkeypatch.setattr(threads, "available_cores", lambda: 2)
    assert ThreadGovernor.for_this_machine(reserved=1) is None


def test_a_whole_synthesis_decodes_its_first_chunk_apart_too(tiny_model_dir, engine_options):
    """``synthesize`` has no listener waiting for a first chunk: its 25-frame chunks all but the last decode apart."""
    audio = {}
    for threads in (0, 1):
        eng = engine_with(tiny_model_dir, engine_options, threads)
        submitted = []
        apart = eng._single_streamer().apart
        if apart is not None:
            apart.submit = lambda fn, *args, real=apart.submit, seen=submitted: seen.append(1) or real(fn, *args)
        audio[threads] = eng.synthesize(TEXT, VOICE, Sampling(seed=3, min_frames=40), max_frames=40)
        assert len(submitted) == threads  # the 25-frame chunk apart, the 15-frame last one at once
    assert np.array_equal(audio[0].codes, audio[1].codes) and audio[1].codes.shape[0] == 40
    np.testing.assert_allclose(audio[1].samples, audio[0].samples, rtol=0, atol=1e-5)
