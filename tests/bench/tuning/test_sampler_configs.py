"""The sampler sweep's knob is the kernel's launch setting, and on a GPU every number of warps draws the ids the
default draws (the sweep refuses to time one that does not)."""

from __future__ import annotations

import pytest
import torch

pytest.importorskip("triton", reason="Triton is not installed (the test extra brings it)")

from engine.core.gpu_kernels import sampler  # noqa: E402


def test_warps_are_the_knob_or_the_default_by_row_width(monkeypatch):
    assert [sampler.warps_for(b) for b in (16, 1024, 2048, 4096)] == [4, 4, 8, 8]
    monkeypatch.setattr(sampler, "WARPS", 1)
    assert [sampler.warps_for(b) for b in (16, 4096)] == [1, 1]


@pytest.mark.gpu
def test_every_number_of_warps_draws_the_defaults_ids():
    if not torch.cuda.is_available():
        pytest.skip("needs a CUDA GPU")
    from bench.tuning import sampler_configs

    for setting in sampler_configs.SETTINGS:
        result = sampler_configs.measure("predictor", 2048, 1, 64, setting)
        assert set(result["all"]) == {str(w) for w in sampler_configs.WARPS}  # none refused for other ids
    assert sampler.WARPS is None  # the sweep leaves the default in place
