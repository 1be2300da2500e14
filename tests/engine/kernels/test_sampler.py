"""The Triton sampler (engine/core/gpu_kernels/sampler.py) draws exactly the ids of the PyTorch reference sampler.

On a machine without CUDA the kernel runs under Triton's interpreter (tests/conftest.py sets
TRITON_INTERPRET=1 before anything imports Triton); on a GPU it runs compiled, and also inside
``torch.compile(fullgraph=True)`` code replayed from a CUDA graph. Logits are distinct random values,
so the kept sets and the draws must match id for id; explicit ties check that top-k keeps every token
tied with the k-th and that top-p cuts a tied group in index order, as the reference's stable sort does.
"""

from __future__ import annotations

import pytest
import torch

pytest.importorskip("triton", reason="Triton is not installed (the test extra brings it)")

from engine.core.gpu_kernels.sampler import sample_rows, sample_triton  # noqa: E402
from engine.core.noise import uniform_noise  # noqa: E402
from engine.core.sampling import (  # noqa: E402
    StageSettings,
    filter_logits,
    sample,
    sample_reference,
)

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"

# (greedy, temperature, top_k, top_p); top_k 0 and top_p 1 are off
SETTINGS = {
    "greedy": (True, 0.9, 50, 0.9),
    "plain": (False, 1.0, 0, 1.0),
    "top_k": (False, 1.0, 50, 1.0),
    "top_k_1": (False, 1.0, 1, 1.0),
    "top_p": (False, 1.0, 0, 0.8),
    "top_k_and_p": (False, 0.9, 40, 0.7),
    "temperature": (False, 0.6, 0, 1.0),
    "hot_top_p": (False, 1.7, 0, 0.95),
    "k_above_vocab": (False, 0.9, 5000, 1.0),
    "k_is_vocab_small_p": (False, 1.0, -1, 0.05),  # -1: k = V
}


def stage(rows) -> StageSettings:
    s = StageSettings.allocate(len(rows), DEVICE)
    for i, (greedy, temperature, top_k, top_p) in enumerate(rows):
        s.set_row(i, greedy, temperature, top_k, top_p)
    return s


def distinct_logits(batch: int, vocab: int, seed: int, scale: float = 3.0) -> torch.Tensor:
    """Random logits with no two equal values in a row (a random permutation of spaced values, jittered)."""
    g = torch.Generator().manual_seed(seed)
    base = torch.linspace(-scale * 3, scale * 3, vocab, dtype=torch.float64)
    rows = [base[torch.randperm(vocab, generator=g)] for _ in range(batch)]
    x = torch.stack(rows) + torch.rand(batch, vocab, generator=g, dtype=torch.float64) * (3 * scale / vocab)
    x = x.float()
    assert all(row.unique().numel() == vocab for row in x)
    return x.to(DEVICE)


def draws(batch: int, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    seeds = torch.randint(-(2**62), 2**62, (batch,), generator=g)
    counter = torch.randint(0, 2**40, (batch,), generator=g)
    return seeds.to(DEVICE), counter.to(DEVICE)


def assert_same_ids(logits, s, seeds, counter) -> torch.Tensor:
    ours = sample_triton(logits, s, seeds, counter)
    theirs = sample_reference(logits, s, seeds, counter)
    assert ours.dtype == torch.int64 and ours.shape == (logits.shape[0],)
    assert torch.equal(ours, theirs), (ours.tolist(), theirs.tolist())
    return ours


@pytest.mark.parametrize("vocab", [2048, 3072])
@pytest.mark.parametrize("name", list(SETTINGS))
def test_each_setting_draws_the_reference_ids(name, vocab):
    greedy, temperature, top_k, top_p = SETTINGS[name]
    batch = 8  # each row its own seed and counter
    s = stage([(greedy, temperature, vocab if top_k == -1 else top_k, top_p)] * batch)
    logits = distinct_logits(batch, vocab, seed=vocab + len(name))
    ids = assert_same_ids(logits, s, *draws(batch, seed=len(name)))
    if greedy or top_k == 1:
        assert torch.equal(ids, logits.argmax(-1))
    else:
        assert ids.unique().numel() > 1  # really drawn, not an argmax


@pytest.mark.parametrize("vocab", [2048, 3072])
def test_every_row_uses_its_own_settings(vocab):
    rows = [SETTINGS[n] for n in ("greedy", "top_k_and_p", "top_p", "temperature", "top_k")]
    s = stage(rows)
    for rep in range(4):
        logits = distinct_logits(len(rows), vocab, seed=100 + rep, scale=1.0 + rep)
        assert_same_ids(logits, s, *draws(len(rows), seed=200 + rep))


def test_single_row_over_many_counters():
    """One row's successive draws (counters 0..11) are the reference's, each from the filtered nucleus, and over
    many counters the reference draws each kept token about as often as its filtered probability."""
    s = stage([SETTINGS["top_k_and_p"]])
    logits = distinct_logits(1, 3072, seed=7, scale=0.3)  # flat enough that the nucleus keeps many tokens
    probs = filter_logits(logits, s).softmax(dim=-1)[0]  # [V]; zero outside top-k and top-p
    kept = set(torch.nonzero(probs).flatten().tolist())
    assert 5 <= len(kept) <= 40
    seeds = torch.tensor([12345], device=DEVICE)
    ids = [int(assert_same_ids(logits, s, seeds, torch.tensor([c], device=DEVICE))[0]) for c in range(12)]
    assert set(ids) <= kept
    n = 4000
    many = sample_reference(logits.expand(n, -1), stage([SETTINGS["top_k_and_p"]] * n), seeds.expand(n),
                            torch.arange(n, device=DEVICE))
    counts = torch.bincount(many, minlength=probs.numel()).double() / n
    assert set(many.tolist()) <= kept
    assert torch.allclose(counts, probs.double(), atol=4 * (0.25 / n) ** 0.5)  # four standard errors at most


def test_the_op_takes_strided_rows_and_settings():
    """A column slice of wider logits and every-other-element settings: strides reach the kernel."""
    wide = distinct_logits(4, 3000, seed=9)
    logits = wide[:, :2048]
    big = stage([SETTINGS[n] for n in ("top_k", "greedy", "top_p", "plain", "top_k_and_p", "plain", "hot_top_p",
                                       "plain")])
    s = StageSettings(big.greedy[::2], big.temperature[::2], big.top_k[::2], big.top_p[::2])
    seeds, counter = draws(8, seed=3)
    ours = sample_rows(logits, s.greedy, s.temperature, s.top_k, s.top_p, seeds[::2], counter[::2])
    assert torch.equal(ours, sample_reference(logits, s, seeds[::2], counter[::2]))


def test_top_k_keeps_every_token_tied_with_the_kth():
    """k = 2 over [1, 3, 3, 2, 3, 0.5]: the three 3s all stay, and only they are drawn, as in the reference."""
    n = 48
    logits = torch.tensor([[1.0, 3.0, 3.0, 2.0, 3.0, 0.5]], device=DEVICE).expand(n, -1)
    s = stage([(False, 1.0, 2, 1.0)] * n)
    seeds, counter = torch.full((n,), 7, device=DEVICE), torch.arange(n, device=DEVICE)
    ids = assert_same_ids(logits, s, seeds, counter)
    assert set(ids.tolist()) == {1, 2, 4}
    assert torch.equal(ids, sample_triton(logits, s, seeds, counter))  # deterministic


def test_top_k_ties_in_a_full_row():
    """Rounded logits tie often: the k-th value is shared by several ids; the reference keeps all of them."""
    vocab, n = 2048, 16
    logits = (distinct_logits(1, vocab, seed=11) * 2).round() / 2  # about 70 distinct values
    logits = logits.expand(n, -1)
    values = logits[0].sort(descending=True).values
    assert values[49] == values[50]  # the 50th value is tied with the next one
    s = stage([(False, 0.9, 50, 1.0)] * n)
    ids = assert_same_ids(logits, s, torch.full((n,), 3, device=DEVICE), torch.arange(n, device=DEVICE) * 16)
    kept = torch.isfinite(filter_logits(logits[:1], s.first_rows(1)))[0]
    assert kept.sum() > 50 and kept[ids].all()


def test_top_p_cuts_a_tied_group_in_index_order():
    """Four ids tie at the boundary: the reference's stable sort keeps them while the mass before each is
    below p, lowest index first; the kernel keeps the same ones and draws the same ids."""
    n = 64
    logits = torch.full((n, 16), -30.0, device=DEVICE)
    logits[:, 9] = 2.0  # top: about 0.40 of the mass
    logits[:, [3, 5, 12, 14]] = 1.0  # each about 0.15; mass before them: 0.40, 0.55, 0.70, 0.85
    s = stage([(False, 1.0, 0, 0.65)] * n)  # keeps 9, 3, 5 (mass before 0.55 < 0.65); drops 12 and 14
    ids = assert_same_ids(logits, s, torch.full((n,), 5, device=DEVICE), torch.arange(n, device=DEVICE))
    assert set(ids.tolist()) == {9, 3, 5}


def test_noise_stays_below_one_so_a_filtered_id_is_never_drawn():
    """With 24 noise bits, id 1148 at seed 7, counter 2366 got noise of exactly 1.0: an infinite Gumbel
    term, and the reference's -inf + inf = NaN won its argmax, drawing a suppressed id. With 23 bits
    the noise stays below 1, and neither sampler draws a filtered id there."""
    seeds, counters, hot = torch.full((8,), 7, device=DEVICE), torch.arange(2363, 2371, device=DEVICE), 1148
    assert uniform_noise(seeds, counters, 2048).max() < 1.0
    logits = distinct_logits(8, 2048, seed=17)
    logits[:, hot] = float("-inf")  # a suppressed id
    s = stage([SETTINGS["top_k"]] * 8)
    kept = torch.isfinite(filter_logits(logits, s))
    for ids in (sample_triton(logits, s, seeds, counters), sample_reference(logits, s, seeds, counters)):
        assert (ids != hot).all() and kept.gather(1, ids[:, None]).all()


def test_greedy_rows_take_the_first_maximum():
    logits = torch.tensor([[0.0, 2.0, 1.0, 2.0], [5.0, 5.0, 5.0, 5.0], [-1.0, -2.0, -0.5, -3.0]], device=DEVICE)
    s = stage([(True, 1.0, 0, 1.0)] * 3)
    ids = assert_same_ids(logits, s, *draws(3, seed=1))
    assert ids.tolist() == [1, 0, 2]


def test_suppressed_ids_are_never_drawn():
    """The talker's processor sets control ids to -inf: they stay out whatever the filters."""
    vocab, n = 3072, 16
    logits = distinct_logits(1, vocab, seed=13, scale=0.2).expand(n, -1).clone()
    logits[:, 2048:] = float("-inf")
    logits[:, 2150] = 0.0  # EOS stays open
    rows = [SETTINGS[name] for name in ("plain", "top_p", "k_above_vocab", "temperature")] * (n // 4)
    s = stage(rows)
    ids = assert_same_ids(logits, s, *draws(n, seed=4))
    assert ((ids < 2048) | (ids == 2150)).all()


def test_sample_dispatches_by_device():
    logits = distinct_logits(3, 2048, seed=5)
    s = stage([SETTINGS[n] for n in ("top_k", "greedy", "top_p")])
    seeds, counter = draws(3, seed=6)
    assert torch.equal(sample(logits, s, seeds, counter), sample_reference(logits, s, seeds, counter))


@pytest.mark.gpu
def test_compiled_step_replayed_from_a_cuda_graph_draws_the_reference_ids():
    """``sample`` inside ``torch.compile(fullgraph=True)`` code, captured in a CUDA graph and replayed on new
    logits and counters written in place: the same ids as the reference, with no re-capture."""
    rows = [SETTINGS[n] for n in ("top_k", "greedy", "top_k_and_p", "plain", "hot_top_p", "top_k_1")] * 4
    s = stage(rows)
    batch, vocab = len(rows), 3072

    def step(logits, s, seeds, counter):  # some pointwise work around it, as in the frame step
        return sample(logits * 2.0 - 1.0, s, seeds, counter + 1)

    compiled = torch.compile(step, fullgraph=True, dynamic=False)
    logits = distinct_logits(batch, vocab, seed=21)
    seeds, counter = draws(batch, seed=22)

    def expected():
        return sample_reference(logits * 2.0 - 1.0, s, seeds, counter + 1)

    assert torch.equal(compiled(logits, s, seeds, counter), expected())
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        compiled(logits, s, seeds, counter)
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        out = compiled(logits, s, seeds, counter)
    for rep in range(5):
        logits.copy_(distinct_logits(batch, vocab, seed=30 + rep))
        counter.add_(16)
        graph.replay()
        assert torch.equal(out, expected())
