"""The fast CPU path's int8 projections (engine.core.cpu.int8): each product, and what a frame accumulates.

Tolerances: a row rounded to 255 levels of its largest magnitude errs by at most half a level a weight, so a
product's relative RMS error is about 0.5 / 127 / sqrt(3) of the weights' spread over their peak, ~0.4% for
Gaussian rows (whose peak is ~4 of their spreads at 1,024 inputs); the bfloat16 activations the kernel takes add
~0.3%. Products are held to 1.5%. Through a whole model, per-step logits (teacher-forced: both paths fed the same
codes, so one early difference cannot make every later step differ) are held to 5% relative RMS at full size.
Synthetic weights are Gaussian: real checkpoints have outlier channels, which per-row scales absorb, but their
errors may be larger. These tests assert the bounds above on synthetic weights, and that rows with an outlier,
zeros or extreme magnitudes round-trip finite with their peak (``test_hostile_rows_*``); they say nothing of a real
checkpoint's accuracy.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st

from engine import Engine, Sampling, Voice
from engine.core.cpu import int8, numba_layer, one_position_numba
from engine.core.cpu.int8 import Int8Weight
from engine.core.cpu.one_position import one_position_stacks
from engine.core.gpu_kernels.gemv import linear
from engine.core.prompts import build_prompt


def relative_rms(got: torch.Tensor, expected: torch.Tensor) -> float:
    return float((got.double() - expected.double()).norm() / expected.double().norm())


@pytest.mark.parametrize(("n", "k", "m"), [(4096, 1024, 1), (1024, 2048, 1), (6144, 1024, 3), (1024, 3072, 17),
                                           (1024, 2048, 40)])
def test_a_product_is_close_to_the_float_product(n, k, m):
    g = torch.Generator().manual_seed(n + k)
    w = torch.randn(n, k, generator=g) * 0.02
    x = torch.randn(2, m, k, generator=g)
    q = Int8Weight(w)
    assert q.q.dtype == torch.int8 and q.q.shape == (n, k) and q.shape == (n, k)
    got = q.matmul(x)
    assert got.dtype == torch.float32 and got.shape == (2, m, n)
    assert relative_rms(got, F.linear(x, w)) < 0.015
    # the kernel computes exactly the product of bf16 activations and the dequantized weights, up to bf16 rounding
    assert relative_rms(got, F.linear(x.bfloat16().float(), q.dequantized())) < 0.006


@pytest.mark.parametrize("form", int8.PREFILL_FORMS)
def test_a_prefills_rows_take_the_chosen_form_and_each_is_close_to_the_row_kernels(form, monkeypatch):
    """From ``GEMM_ROWS`` rows a product takes ``prefill_form``'s form: each is within rounding of the one-row kernel
    (bfloat16 activations, ~0.3% RMS), the integer form nearer the exact product (15-bit activations); fewer rows
    always take the row kernel."""
    if form == "integer" and not int8.int_products():
        pytest.skip("this PyTorch has no CPU int8 matrix product")
    monkeypatch.setattr(int8, "prefill_form", lambda: form)
    calls, int_mm = [], torch._int_mm
    monkeypatch.setattr(torch, "_int_mm", lambda *a: calls.append(a) or int_mm(*a))
    g = torch.Generator().manual_seed(7)
    w = torch.randn(512, 256, generator=g) * 0.02
    q = Int8Weight(w)
    x = torch.randn(int8.GEMM_ROWS, 256, generator=g)
    rows = torch.cat([q.matmul(x[i : i + 1]) for i in range(len(x))])  # the int8 kernel, a row at a time
    assert not calls
    got = q.matmul(x)
    assert got.dtype == torch.float32 and got.shape == (int8.GEMM_ROWS, 512)
    assert len(calls) == (1 if form == "integer" else 0)
    assert relative_rms(got, rows) < 0.006
    exact = F.linear(x.double(), q.dequantized().double())
    assert relative_rms(got, exact) < (1e-4 if form == "integer" else 0.006)
    assert q.matmul(x[:-1]).shape == (int8.GEMM_ROWS - 1, 512) and len(calls) == (1 if form == "integer" else 0)


def test_int_products_are_refused_where_they_saturate(monkeypatch):
    """A product whose 16-bit pair sums saturate (a processor without 8-bit dot products) is not taken: the
    probe's extreme rows find it, and many rows then take another form."""
    def saturating(a, b):  # as AVX2's vpmaddubsw: unsigned a + 128 times signed b, pairs summed in saturating int16
        u = a.long() + 128
        pairs = (u[:, :, None] * b.long()[None]).view(a.shape[0], -1, 2, b.shape[1]).sum(2)  # [M, K/2, N]
        return (pairs.clamp(-32768, 32767).sum(1) - 128 * b.long().sum(0)).int()

    monkeypatch.setattr(torch, "_int_mm", saturating)
    int8.int_products.cache_clear()
    try:
        assert not int8.int_products()
    finally:
        int8.int_products.cache_clear()


def test_int_products_need_8_bit_dot_product_units(monkeypatch):
    """Where the processor has no 8-bit dot products, oneDNN's exact int8 product is a plain loop (twenty times the
    row kernel's time for a prompt on 2 AVX2 cores): it is not taken, however exact, and prompts take another form."""
    monkeypatch.setattr(torch, "_int_mm", lambda a, b: (a.long() @ b.long()).int())  # exact
    for units in (True, False):
        monkeypatch.setattr(int8, "cpu_dot_product_units", lambda units=units: units)
        int8.int_products.cache_clear()
        int8.prefill_form.cache_clear()
        try:
            assert int8.int_products() is (units and torch.backends.mkldnn.is_available())
            assert (int8.prefill_form() == "integer") is int8.int_products()
        finally:
            int8.int_products.cache_clear()
            int8.prefill_form.cache_clear()


def test_dot_product_units_follow_pytorchs_probes(monkeypatch):
    from engine.core import runtime

    for name in (*runtime.VNNI_PROBES, *runtime.AMX_PROBES):
        monkeypatch.setattr(torch.cpu, name, lambda: False, raising=False)
    assert not runtime.cpu_dot_product_units()
    monkeypatch.setattr(torch.cpu, "_is_amx_tile_supported", lambda: True, raising=False)
    assert runtime.cpu_dot_product_units()
    monkeypatch.setattr(torch.cpu, "_is_amx_tile_supported", lambda: False, raising=False)
    monkeypatch.setattr(torch.cpu, "_is_vnni_supported", lambda: True, raising=False)
    assert runtime.cpu_dot_product_units()


@pytest.mark.skipif(not int8.int_products(), reason="this PyTorch has no exact CPU int8 matrix product here")
def test_without_vnni_onednn_saturates_and_a_prompt_takes_another_form():
    """oneDNN limited to AVX2 (as on a desktop without VNNI) sums byte pairs in saturating 16 bits: the probe
    refuses it there, and a prompt's product stays within rounding of the exact one."""
    code = ("import torch; from engine.core.cpu import int8; from engine.core.cpu.int8 import Int8Weight\n"
            "g = torch.Generator().manual_seed(1); w = torch.randn(256, 512, generator=g) * 0.02\n"
            "x = torch.randn(40, 512, generator=g) * 3; q = Int8Weight(w); y = q.matmul(x).double()\n"
            "exact = x.double() @ q.dequantized().double().t()\n"
            "print(int8.int_products(), int8.prefill_form(), float((y - exact).norm() / exact.norm()))")
    env = dict(os.environ, ONEDNN_MAX_CPU_ISA="AVX2", PYTHONPATH=str(Path(__file__).parents[3]))
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    taken, form, error = out.stdout.split()
    assert taken == "False" and form in ("bf16", "kernel") and float(error) < 0.006


@pytest.mark.skipif(one_position_numba.numba is None or not int8.int_products(),
                    reason="needs Numba and PyTorch's CPU int8 matrix product")
@settings(max_examples=30, deadline=None)
@given(rows=st.lists(st.sampled_from(["zero", "tiny", "huge", "outlier", "normal", "nan", "inf", "negative"]),
                     min_size=1, max_size=6), k=st.sampled_from([8, 64, 200]))
def test_integer_rows_are_the_numba_steps_products_row_by_row(rows, k):
    """A prompt's rows through ``integer_rows`` equal, row by row, the Numba steps' product of the same row (the
    same 15-bit rounding rule and integer sums; Numba's fast-math code rounds about 2 activations in 10,000 to
    the neighbouring integer, each moving an output by at most 127 of its weight steps times the activation
    step, and the sums' float32 rounding differs): so a prompt's positions are computed as each later position
    is. Hostile rows: a NaN or an infinity gives NaNs (as a float product would), all-zero and subnormal rows
    give zeros, huge and outlier rows stay finite."""
    g = torch.Generator().manual_seed(k + len(rows))
    q = Int8Weight(torch.randn(40, k, generator=g) * 0.02)
    made = {"zero": torch.zeros(k), "tiny": torch.full((k,), 1e-38), "huge": torch.randn(k, generator=g) * 1e30,
            "normal": torch.randn(k, generator=g), "negative": -torch.rand(k, generator=g) - 1,
            "nan": torch.randn(k, generator=g).index_fill_(0, torch.tensor([k // 2]), float("nan")),
            "inf": torch.randn(k, generator=g).index_fill_(0, torch.tensor([0]), float("-inf"))}
    outlier = torch.randn(k, generator=g) * 1e-3
    outlier[k - 1] = 50.0
    made["outlier"] = outlier
    x = torch.stack([made[r] for r in rows])
    got = int8.integer_rows(x, q.q, q.scale)
    for i, r in enumerate(rows):
        expected = np.empty(40, np.float32)
        numba_layer.product(q.q.numpy(), q.scale.float().numpy(), x[i].numpy().copy(), np.empty(k, np.int16),
                            expected)
        if r in ("nan", "inf"):
            assert got[i].isnan().all() and np.isnan(expected).all()
        elif r in ("zero", "tiny"):
            assert got[i].eq(0).all()
        else:
            assert torch.isfinite(got[i]).all()
            one_step = 127 * float(q.scale.float().max()) * float(x[i].abs().max()) / int8.ACTIVATION_MAX
            np.testing.assert_allclose(got[i].numpy(), expected, rtol=1e-6, atol=3 * one_step)


@settings(max_examples=40, deadline=None)
@given(rows=st.lists(st.sampled_from(["zero", "tiny", "huge", "outlier", "normal", "negative"]), min_size=1,
                     max_size=8))
def test_hostile_rows_quantize_without_nan_and_keep_their_peak(rows):
    """All-zero rows (scale at its floor), subnormal and huge rows, one outlier: every weight is finite after a
    round trip, each row's largest magnitude is represented exactly (up to the bfloat16 scale), and a zero row
    gives exactly zero."""
    k = 64
    g = torch.Generator().manual_seed(len(rows))
    made = {"zero": torch.zeros(k), "tiny": torch.full((k,), 1e-38), "huge": torch.randn(k, generator=g) * 1e30,
            "normal": torch.randn(k, generator=g), "negative": -torch.rand(k, generator=g) - 1}
    outlier = torch.randn(k, generator=g) * 1e-3
    outlier[7] = 50.0
    made["outlier"] = outlier
    w = torch.stack([made[r] for r in rows])
    q = Int8Weight(w)
    back = q.dequantized()
    assert torch.isfinite(back).all()
    peak = w.abs().amax(dim=1)
    assert torch.allclose(back.abs().amax(dim=1), peak, rtol=1e-2, atol=1e-37)
    y = q.matmul(torch.ones(1, k))
    assert torch.isfinite(y).all()
    for i, r in enumerate(rows):
        if r == "zero":
            assert float(y[0, i]) == 0.0


def test_the_fast_cpu_path_quantizes_every_projection_and_head_and_drops_the_float_weights(tiny_model_dir):
    eng = Engine.from_pretrained(tiny_model_dir("custom_voice"), device="cpu", cpu_int8=True)
    assert eng.cpu_int8
    layers = list(eng.model.talker.model.layers) + list(eng.model.talker.code_predictor.model.layers)
    for layer in layers:
        attn, mlp = layer.self_attn, layer.mlp
        for weight in (attn.qkv_weight, attn.out_weight, mlp.gate_up_weight, mlp.down_weight):
            assert isinstance(weight, Int8Weight)
        assert all(lin.weight is None for lin in (attn.q_proj, attn.k_proj, attn.v_proj, attn.o_proj,
                                                   mlp.gate_proj, mlp.up_proj, mlp.down_proj))
    talker = eng.model.talker
    cp = talker.code_predictor
    assert len(cp.head_weights) == len(cp.lm_head) and all(isinstance(w, Int8Weight) for w in cp.head_weights)
    assert all(head.weight is None for head in cp.lm_head) and cp.head(3) is cp.head_weights[3]
    assert talker.model.text_embedding.weight.dtype == torch.bfloat16  # the checkpoint's own precision
    exact = Engine.from_pretrained(tiny_model_dir("custom_voice"), device="cpu", cpu_int8=False)
    ids = torch.tensor([[1, 5, 99]])
    assert torch.equal(talker.model.text_embedding(ids).float(), exact.model.talker.model.text_embedding(ids))
    exact_cp = exact.model.talker.code_predictor
    assert exact_cp.head_weights is None and exact_cp.head(3) is exact_cp.lm_head[3].weight
    for table, exact_table in zip(cp.model.codec_embedding, exact_cp.model.codec_embedding, strict=True):
        assert table.weight.dtype == torch.bfloat16  # read a row at a time: kept as stored, widened as read
        assert torch.equal(table(ids).float(), exact_table(ids))
    assert talker.embed_text(ids).dtype == torch.float32
    voice = Voice.preset("vivian", "english")
    audio = eng.synthesize("Hello there.", voice, Sampling(greedy=True, min_frames=5), max_frames=5)
    assert audio.codes.shape == (5, 16) and np.isfinite(audio.samples).all() and np.abs(audio.samples).max() > 0


def test_the_exact_path_is_kept_where_asked_or_not_a_cpu_float32_model(tiny_model_dir, engine_options):
    path = tiny_model_dir("custom_voice")
    assert not Engine.from_pretrained(path, device="cpu", cpu_int8=False).cpu_int8
    assert not Engine.from_pretrained(path, device="cpu", dtype=torch.float64, cpu_int8=True).cpu_int8
    engine_options(cpu_int8=False)
    assert not Engine.from_pretrained(path, device="cpu").cpu_int8
    engine_options(cpu_int8=True)
    assert Engine.from_pretrained(path, device="cpu").cpu_int8


def teacher_forced_logits(eng: Engine, text: str, voice: Voice, codes: np.ndarray,
                          by_position: bool = False) -> tuple[torch.Tensor, ...]:
    """Per frame of ``codes`` [T, 16]: the talker's code-0 logits [T, V] and the predictor's logits for
    codebooks 1..15 [T, 15, V'], every step fed the given codes (not its own picks). ``by_position``: every step
    after the prompt through ``engine.core.cpu.one_position``, as the fast path's frames run."""
    talker = eng.model.talker
    cp = talker.code_predictor
    prompt = build_prompt(talker, eng.config, eng.tokenizer, voice, text)
    length, frames = prompt.length, len(codes)
    cache = talker.model.new_cache(1, length + frames, torch.float32, "cpu")
    pcache = cp.model.new_cache(1, cp.config.num_code_groups, torch.float32, "cpu")
    if by_position:
        stacks = one_position_stacks(talker)
        talker_stack, predictor_stack = stacks[0].over(cache), stacks[1].over(pcache)

        def talker_step(x, pos):
            return talker_stack(x, pos)

        def predictor(x, first):  # x [1, T, h] at positions first.. -> the last one's output
            for i in range(x.shape[1]):
                h = predictor_stack(x[:, i], first + i, final_norm=i == x.shape[1] - 1)
            return h
    else:
        def talker_step(x, pos):
            return talker.model(x[:, None], torch.full((1, 1), pos), cache, kv_len=pos + 1)[:, -1]

        def predictor(x, first):
            positions = torch.arange(first, first + x.shape[1])[None]
            return cp.model(x, positions, pcache, kv_len=first + x.shape[1])[:, -1]
    codes_t = torch.as_tensor(codes)
    talker_logits, predictor_logits = [], []
    with torch.inference_mode():
        hidden = talker.model(prompt.embeds, torch.arange(length)[None], cache, kv_len=length)[:, -1]
        for f in range(frames):
            talker_logits.append(F.linear(hidden, talker.codec_head.weight)[0])
            x = cp.project(torch.stack([hidden, talker.embed_codec(codes_t[f, :1])], dim=1))  # [1, 2, h]
            steps = [linear(predictor(x, 0), cp.head(0))[0]]
            for j in range(1, cp.config.num_code_groups - 1):
                row = F.embedding(codes_t[f, j : j + 1], cp.model.codec_embedding[j - 1].weight).float()
                steps.append(linear(predictor(cp.project(row)[:, None], j + 1), cp.head(j))[0])
            predictor_logits.append(torch.stack(steps))
            trailing = prompt.trailing[:, f] if f < prompt.trailing.shape[1] else prompt.pad_embed[:, 0]
            hidden = talker_step(talker.embed_frame(codes_t[f : f + 1]) + trailing, length + f)
    return torch.stack(talker_logits), torch.stack(predictor_logits)


def check_teacher_forced_logits(path, frames: int, max_error: float, min_same_pick: float, **fast: bool) -> None:
    """The same codes fed to the float32 path and to the engine ``fast`` loads (``from_pretrained``'s CPU switches):
    every frame's talker and predictor logits within ``max_error`` relative RMS of the float32 path's, and the greedy
    pick of more than ``min_same_pick`` of the steps the same; the fast path's steps one position at a time, as its
    frames run."""
    exact = Engine.from_pretrained(path, device="cpu", cpu_int8=False)
    text, voice = "A sentence long enough to speak for a while, and then a little longer.", Voice.preset("ryan")
    codes = exact.generate_codes(text, voice, Sampling(seed=3, min_frames=frames), max_frames=frames)
    expected = teacher_forced_logits(exact, text, voice, codes)
    del exact
    got = teacher_forced_logits(Engine.from_pretrained(path, device="cpu", **fast), text, voice, codes,
                                by_position=True)
    for g, e in zip(got, expected, strict=True):
        errors = [relative_rms(g[f], e[f]) for f in range(frames)]
        assert max(errors) < max_error, max(errors)
        same_pick = (g.argmax(-1) == e.argmax(-1)).double().mean()
        assert same_pick > min_same_pick, float(same_pick)


@pytest.mark.parametrize("size", ["tiny", pytest.param("0.6b", marks=pytest.mark.slow)])
def test_teacher_forced_logits_stay_close_to_the_float_paths(size, tiny_model_dir, request):
    """int8: logits within 5% relative RMS, the greedy pick of more than 80% of steps the same."""
    path = tiny_model_dir("custom_voice") if size == "tiny" else request.getfixturevalue("full_size_0_6b")
    check_teacher_forced_logits(path, 40 if size == "tiny" else 120, 0.05, 0.8, cpu_int8=True)


@pytest.mark.parametrize("amx", [True, False])
def test_the_fast_path_decodes_in_bf16_only_where_the_cpu_multiplies_it(amx, tiny_model_dir, monkeypatch):
    from engine.core import runtime

    monkeypatch.setattr(runtime, "cpu_bf16_units", lambda: amx)
    path = tiny_model_dir("custom_voice")
    fast = Engine.from_pretrained(path, device="cpu", cpu_int8=True)
    assert fast.decoder.pre_conv.conv.weight.dtype == (torch.bfloat16 if amx else torch.float32)
    exact = Engine.from_pretrained(path, device="cpu", cpu_int8=False)
    assert exact.decoder.pre_conv.conv.weight.dtype == torch.float32
    chosen = Engine.from_pretrained(path, device="cpu", cpu_int8=True, decoder_dtype=torch.float32)
    assert chosen.decoder.pre_conv.conv.weight.dtype == torch.float32
    audio = fast.synthesize("Hello there.", Voice.preset("vivian"), Sampling(greedy=True, min_frames=3), max_frames=3)
    assert audio.samples.dtype == np.float32 and np.isfinite(audio.samples).all()


@pytest.mark.skipif(not Path("/proc/self/maps").exists(), reason="reads Linux's map of the process's memory")
def test_the_fast_path_reads_the_text_table_from_the_checkpoint_file(tiny_model_dir):
    """The table is the checkpoint's bytes in place (its memory lies in a mapping of model.safetensors), so only
    the rows a prompt reads become resident; its values are the stored ones."""
    from safetensors.torch import load_file

    path = tiny_model_dir("custom_voice") / "model.safetensors"
    table = Engine.from_pretrained(path.parent, device="cpu", cpu_int8=True).model.talker.model.text_embedding.weight
    assert table.dtype == torch.bfloat16 and torch.equal(table, load_file(path)["talker.model.text_embedding.weight"])
    address = table.data_ptr()
    mapped = []
    for line in Path("/proc/self/maps").read_text().splitlines():
        span, *_, name = line.split(maxsplit=5) if len(line.split()) > 5 else (line.split()[0], "")
        low, high = (int(v, 16) for v in span.split("-"))
        if low <= address < high:
            mapped.append(name.strip())
    assert mapped == [str(path.resolve())]
