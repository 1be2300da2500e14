"""The fast path's static-buffer frame step, run eagerly (CPU), equals the reference eager streamer."""

from __future__ import annotations

import numpy as np
import pytest

from engine import Sampling, Voice
from engine.core.frames.eager import EagerStreamer
from engine.core.frames.graphs.runner import GraphStreamer

TEXT = "One sentence here. And a second one, a little longer than the first!"


def _run(eng, streamer, voice, sampling, chunk=(1, 4)):
    eng._single = streamer
    try:
        return list(eng.stream(TEXT, voice, chunk_frames=chunk[1], first_chunk_frames=chunk[0],
                               sampling=sampling, max_frames=14))
    finally:
        eng._single = None


def _icl_voice(eng):
    rng = np.random.default_rng(1)
    return Voice("clone", language="english", ref_text="Some reference words.",
                 speaker_embedding=rng.standard_normal(eng.config.talker_config.hidden_size).astype(np.float32),
                 ref_codes=rng.integers(0, 2048, size=(6, 16)))


@pytest.mark.parametrize("sampling", [Sampling(greedy=True), Sampling(seed=21)], ids=["greedy", "seeded"])
@pytest.mark.parametrize("model_type", ["custom_voice", "base"])
def test_static_step_equals_reference(plan_engine, model_type, sampling):
    eng = plan_engine("exact", model_type)  # two frame loops held equal sample for sample: the exact plan
    voice = Voice.preset("vivian", "english") if model_type == "custom_voice" else _icl_voice(eng)
    ref = _run(eng, EagerStreamer(eng.model.talker, eng.decoder), voice, sampling)
    fast = _run(eng, GraphStreamer(eng.model.talker, eng.decoder, (1, 4), enabled=False), voice, sampling)
    assert [(c.segment, c.first_frame, c.n_frames, c.final) for c in fast] == \
        [(c.segment, c.first_frame, c.n_frames, c.final) for c in ref]
    np.testing.assert_allclose(np.concatenate([c.samples for c in fast]),
                               np.concatenate([c.samples for c in ref]), atol=1e-5)


def test_static_step_stops_at_eos_and_never_decodes_past_it(tiny_model_dir):
    """A stream that ends on EOS mid-chunk yields exactly the frames before EOS, decoded exactly."""
    import torch

    from engine import Engine

    eng = Engine.from_pretrained(tiny_model_dir("custom_voice"), precision="exact")  # decoded exactly
    voice, greedy = Voice.preset("ryan", "english"), Sampling(greedy=True)
    free = eng.generate_codes("Hi.", voice, greedy, max_frames=12)
    # make EOS outscore the code greedy decoding picks at frame 6, so the utterance ends early
    head = eng.model.talker.codec_head.weight
    with torch.no_grad():
        head[eng.config.talker_config.codec_eos_token_id] = 4 * head[int(free[6, 0])]
    ref = eng.generate_codes("Hi.", voice, greedy, max_frames=40)
    assert 2 <= len(ref) <= 6
    eng._single = GraphStreamer(eng.model.talker, eng.decoder, (3, 5), enabled=False)
    chunks = list(eng.stream("Hi.", voice, chunk_frames=5, first_chunk_frames=3, sampling=greedy, max_frames=40))
    whole = eng.synthesize("Hi.", voice, greedy, max_frames=40)
    assert sum(c.n_frames for c in chunks) == len(ref) and chunks[-1].final
    np.testing.assert_array_equal(whole.codes, ref)
    np.testing.assert_allclose(np.concatenate([c.samples for c in chunks]), whole.samples, atol=1e-5)


def test_a_separate_capture_stream_is_never_the_default_one(monkeypatch):
    """Streams come from a pool in turn; the decode graphs' capture stream is one the other graphs are not
    captured on (graphs captured on one stream share its cuBLAS workspace), even when the pool hands out
    the default one next."""
    import torch

    from engine.core.frames.graphs.capture import separate_capture_stream

    class PoolStream:  # torch.cuda.Stream on a CPU build cannot be made: a pool of three, handed out in turn
        handed = 0

        def __init__(self, device=None):
            self.id = PoolStream.handed % 3
            PoolStream.handed += 1

        def __eq__(self, other):
            return self.id == other.id

        __hash__ = None

    monkeypatch.setattr(torch.cuda, "Stream", PoolStream)
    monkeypatch.setattr(torch.cuda.graph, "default_capture_stream", None)
    for _ in range(4):  # whichever stream the pool would hand out next
        stream = separate_capture_stream(torch.device("cuda"))
        assert stream != torch.cuda.graph.default_capture_stream
    assert torch.cuda.graph.default_capture_stream.id == 0  # made once, as torch.cuda.graph would
    PoolStream.handed = 0  # the pool's next stream is the default one: skipped
    assert separate_capture_stream(torch.device("cuda")).id == 1
