"""The Numba steps' products through AVX512-VNNI (engine.core.cpu.vnni): the same integer sums as the 16-bit products,
so the same outputs bit for bit. Where the processor lacks VNNI, ``vnni.dot4`` compiles to plain loops with the
same sums, so these tests check the arithmetic on any machine; ``test_the_instruction_*`` needs the instruction."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import engine.core.cpu.numba_layer as kernels
import engine.core.cpu.one_position_numba as jit
from engine import Engine
from engine.core.cpu import vnni
from engine.core.cpu.one_position import one_position_stacks

pytestmark = pytest.mark.skipif(jit.numba is None, reason="Numba is not installed")

if jit.numba is not None:
    from numba import njit

    @njit
    def _dot4(q, row0, start, stop, lo, hi, out):
        vnni.dot4(q, row0, start, stop, lo, hi, out)

    _plain4 = njit(vnni.plain_rows(4))


def exact_sums(q, row0, start, stop, lo, hi):
    w = q[row0:row0 + 4, start:stop].astype(np.int64)
    return np.stack([w @ lo[start:stop].astype(np.int64), w @ hi[start:stop].astype(np.int64)], 1).reshape(-1)


@settings(max_examples=80, deadline=None)
@given(runs=st.integers(1, 40), start_run=st.integers(0, 3), rows=st.integers(1, 3), seed=st.integers(0, 2**16),
       extreme=st.booleans())
def test_four_rows_sums_are_the_exact_integer_sums(runs, start_run, rows, seed, extreme):
    rng = np.random.default_rng(seed)
    k = (start_run + runs) * vnni.BYTES
    if extreme:  # every product at its largest magnitude: the lanes' sums at their bound
        q = np.where(rng.random((4 * rows, k)) < 0.5, -127, 127).astype(np.int8)
        lo, hi = np.full(k, 255, np.uint8), np.full(k, 191, np.uint8)
    else:
        q = rng.integers(-127, 128, (4 * rows, k), dtype=np.int8)
        lo, hi = rng.integers(0, 256, k).astype(np.uint8), rng.integers(64, 192, k).astype(np.uint8)
    row0, start = 4 * rng.integers(0, rows), start_run * vnni.BYTES
    for dot in (_dot4, _plain4):
        out = np.full(8, -7, np.int32)
        dot(q, row0, start, k, lo, hi, out)
        assert out.tolist() == exact_sums(q, row0, start, k, lo, hi).tolist()


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2**16), k_runs=st.integers(1, 3 * kernels.SEGMENT // vnni.BYTES),
       scale_exponent=st.integers(-30, 30))
def test_split_and_joined_give_the_16_bit_sums(seed, k_runs, scale_exponent):
    """x . w from the activations' two bytes and the weight sums, for activations anywhere in their range."""
    rng = np.random.default_rng(seed)
    k = k_runs * vnni.BYTES
    x = (rng.standard_normal(k) * 2.0**scale_exponent).astype(np.float32)
    x[rng.integers(0, k)] = -np.abs(x).max() * 2  # the largest magnitude negative: -ACTIVATION_MAX
    q = rng.integers(-127, 128, (8, k), dtype=np.int8)
    scale = rng.uniform(1e-3, 1.0, 8).astype(np.float32)
    want, got = np.empty(8, np.float32), np.empty(8, np.float32)
    xq, lo, hi = np.empty(k, np.int16), np.empty(k, np.uint8), np.empty(k, np.uint8)
    sx = _quantize(x, xq)
    _rows16(q, scale, xq, sx, want)
    vnni.split(xq, lo, hi)
    assert np.array_equal(lo.astype(np.int32) + 256 * (hi.astype(np.int32) - 128), xq.astype(np.int32))
    sums = vnni.weight_sums(q, kernels.SEGMENT)
    parts, accs = np.empty((1, kernels.SCRATCH_ROW), np.int32), np.empty((1, kernels.SCRATCH_ROW), np.float32)
    _rows_vnni(q, scale, sums, lo, hi, sx, got, parts, accs)
    assert np.array_equal(got, want)


if jit.numba is not None:
    @njit(fastmath=kernels.FAST)  # the engine's flags: inlined code takes its caller's
    def _rows_vnni(q, scale, sums, lo, hi, sx, y, parts, accs):
        kernels.vnni_range(q, scale, sums, lo, hi, sx, y, 0, q.shape[0], False, parts[0], accs[0])

    @njit(fastmath=kernels.FAST)
    def _rows16(q, scale, xq, sx, y):
        kernels.row_range(q, scale, xq, sx, y, 0, q.shape[0], False)

    @njit(fastmath=kernels.FAST)
    def _quantize(x, xq):
        return kernels.quantize(x, xq)


def test_fits_takes_rows_in_fours_and_runs_in_whole_instructions():
    assert vnni.fits(np.zeros((4096, 1024), np.int8), kernels.SEGMENT)
    assert vnni.fits(np.zeros((8, 64), np.int8), kernels.SEGMENT)
    assert not vnni.fits(np.zeros((6, 64), np.int8), kernels.SEGMENT)
    assert not vnni.fits(np.zeros((8, 48), np.int8), kernels.SEGMENT)
    assert not vnni.fits(np.zeros((8, 64), np.int8), 1000)
    sums = vnni.weight_sums(np.array([[1, -2, 3], [127, 127, -127]], np.int8), 2)
    assert sums.tolist() == [[-1, 3], [254, -127]] and sums.dtype == np.int32


def test_a_talker_step_is_the_16_bit_step_bit_for_bit(fast):
    """The tiny talker's products all fit (the tiny predictor's 48-wide ones do not: they keep the 16-bit form)."""
    talker = fast.model.talker
    stacks = one_position_stacks(talker)
    made = jit.NumbaPosition(stacks[0], vnni_sums=True)
    assert made.vnni and made.vnni_able
    assert not jit.NumbaPosition(stacks[1], vnni_sums=True).vnni_able
    width, positions = made.width, 12
    x = torch.randn(positions, width, generator=torch.Generator().manual_seed(5)) * 3
    caches = {way: talker.model.new_cache(1, 16, torch.float32, "cpu") for way in (False, True)}
    steps = {}
    for way in (False, True):
        made.vnni = way
        steps[way] = made.over(caches[way])
    with torch.inference_mode():
        for pos in range(positions):
            outs = {way: steps[way](x[pos:pos + 1], pos) for way in (False, True)}
            assert torch.equal(outs[True], outs[False]), pos
    assert torch.equal(caches[True].k, caches[False].k) and torch.equal(caches[True].v, caches[False].v)


def test_the_faster_way_is_measured_and_the_choice_left_as_it_was(fast):
    made = jit.NumbaPosition(one_position_stacks(fast.model.talker)[0], vnni_sums=True)
    assert isinstance(jit.vnni_faster(made), bool)
    assert made.vnni is True  # vnni_faster tries both ways, then restores the stack's own


def test_a_test_pins_the_products_explicitly(tiny_model_dir):
    """The products are the plan's choice, measured at load; a test that needs one form pins it through
    ``numba_stacks(products=...)``, VNNI only where a stack's products fit."""
    eng = Engine.from_pretrained(tiny_model_dir("custom_voice"), device="cpu", precision="fast")
    talker = eng.model.talker
    for products in ("16-bit", "vnni"):
        talker._numba_stacks = None  # the engine built its steps at load: build them again, pinned
        made = jit.numba_stacks(talker, one_position_stacks(talker), products=products)
        assert made is not None
        talker_vnni = products == "vnni" and vnni.available()
        assert made[0].vnni == made[0].vnni_able == talker_vnni and not made[1].vnni
    with pytest.raises(ValueError, match="products"):
        jit.numba_stacks(talker, one_position_stacks(talker), products="int4")


@pytest.mark.skipif(jit.numba is None or not vnni.available(), reason="the processor lacks AVX512-VNNI")
def test_the_instruction_is_in_the_compiled_code():
    assembly = "\n".join(_dot4.inspect_asm().values())
    assert "vpdpbusd" in assembly


def test_a_stack_whose_products_do_not_fit_keeps_the_16_bit_form(fast):
    """The tiny predictor's 48-wide products: asking it for VNNI changes nothing (its steps would misread them)."""
    stack = one_position_stacks(fast.model.talker)[1]
    made = jit.NumbaPosition(stack, vnni_sums=True)
    x = torch.randn(1, made.width, generator=torch.Generator().manual_seed(6))
    outs = []
    for way in (False, True):
        made.vnni = way
        cache = fast.model.talker.code_predictor.model.new_cache(1, 4, torch.float32, "cpu")
        outs.append(made.over(cache)(x, 1))
    assert torch.equal(outs[0], outs[1])
