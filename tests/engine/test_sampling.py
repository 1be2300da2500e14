"""Sampling: the filters match transformers' warpers, the sampler is exact and reproducible, the
talker's logits processor penalises, floors EOS and suppresses control ids, settings are validated."""

from __future__ import annotations

import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from transformers import (
    RepetitionPenaltyLogitsProcessor,
    TemperatureLogitsWarper,
    TopKLogitsWarper,
    TopPLogitsWarper,
)

from engine import OratorError, SamplingError
from engine.core.frames.codes import CODEBOOK_SIZE, TalkerLogitsProcessor
from engine.core.noise import uniform_noise
from engine.core.sampling import (
    FLOAT_RANGES,
    INT_RANGES,
    MAX_SEED,
    Sampling,
    StageSettings,
    filter_logits,
    sample,
)

SETTINGS = [  # (temperature, top_k, top_p); top_k 0 = off
    (1.0, 0, 1.0), (0.9, 50, 1.0), (0.7, 0, 0.8), (1.3, 20, 0.9), (0.5, 3, 0.5), (2.0, 5000, 0.95), (1.0, 1, 1.0),
]


def stage(rows, greedy=False) -> StageSettings:
    s = StageSettings.allocate(len(rows), "cpu")
    for i, (temperature, top_k, top_p) in enumerate(rows):
        s.set_row(i, greedy, temperature, top_k, top_p)
    return s


def transformers_filter(logits: torch.Tensor, temperature: float, top_k: int, top_p: float) -> torch.Tensor:
    """The warper chain transformers' ``generate`` builds for these settings (top_k 0 / top_p 1 skipped)."""
    warpers = [TemperatureLogitsWarper(temperature)]
    if top_k:
        warpers.append(TopKLogitsWarper(top_k))
    if top_p < 1.0:
        warpers.append(TopPLogitsWarper(top_p))
    scores = logits.clone()
    for w in warpers:
        scores = w(None, scores)
    return scores


def assert_same_filter(ours: torch.Tensor, theirs: torch.Tensor) -> None:
    assert torch.equal(torch.isfinite(ours), torch.isfinite(theirs))
    keep = torch.isfinite(theirs)
    torch.testing.assert_close(ours[keep], theirs[keep])


@pytest.mark.parametrize(("temperature", "top_k", "top_p"), SETTINGS)
def test_filter_matches_transformers_warpers(temperature, top_k, top_p):
    logits = torch.randn(4, 3072, generator=torch.Generator().manual_seed(top_k)) * 3
    ours = filter_logits(logits, stage([(temperature, top_k, top_p)] * 4))
    assert_same_filter(ours, transformers_filter(logits, temperature, top_k, top_p))


def test_filter_applies_each_rows_own_settings():
    logits = torch.randn(len(SETTINGS), 2048, generator=torch.Generator().manual_seed(1)) * 2
    ours = filter_logits(logits, stage(SETTINGS))
    for row, (temperature, top_k, top_p) in enumerate(SETTINGS):
        assert_same_filter(ours[row:row + 1], transformers_filter(logits[row:row + 1], temperature, top_k, top_p))


def test_filter_keeps_the_requested_number_of_ids():
    logits = torch.randn(3, 100, generator=torch.Generator().manual_seed(2))
    kept = torch.isfinite(filter_logits(logits, stage([(1.0, 1, 1.0), (1.0, 7, 1.0), (1.0, 0, 1.0)]))).sum(-1)
    assert kept.tolist() == [1, 7, 100]


def test_greedy_rows_return_argmax_and_others_sample():
    n = 64
    logits = torch.zeros(n, 16)
    logits[:, 3] = 0.1  # nearly flat: sampling rows rarely pick the argmax
    s = stage([(1.0, 0, 1.0)] * n)
    s.greedy[: n // 2] = True
    ids = sample(logits, s, torch.full((n,), 7), torch.arange(n))
    assert (ids[: n // 2] == 3).all()
    assert (ids[n // 2:] != 3).sum() > n // 4


def test_top_k_one_always_returns_argmax():
    logits = torch.randn(256, 3072, generator=torch.Generator().manual_seed(3))
    ids = sample(logits, stage([(1.5, 1, 1.0)] * 256), torch.arange(256), torch.arange(256) * 16)
    assert torch.equal(ids, logits.argmax(-1))


def test_seeded_sampling_is_deterministic_and_seed_dependent():
    logits = torch.randn(32, 2048, generator=torch.Generator().manual_seed(4))
    s = stage([(0.9, 50, 1.0)] * 32)
    counter = torch.arange(32) * 16 + 5
    a = sample(logits, s, torch.full((32,), 123), counter)
    b = sample(logits, s, torch.full((32,), 123), counter)
    c = sample(logits, s, torch.full((32,), 124), counter)
    d = sample(logits, s, torch.full((32,), 123), counter + 1)
    assert torch.equal(a, b)
    assert (a != c).any() and (a != d).any()


def test_noise_is_uniform_in_the_open_interval():
    u = uniform_noise(torch.tensor([0, 1, -5]), torch.tensor([0, 0, 10**12]), 50_000)
    assert (u > 0).all() and (u < 1).all()
    assert abs(u.mean().item() - 0.5) < 0.01 and abs(u.var().item() - 1 / 12) < 0.005
    assert not torch.equal(u[0], u[1])


# chi-square critical value at p = 0.001 for the degrees of freedom used below
_CHI2_CRITICAL = {3: 16.27, 5: 20.52}


@pytest.mark.parametrize(("temperature", "top_k", "top_p"), [(1.0, 0, 1.0), (0.7, 4, 1.0), (1.0, 0, 0.9)])
def test_draws_follow_the_filtered_softmax(temperature, top_k, top_p):
    draws = 40_000
    logits = torch.tensor([2.0, 1.0, 0.5, 0.0, -0.5, -1.0])
    s = stage([(temperature, top_k, top_p)])
    expected = filter_logits(logits[None], s)[0].softmax(-1)  # [V]
    rows = stage([(temperature, top_k, top_p)] * draws)
    ids = sample(logits.expand(draws, -1), rows, torch.full((draws,), 99), torch.arange(draws))
    counts = torch.bincount(ids, minlength=6).double()
    allowed = expected > 0
    assert counts[~allowed].sum() == 0  # filtered ids are never drawn
    e = expected[allowed].double() * draws
    chi2 = ((counts[allowed] - e) ** 2 / e).sum().item()
    assert chi2 < _CHI2_CRITICAL[int(allowed.sum()) - 1]


@pytest.mark.parametrize("bad", [
    {"temperature": 0}, {"temperature": -1.0}, {"sub_temperature": 0}, {"top_p": 0}, {"top_p": 1.01},
    {"sub_top_p": 0}, {"top_k": -1}, {"sub_top_k": -3}, {"min_frames": -1}, {"repetition_penalty": 0},
])
def test_sampling_refuses_bad_values(bad):
    name = next(iter(bad))
    with pytest.raises(ValueError, match=name):
        Sampling(**bad)


@pytest.mark.parametrize("bad", [
    {"temperature": float("inf")}, {"temperature": float("nan")}, {"temperature": 1e999}, {"top_p": float("nan")},
    {"repetition_penalty": float("inf")}, {"top_k": 2**70}, {"sub_top_k": 2**63}, {"min_frames": 10**6},
    {"seed": 2**63}, {"seed": -1}, {"top_k": 3.5}, {"temperature": "0.9"}, {"greedy": "yes"}, {"top_k": True},
])
def test_sampling_refuses_values_that_would_poison_a_batch_with_a_typed_error(bad):
    """Non-finite, huge or mistyped values would overflow a device tensor or the sampler for every stream of a
    batch: ``SamplingError`` (an ``OratorError``) names the field before any stream sees them."""
    name = next(iter(bad))
    with pytest.raises(SamplingError, match=name) as caught:
        Sampling(**bad)
    assert caught.value.field == name and isinstance(caught.value, OratorError)


@settings(max_examples=200, deadline=None)
@given(st.sampled_from(["temperature", "sub_temperature", "top_p", "sub_top_p", "repetition_penalty", "top_k",
                        "sub_top_k", "min_frames", "seed"]),
       st.one_of(st.floats(allow_nan=True, allow_infinity=True), st.integers(-(2**70), 2**70), st.booleans(),
                 st.none(), st.text(max_size=3)))
def test_sampling_holds_only_values_inside_its_ranges(name, value):
    try:
        sampling = Sampling(**{name: value})
    except SamplingError as e:
        assert e.field == name
        return
    held = getattr(sampling, name)
    if name == "seed":
        assert held is None or 0 <= held < MAX_SEED
        return
    low, high = {**FLOAT_RANGES, **INT_RANGES}[name]
    assert math.isfinite(held) and low <= held <= high and not isinstance(held, bool)


def test_sampling_accepts_edge_values():
    s = Sampling(top_p=1.0, top_k=0, min_frames=0, temperature=1e-3, greedy=True, sub_greedy=False)
    assert s.predictor_greedy is False and Sampling(greedy=True).predictor_greedy is True


EOS = 2150


def processor(penalties, min_frames) -> TalkerLogitsProcessor:
    p = TalkerLogitsProcessor(3072, EOS, len(penalties), "cpu")
    p.penalty[:] = torch.tensor(penalties)
    p.min_frames[:] = torch.tensor(min_frames)
    return p


def test_repetition_penalty_matches_transformers_on_both_signs():
    logits = torch.randn(2, 3072, generator=torch.Generator().manual_seed(5)) * 4
    seen = [[10, 11, 12, 500, 2047], [3, 4, 4, 3, 4]]  # code-0 history of each row, frame by frame
    logits[0, 10], logits[0, 11] = 2.0, -2.0  # one seen id of each sign for sure
    proc = processor([1.3, 1.05], [0, 0])
    for frame_ids in zip(*seen, strict=True):
        proc.record(torch.tensor(frame_ids))
    out = proc(logits.clone(), torch.tensor([5, 5]))
    for row, penalty in enumerate((1.3, 1.05)):
        theirs = RepetitionPenaltyLogitsProcessor(penalty)(torch.tensor([seen[row]]), logits[row:row + 1].clone())
        torch.testing.assert_close(out[row, :CODEBOOK_SIZE], theirs[0, :CODEBOOK_SIZE])
    assert out[0, 10] == pytest.approx(2.0 / 1.3) and out[0, 11] == pytest.approx(-2.0 * 1.3)
    assert out[0, 13] == logits[0, 13]  # unseen ids untouched


def test_eos_is_blocked_before_min_frames_per_row():
    logits = torch.zeros(2, 3072)
    proc = processor([1.0, 1.0], [2, 0])
    for frame, first_row_open in ((0, False), (1, False), (2, True), (3, True)):
        out = proc(logits.clone(), torch.tensor([frame, frame]))
        assert torch.isfinite(out[0, EOS]).item() == first_row_open
        assert torch.isfinite(out[1, EOS])


def test_control_ids_are_suppressed_except_eos():
    logits = torch.randn(1, 3072, generator=torch.Generator().manual_seed(6))
    out = processor([1.0], [0])(logits.clone(), torch.tensor([0]))
    finite = torch.isfinite(out[0])
    assert finite[:CODEBOOK_SIZE].all()
    assert finite.nonzero().flatten().tolist() == [*range(CODEBOOK_SIZE), EOS]
    assert torch.equal(out[0, :CODEBOOK_SIZE], logits[0, :CODEBOOK_SIZE])


def test_top_k_keeps_every_token_tied_with_the_kth_and_draws_are_deterministic():
    """Low-precision logits tie often: the kept set must not depend on how a sort orders ties."""
    from engine.core.sampling import StageSettings, filter_logits, sample

    logits = torch.tensor([[1.0, 3.0, 3.0, 2.0, 3.0, 0.5]])
    s = StageSettings.allocate(1, "cpu")
    s.set_row(0, False, 1.0, 2, 1.0)
    assert torch.isfinite(filter_logits(logits, s))[0].tolist() == [False, True, True, False, True, False]
    seeds = torch.tensor([7])
    draws = [int(sample(logits, s, seeds, torch.tensor([c]))[0]) for c in range(300)]
    assert set(draws) == {1, 2, 4}
    assert draws == [int(sample(logits, s, seeds, torch.tensor([c]))[0]) for c in range(300)]


@settings(max_examples=200, deadline=None)
@given(vocab=st.integers(2, 300), greedy=st.booleans(), temperature=st.floats(0.05, 3.0),
       top_k=st.integers(0, 320), top_p=st.sampled_from([1.0, 1.0, 0.9, 0.3]), levels=st.integers(0, 8),
       seed=st.integers(0, MAX_SEED), counter=st.integers(0, 2**40), given_noise=st.booleans())
def test_one_row_on_the_host_draws_what_the_reference_draws(vocab, greedy, temperature, top_k, top_p, levels, seed,
                                                            counter, given_noise):
    """``sample`` of one CPU row reads its settings and skips the sort (``_sample_one_row``): it must pick the
    reference's token for any settings, with ties (logits rounded to a few levels), with or without the noise
    given."""
    from engine.core.sampling import sample_reference

    g = torch.Generator().manual_seed(seed % 2**31)
    logits = torch.randn(1, vocab, generator=g) * 4
    if levels:
        logits = (logits * levels).round() / levels  # many exact ties
    s = StageSettings.allocate(1, "cpu")
    s.set_row(0, greedy, temperature, top_k, top_p)
    seeds, counters = torch.tensor([seed]), torch.tensor([counter])
    noise = uniform_noise(seeds, counters, vocab) if given_noise else None
    got = sample(logits, s, seeds, counters, noise)
    expected = sample_reference(logits, s, seeds, counters, noise)
    assert got.shape == expected.shape == (1,) and got.dtype == torch.int64
    assert int(got[0]) == int(expected[0])
