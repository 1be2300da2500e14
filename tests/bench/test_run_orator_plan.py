"""The benchmark's Orator systems are plans asked for by arguments (bench.run_orator: --precision, --option),
not environment switches; each result records the plan it ran."""

from __future__ import annotations

import argparse
import dataclasses

import pytest

from bench.common import Result
from bench.run_all import RUNNER_ARGS, RUNNERS
from bench.run_orator import option_value, plan_arguments
from engine.core import options


@pytest.mark.parametrize("system", sorted(RUNNER_ARGS))
def test_every_orator_system_asks_for_its_plan_in_arguments_the_engine_takes(system, engine_options):
    assert RUNNERS[system] == "bench.run_orator"
    ours, rest = plan_arguments([*RUNNER_ARGS[system], "--model", "m"])
    assert rest == ["--model", "m"]
    changes = dict(ours.option)
    assert set(changes) <= {f.name for f in dataclasses.fields(options.Options)}
    configured = options.configure(**changes)
    assert all(getattr(configured, name) == value for name, value in changes.items())
    assert ours.precision in (None, *options.PRECISIONS)


@pytest.mark.parametrize(("text", "expected"), [
    ("cpu_numba=0", ("cpu_numba", False)), ("cpu_warmup=on", ("cpu_warmup", True)), ("threads=4", ("threads", 4)),
    ("grow_chunks=0", ("grow_chunks", False)), ("precision=exact", ("precision", "exact")),
])
def test_an_option_is_name_equals_value(text, expected):
    assert option_value(text) == expected


@pytest.mark.parametrize("text", ["cpu_numba", "=1", ""])
def test_an_option_without_a_name_and_value_is_refused(text):
    with pytest.raises(argparse.ArgumentTypeError):
        option_value(text)


def test_a_result_keeps_its_plan_and_older_results_still_read():
    plan = {"device": "cpu", "precision": "fast", "path": "numba-int8"}
    result = Result(system="Orator", model_size="0.6B", mode="cpu fast: numba-int8", n_frames=40, plan=plan)
    assert Result.from_json(result.to_json()).plan == plan
    older = result.to_json().replace(', "plan": {"device": "cpu", "path": "numba-int8", "precision": "fast"}', "")
    assert "plan" not in older and Result.from_json(older).plan == {}
