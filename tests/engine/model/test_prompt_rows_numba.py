"""A prompt's int8 products with their rounding and joining in Numba's loops (``engine.core.cpu.prompt_rows_numba``):
the same values as PyTorch's operations, bit for bit, for any rows, hostile ones included."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from engine.core.cpu import int8, int8_numba, prompt_rows_numba
from engine.core.cpu.int8 import Int8Weight

pytestmark = pytest.mark.skipif(prompt_rows_numba.numba is None or not int8.int_products(),
                                reason="needs Numba and PyTorch's CPU int8 matrix product")

_values = st.one_of(st.floats(-1e3, 1e3, width=32), st.sampled_from([0.0, -0.0, 1e-38, -1e-40, 3e38, -3e38]),
                    st.floats(width=32))  # any float32: NaN, infinities, subnormals


@settings(max_examples=60, deadline=None)
@given(x=hnp.arrays(np.float32, st.tuples(st.integers(1, 9), st.sampled_from([8, 64, 136])), elements=_values),
       n=st.integers(1, 40), seed=st.integers(0, 2**16))
def test_the_numba_loops_give_pytorchs_values_bit_for_bit(x, n, seed):
    """Rows of any float32 values (NaN, infinities, subnormals, huge, zeros, one outlier among small ones): the
    loops' products equal ``int8.integer_rows``' exactly, NaN for NaN."""
    g = torch.Generator().manual_seed(seed)
    q = Int8Weight(torch.randn(n, x.shape[1], generator=g) * 0.02)
    rows = torch.from_numpy(x)
    got = prompt_rows_numba.integer_rows(rows, q.q, q.scale)
    expected = int8.integer_rows(rows, q.q, q.scale)
    assert got.dtype == torch.float32 and got.shape == expected.shape
    assert torch.equal(got.isnan(), expected.isnan())
    assert torch.equal(torch.nan_to_num(got), torch.nan_to_num(expected))


def test_a_prompt_takes_the_loops_unless_the_numba_option_is_off(engine_options, monkeypatch):
    """The CPU int8 plan's weights (``int8_numba``) run their integer products through the loops where Numba runs
    and PyTorch's operations with ``cpu_numba`` off; a non-contiguous input (a view) gives the same values."""
    g = torch.Generator().manual_seed(3)
    q = int8_numba.with_loops(Int8Weight(torch.randn(48, 128, generator=g) * 0.02))
    x = torch.randn(128, 40, generator=g).t()  # [40, 128], not contiguous
    calls = []
    real = prompt_rows_numba.integer_rows
    monkeypatch.setattr(prompt_rows_numba, "integer_rows", lambda *a: calls.append(1) or real(*a))
    fast = q.matmul(x)
    assert calls == [1]
    engine_options(cpu_numba=False)
    plain = q.matmul(x)
    assert calls == [1]
    assert torch.equal(fast, plain)
