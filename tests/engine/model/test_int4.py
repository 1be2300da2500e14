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

from engine import Engine, Sampling, Voice, options
from engine.model.int4 import GROUP, Int4Weight, int4_available, int4_or_int8, quantize_groups
from engine.model.int8 import Int8Weight

from .test_int8 import check_teacher_forced_logits, relative_rms

pytestmark = pytest.mark.skipif(not int4_available(), reason="this PyTorch has no CPU int4 kernel")


@pytest.mark.parametrize(("n", "k", "m"), [(4096, 1024, 1), (1024, 2048, 1), (6144, 1024, 3), (1024, 3072, 17)])
def test_a_product_is_close_to_the_float_product(n, k, m):
    g = torch.Generator().manual_seed(n + k)
    w = torch.randn(n, k, generator=g) * 0.02
    x = torch.randn(2, m, k, generator=g)
    q = Int4Weight(w)
    assert q.packed.dtype == torch.uint8 and q.packed.numel() == n * k // 2 and q.shape == (n, k)
    got = q.matmul(x)
    assert got.dtype == torch.float32 and got.shape == (2, m, n)
    assert relative_rms(got, F.linear(x, w)) < 0.11
    # the kernel computes the product of bf16 activations and the dequantized weights, up to bf16 rounding
    assert relative_rms(got, F.linear(x.bfloat16().float(), q.dequantized())) < 0.006
    assert relative_rms(q.row(x[0, :1]).float(), F.linear(x[0, :1].bfloat16().float(), q.dequantized())) < 0.006


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
    assert torch.allclose(got, expected.bfloat16().float(), rtol=1e-2, atol=1e-6)
    assert relative_rms(got, w) < 0.11


def test_stacked_pieces_equal_the_concatenated_weight():
    g = torch.Generator().manual_seed(5)
    pieces = [torch.randn(rows, 128, generator=g) for rows in (64, 32, 32)]
    whole, stacked = Int4Weight(torch.cat(pieces)), Int4Weight.stacked(*pieces)
    assert torch.equal(whole.packed, stacked.packed) and torch.equal(whole.scale_zeros, stacked.scale_zeros)
    assert stacked.shape == (128, 128)


def test_shapes_the_kernel_cannot_take_stay_int8():
    g = torch.Generator().manual_seed(6)
    assert isinstance(int4_or_int8(torch.randn(64, 128, generator=g)), Int4Weight)
    assert isinstance(int4_or_int8(torch.randn(64, 48, generator=g)), Int8Weight)  # columns not in runs of 64
    assert isinstance(int4_or_int8(torch.randn(96, 64, generator=g)), Int8Weight)  # rows not in blocks of 64
    assert isinstance(int4_or_int8(torch.randn(32, 64), torch.randn(32, 64)), Int4Weight)


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


def test_the_engine_takes_int4_where_asked_and_the_kernel_takes_the_shape(tiny_model_dir, engine_options):
    """The tiny talker's projections are int4; its code predictor's (48 wide, not a run of 64) stay int8; the
    option and the argument both choose it; the frames are finite speech."""
    path = tiny_model_dir("custom_voice")
    eng = Engine.from_pretrained(path, device="cpu", cpu_int8=True, cpu_int4=True)
    assert eng.cpu_int8 and eng.cpu_int4
    talker = eng.model.talker
    for layer in talker.model.layers:
        for w in (layer.self_attn.qkv_weight, layer.self_attn.out_weight, layer.mlp.gate_up_weight,
                  layer.mlp.down_weight):
            assert isinstance(w, Int4Weight)
    assert all(isinstance(layer.mlp.down_weight, Int8Weight) for layer in talker.code_predictor.model.layers)
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


def test_without_the_kernel_int4_falls_back_to_int8_and_says_so(tiny_model_dir, monkeypatch, caplog):
    import engine.engine as engine_module

    monkeypatch.setattr(engine_module, "int4_available", lambda: False)
    eng = Engine.from_pretrained(tiny_model_dir("custom_voice"), device="cpu", cpu_int8=True, cpu_int4=True)
    assert eng.cpu_int8 and not eng.cpu_int4
    assert isinstance(eng.model.talker.model.layers[0].mlp.down_weight, Int8Weight)
    assert "no CPU int4 kernel" in caplog.text


@pytest.mark.parametrize("size", ["tiny", pytest.param("0.6b", marks=pytest.mark.slow)])
def test_teacher_forced_logits_stay_near_the_float_paths(size, tiny_model_dir, request):
    """int4: logits within 40% relative RMS of the float32 path's (int8's are within 5%), the greedy pick of more
    than half the steps the same."""
    path = tiny_model_dir("custom_voice") if size == "tiny" else request.getfixturevalue("full_size_0_6b")
    check_teacher_forced_logits(path, 40 if size == "tiny" else 120, 0.4, 0.5, cpu_int8=True, cpu_int4=True)
