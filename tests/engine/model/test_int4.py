"""The small CPU path's int4 projections (engine.model.int4): each product and what a frame accumulates.

Tolerances: a run of 64 weights rounded to 16 levels of its range errs by at most half a level a weight, so a
product's relative RMS error is about 1 / 15 / sqrt(12) of the runs' range over the weights' spread, ~9% for
Gaussian runs (whose range is ~4.8 spreads at 64 samples), against int8's ~0.5%. Products are held to 11%.
Through a whole model, per-step logits (teacher-forced, as in test_int8.py) are held to 40% relative RMS, and the
greedy pick to agree on most steps: on Gaussian weights every layer's error adds up, which is why int4 is a
choice and int8 the default; what it does to the speech of real checkpoints is for a listener to judge.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from engine import Engine, Sampling, Voice, options
from engine.model import one_position_numba as jit
from engine.model.int4 import GROUP, Int4Weight, quantize_groups
from engine.model.int8 import Int8Weight

from .test_int8 import check_teacher_forced_logits, relative_rms


@pytest.mark.parametrize(("n", "k", "m"), [(4096, 1024, 1), (1024, 2048, 1), (6144, 1024, 3), (1024, 3072, 17)])
def test_a_product_is_close_to_the_float_product(n, k, m):
    g = torch.Generator().manual_seed(n + k)
    w = torch.randn(n, k, generator=g) * 0.02
    x = torch.randn(2, m, k, generator=g)
    q = Int4Weight(w)
    assert q.q.dtype == torch.uint8 and q.q.shape == (n, k // 2) and q.shape == (n, k)
    assert q.scale.shape == (n, k // GROUP, 2) and q.scale.dtype == torch.float32
    got = q.matmul(x)
    assert got.dtype == torch.float32 and got.shape == (2, m, n)
    assert relative_rms(got, F.linear(x, w)) < 0.11
    # the product of the widened weights: a row's activations rounded to 15 bits (the Numba product), a prompt's
    # many rows at most to bfloat16 (its matrix product)
    assert relative_rms(got, F.linear(x, q.dequantized())) < (0.006 if m >= 16 else 1e-4)
    assert relative_rms(q.row(x[0, :1]), F.linear(x[0, :1], q.dequantized())) < 1e-4


def test_the_kernel_reads_the_codes_as_quantized():
    """The weight the kernel multiplies by is ``(codes - 8) * scale + zero`` of ``quantize_groups`` (in bfloat16),
    and each code is the nearest level to its weight."""
    g = torch.Generator().manual_seed(3)
    w = torch.randn(192, 3 * GROUP, generator=g)
    codes, scale, zero = quantize_groups(w)
    assert codes.min() >= 0 and codes.max() <= 15 and scale.shape == zero.shape == (192, 3)
    levels = (torch.arange(16).float() - 8)[None, None, None] * scale.float()[..., None, None] + zero.float()[
        ..., None, None]  # [192, 3, 1, 16]
    nearest = (w.view(192, 3, GROUP, 1) - levels).abs().argmin(-1).view(192, -1)
    assert (nearest == codes).double().mean() > 0.999  # ties aside
    expected = ((codes.view(192, 3, GROUP).float() - 8) * scale.float()[..., None]
                + zero.float()[..., None]).view(192, -1)
    got = Int4Weight(w).dequantized()
    assert torch.equal(got, expected)
    assert relative_rms(got, w) < 0.11


def test_stacked_pieces_equal_the_concatenated_weight():
    g = torch.Generator().manual_seed(5)
    pieces = [torch.randn(rows, 128, generator=g) for rows in (64, 32, 32)]
    whole, stacked = Int4Weight(torch.cat(pieces)), Int4Weight.stacked(*pieces)
    assert torch.equal(whole.q, stacked.q) and torch.equal(whole.scale, stacked.scale)
    assert stacked.shape == (128, 128)


def test_the_layout_keeps_each_runs_halves_in_the_nibbles_of_its_bytes():
    """Byte j of run g holds weight g*64+j's code in its low nibble and g*64+32+j's in its high one
    (``engine.model.int4_numba``)."""
    w = torch.zeros(2, 2 * GROUP)
    w[0, GROUP + 3], w[0, GROUP + 32 + 3], w[0, 0] = 1.0, -1.0, 0.5  # run 1: weights 3 and 35; run 0: weight 0
    codes, _, _ = quantize_groups(w)
    q = Int4Weight(w).q
    half = GROUP // 2
    assert int(q[0, half + 3]) == int(codes[0, GROUP + 3]) | (int(codes[0, GROUP + 32 + 3]) << 4)
    assert int(q[0, 0]) & 15 == int(codes[0, 0]) and int(q[0, 0]) >> 4 == int(codes[0, 32])


def test_a_prefills_rows_are_the_products_of_each_row():
    g = torch.Generator().manual_seed(7)
    q = Int4Weight(torch.randn(512, 256, generator=g) * 0.02)
    x = torch.randn(40, 256, generator=g)
    rows = torch.cat([q.matmul(x[i : i + 1]) for i in range(len(x))])
    assert relative_rms(q.matmul(x), rows) < 0.006


@settings(max_examples=40, deadline=None)
@given(rows=st.lists(st.sampled_from(["zero", "tiny", "huge", "outlier", "normal", "constant"]), min_size=1,
                     max_size=4))
def test_hostile_rows_quantize_without_nan(rows):
    """All-zero and constant rows (scale at its floor), subnormal and huge rows, one outlier: every weight is
    finite after a round trip and within half a level of itself (a fifteenth of its run's range, halved) plus the
    kernel's bfloat16 offset (the value at code 8, rounded to 1/256 of itself), and a zero row gives exactly zero."""
    g = torch.Generator().manual_seed(len(rows))
    made = {"zero": torch.zeros(GROUP), "tiny": torch.full((GROUP,), 1e-38), "constant": torch.full((GROUP,), -3.0),
            "huge": torch.randn(GROUP, generator=g) * 1e30, "normal": torch.randn(GROUP, generator=g)}
    outlier = torch.randn(GROUP, generator=g) * 1e-3
    outlier[7] = 50.0
    made["outlier"] = outlier
    w = torch.cat([torch.stack([made[r] for r in rows])] * 64)[:64]  # 64 rows: a block of the kernel's layout
    q = Int4Weight(w)
    back = q.dequantized()
    assert torch.isfinite(back).all()
    spread = (w.amax(dim=1) - w.amin(dim=1))[:, None]
    assert ((back - w).abs() <= spread / 30 + (w.abs().amax(dim=1, keepdim=True) + spread) / 128 + 1e-37).all()
    y = q.matmul(torch.ones(1, GROUP))
    assert torch.isfinite(y).all()
    for i in range(64):
        if rows[i % len(rows)] == "zero":
            assert float(y[0, i]) == 0.0


def test_the_engine_takes_int4_where_asked_and_the_runs_fit(tiny_model_dir, engine_options):
    """The tiny talker's projections are int4; its code predictor's stack and heads (48 wide, not a run of 64) stay
    int8, all of them; the option and the argument both choose it; the frames are finite speech."""
    path = tiny_model_dir("custom_voice")
    eng = Engine.from_pretrained(path, device="cpu", cpu_int8=True, cpu_int4=True)
    assert eng.cpu_int8 and eng.cpu_int4
    talker = eng.model.talker
    for layer in talker.model.layers:
        for w in (layer.self_attn.qkv_weight, layer.self_attn.out_weight, layer.mlp.gate_up_weight,
                  layer.mlp.down_weight):
            assert isinstance(w, Int4Weight)
    cp = talker.code_predictor
    assert all(isinstance(w, Int8Weight) for layer in cp.model.layers
               for w in (layer.self_attn.qkv_weight, layer.mlp.down_weight))  # down's 128 columns would fit alone
    assert all(isinstance(w, Int8Weight) for w in cp.head_weights)
    audio = eng.synthesize("Hello there.", Voice.preset("vivian"), Sampling(greedy=True, min_frames=5), max_frames=5)
    assert audio.codes.shape == (5, 16) and np.isfinite(audio.samples).all() and np.abs(audio.samples).max() > 0
    from qtapp.worker import describe_engine

    assert "on cpu (int4 weights, " in describe_engine(eng)
    engine_options(cpu_int8=True, cpu_int4=True)
    assert Engine.from_pretrained(path, device="cpu").cpu_int4
    assert not Engine.from_pretrained(path, device="cpu", cpu_int4=False).cpu_int4
    assert not Engine.from_pretrained(path, device="cpu", cpu_int8=False).cpu_int4  # the exact path stays exact
    assert options.Options.from_environment({"ORATOR_CPU_INT4": "1"}).cpu_int4
    assert not options.Options.from_environment({}).cpu_int4


def test_without_numbas_loops_int4_falls_back_to_int8_and_says_so(tiny_model_dir, engine_options, caplog):
    """int4's products are Numba's loops: with the ``cpu_numba`` option off (or Numba not usable) the engine loads
    int8 weights and says why."""
    engine_options(cpu_numba=False)
    eng = Engine.from_pretrained(tiny_model_dir("custom_voice"), device="cpu", cpu_int8=True, cpu_int4=True)
    assert eng.cpu_int8 and not eng.cpu_int4
    assert isinstance(eng.model.talker.model.layers[0].mlp.down_weight, Int8Weight)
    assert "int4 weights need Numba" in caplog.text


@pytest.mark.parametrize("why", ["missing", "failed"])
def test_without_numba_the_products_are_the_widened_weights(monkeypatch, why):
    """Where Numba cannot run (missing, or a compile failed), a row's product and the widened weights come from
    PyTorch, as the Numba ones are."""
    g = torch.Generator().manual_seed(8)
    q = Int4Weight(torch.randn(192, 2 * GROUP, generator=g))
    x = torch.randn(1, 2 * GROUP, generator=g)
    widened, row = q.dequantized(), q.row(x)
    if why == "missing":
        monkeypatch.setattr(jit, "numba", None)
    else:
        monkeypatch.setattr(jit, "_failed", ["no LLVM here"])

    def not_numba(*args):
        raise AssertionError("the Numba loops ran")

    monkeypatch.setattr(jit, "product_row", not_numba)
    monkeypatch.setattr(jit, "widened", not_numba)
    assert torch.equal(q.dequantized(), widened)
    assert relative_rms(q.row(x), row) < 1e-4


activations = st.integers(1, 16).flatmap(lambda runs: hnp.arrays(
    np.float32, runs * GROUP,
    elements=st.floats(-(2.0**100), 2.0**100, width=32) | st.sampled_from([0.0, 1e-38, -3e-20, 5e4, 1e-45])))


@pytest.mark.skipif(jit.numba is None, reason="Numba is not installed")
@settings(max_examples=120, deadline=None)
@given(x=activations, rows=st.integers(1, 2 * jit.ROW_BLOCK + 3), seed=st.integers(0, 2**16))
def test_a_numba_product_is_within_its_rounding_of_the_exact_product(x, rows, seed):
    """Random codes, scales and zeros against hostile activations (huge, subnormal, all zeros, one outlier): the
    Numba product is the exact product of the widened weights but for each activation's rounding to 15 bits (half
    a step of 1/16383 of the largest) and float32 sums over the runs; activations all under TINY are zeros."""
    x = np.asarray(x, np.float32)
    k = x.shape[0]
    rng = np.random.default_rng(seed)
    codes = torch.from_numpy(rng.integers(0, 16, (rows, k), dtype=np.int32))
    scale = torch.from_numpy(rng.uniform(1e-4, 1e-1, (rows, k // GROUP)).astype(np.float32)).bfloat16()
    zero = torch.from_numpy(rng.uniform(-1e-2, 1e-2, (rows, k // GROUP)).astype(np.float32)).bfloat16()
    q = Int4Weight.__new__(Int4Weight)
    q._set(codes, scale, zero)
    y = q.row(torch.from_numpy(x)[None])[0].double().numpy()
    w = q.dequantized().double().numpy()
    exact = w @ x.astype(np.float64)
    if np.abs(x).max() < jit.TINY:
        assert np.all(y == 0)
        return
    step = np.abs(x).max() / jit.ACTIVATION_MAX
    bound = 0.5 * step * np.abs(w).sum(1) + 1e-5 * (np.abs(w) @ np.abs(x.astype(np.float64))) + 1e-37
    assert np.all(np.isfinite(y)) and np.all(np.abs(y - exact) <= bound)


@pytest.mark.skipif(jit.numba is None, reason="Numba is not installed")
def test_the_largest_run_sums_stay_exact():
    """Every code at 15 and every activation at its largest: each run's int32 sum is at its largest (15 * 16383 *
    64, under 2**24) and the product is exact to float32's rounding."""
    k = 5 * GROUP
    q = Int4Weight.__new__(Int4Weight)
    q._set(torch.full((3, k), 15, dtype=torch.int32), torch.ones(3, 5, dtype=torch.bfloat16),
           torch.zeros(3, 5, dtype=torch.bfloat16))
    y = q.row(torch.full((1, k), 7.5))
    torch.testing.assert_close(y, torch.full((1, 3), 7 * 7.5 * k), rtol=1e-6, atol=0)
    nan = torch.full((1, k), 1.0)
    nan[0, 17] = float("nan")
    assert q.row(nan).isnan().all()


@pytest.mark.parametrize("size", ["tiny", pytest.param("0.6b", marks=pytest.mark.slow)])
def test_teacher_forced_logits_stay_near_the_float_paths(size, tiny_model_dir, request):
    """int4: logits within 40% relative RMS of the float32 path's (int8's are within 5%), the greedy pick of more
    than half the steps the same."""
    path = tiny_model_dir("custom_voice") if size == "tiny" else request.getfixturevalue("full_size_0_6b")
    check_teacher_forced_logits(path, 40 if size == "tiny" else 120, 0.4, 0.5, cpu_int8=True, cpu_int4=True)
