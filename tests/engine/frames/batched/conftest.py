"""Fixtures of the many-streams tests: float64 engines on tiny checkpoints, so that batch-size-dependent
rounding cannot flip a choice."""

from __future__ import annotations

import pytest
import torch

from engine import Engine


@pytest.fixture(scope="session")
def engine64(tiny_model_dir):
    return Engine.from_pretrained(tiny_model_dir("custom_voice"), dtype=torch.float64)


@pytest.fixture(scope="session")
def base64(tiny_model_dir):
    return Engine.from_pretrained(tiny_model_dir("base"), dtype=torch.float64)


@pytest.fixture(autouse=True)
def fixed_chunks(engine_options):
    """A stream alone in the sizes the batched path keeps (its chunks never grow), so their chunks compare."""
    engine_options(grow_chunks=False)
