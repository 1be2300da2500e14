"""The code predictor's whole frame as one Numba call (engine.core.cpu.numba_predictor) against the per-pass path it
replaces (engine.core.frames.codes.predict_codes_by_position over the same Numba steps): the same codes, bit for bit,
and the frame's embedding sum equal to ``Talker.embed_frame``; its draws against ``engine.core.sampling``'s for hostile
logits."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import engine.core.cpu.one_position_numba as jit
from engine import Engine, Sampling, Voice
from engine.core.frames.eager import FrameGenerator
from engine.core.prompts import build_prompt
from engine.core.sampling import StageSettings, _sample_one_row

pytestmark = pytest.mark.skipif(jit.numba is None, reason="Numba is not installed")


@pytest.fixture(scope="module")
def as_wide(tmp_path_factory):
    """A tiny model whose predictor is as wide as its talker (as the 0.6B's): no projection between them."""
    from engine.synthetic import checkpoint

    saved = checkpoint._PREDICTOR["tiny"]
    checkpoint._PREDICTOR["tiny"] = (64, 96, 2, 4, 2, 16)
    try:
        path = checkpoint.build_checkpoint(tmp_path_factory.mktemp("tiny_wide"), "tiny", "custom_voice", seed=1)
    finally:
        checkpoint._PREDICTOR["tiny"] = saved
    return Engine.from_pretrained(path, device="cpu", cpu_int8=True)


def frames(engine, sampling: Sampling, fused: bool, n: int = 24) -> tuple[torch.Tensor, list]:
    talker = engine.model.talker
    prompt = build_prompt(talker, engine.config, engine.tokenizer, Voice.preset("vivian", "english"),
                          "A fused frame of codes.")
    gen = FrameGenerator(talker, prompt, sampling, n, 1)
    assert gen.fused is not None  # the Numba steps run here
    if not fused:
        gen.fused = None
    codes, sums = [], []
    for frame in gen.frames():
        codes.append(frame)
        sums.append(None if gen.embedded is None else gen.embedded.clone())
    return torch.stack(codes), sums


@pytest.mark.parametrize("model", ["fast", "as_wide"])
@pytest.mark.parametrize("greedy", [True, False], ids=["greedy", "top_k"])
def test_a_fused_frame_is_the_per_pass_frame(model, greedy, request):
    engine = request.getfixturevalue(model)
    sampling = Sampling(min_frames=64, seed=5, sub_greedy=greedy)
    got, sums = frames(engine, sampling, fused=True)
    expected, expected_sums = frames(engine, sampling, fused=False)
    assert got.shape == (24, 16) and torch.equal(got, expected)
    assert all(s is None for s in expected_sums)
    talker = engine.model.talker
    with torch.inference_mode():
        for codes, total in zip(got, sums, strict=True):
            assert torch.equal(total, talker.embed_frame(codes[None]))  # the sum the next talker step reads
    if not greedy:  # the draws are not all argmaxes
        greedy_codes, _ = frames(engine, Sampling(min_frames=64, seed=5, sub_greedy=True), fused=True)
        assert not torch.equal(got[:, 1:], greedy_codes[:, 1:])


def test_top_p_takes_the_per_pass_path(fast):
    sampling = Sampling(min_frames=64, seed=5, sub_top_p=0.8)
    got, sums = frames(fast, sampling, fused=True, n=6)
    expected, _ = frames(fast, sampling, fused=False, n=6)
    assert torch.equal(got, expected) and all(s is None for s in sums)  # sums from the fused frame: none


def stage(greedy: bool, temperature: float, top_k: int) -> StageSettings:
    s = StageSettings.allocate(1, "cpu")
    s.set_row(0, greedy, temperature, top_k, 1.0)
    return s


@settings(max_examples=300, deadline=None)
@given(logits=hnp.arrays(np.float32, st.integers(2, 96),
                         elements=st.one_of(st.floats(-1e4, 1e4, width=32), st.sampled_from([0.0, 1.0, -1.0]),
                                            st.just(float("-inf")), st.just(float("inf")))),
       data=st.data(), greedy=st.booleans(), temperature=st.floats(0.0625, 3.0, width=32))
def test_a_draw_is_the_samplers(logits, data, greedy, temperature):
    from engine.core.cpu.numba_predictor import _draw

    vocab = logits.shape[0]
    top_k = data.draw(st.integers(1, vocab - 1))
    noise = data.draw(hnp.arrays(np.float32, vocab, elements=st.floats(2**-24, 1 - 2**-24, width=32)))
    s = stage(greedy, temperature, top_k)
    expected = _sample_one_row(torch.from_numpy(logits.copy())[None], s, torch.zeros(1, dtype=torch.int64),
                               torch.zeros(1, dtype=torch.int64), torch.from_numpy(noise)[None])
    gumbel = torch.log(-torch.log(torch.from_numpy(noise))).numpy()
    got = _draw(logits.copy(), gumbel, greedy, np.float32(s.temperature[0]), top_k, np.empty(vocab, np.float32))
    assert got == int(expected[0])


def test_a_nan_logit_is_drawn_as_torch_draws_it():
    from engine.core.cpu.numba_predictor import _draw

    logits = np.array([1.0, np.nan, 3.0, np.nan], np.float32)
    assert _draw(logits.copy(), np.zeros(4, np.float32), True, np.float32(1), 2, np.empty(4, np.float32)) == \
        int(torch.from_numpy(logits).argmax()) == 1


def test_warming_up_runs_the_predictor_frame(fast, monkeypatch):
    """The engine's warm-up makes a frame through the predictor frame's call: its compile (seconds, once a
    machine) comes at load, not before the first audio."""
    from engine.core.cpu import numba_predictor

    calls = []
    real = numba_predictor._frame
    monkeypatch.setattr(numba_predictor, "_frame", lambda *args: (calls.append(1), real(*args))[1])
    fast.warmup()
    assert calls
