"""The execution plan (engine.core.execution_plan): chosen once at load from the machine, the options and the model,
frozen, logged once, named by ``precision``; a fallback is named with its reason; ``main.py info`` prints it."""

from __future__ import annotations

import dataclasses
import json
import logging

import pytest
import torch

from engine import Engine
from engine.core.cpu import one_position_numba as jit
from engine.core.execution_plan import ExecutionPlan, planned, resolve_precision

CPU = torch.device("cpu")


@pytest.mark.parametrize("precision", ["fast", "exact"])
def test_precision_is_a_named_parameter_and_decides_the_weights(tiny_model_dir, precision):
    """On a CPU, ``dtype=float32`` no longer chooses: the precision does, int8 weights or float32."""
    engine = Engine.from_pretrained(tiny_model_dir("custom_voice"), device="cpu", dtype=torch.float32,
                                    precision=precision)
    plan = engine.execution_plan
    assert isinstance(plan, ExecutionPlan) and engine.precision == plan.precision == precision
    assert plan.device == "cpu" and plan.model == "CustomVoice 0.6B" and plan.threads >= 1
    assert engine.cpu_int8 == (precision == "fast") == (plan.weights == "int8")
    if precision == "exact":
        assert (plan.path, plan.decoder, plan.kernels, plan.thread_counts) == ("float32", "float32", (), ())
    else:
        assert plan.path in ("numba-int8", "torch-int8")
        assert plan.path.startswith("numba") == engine.cpu_numba_steps
        assert plan.decoder == str(next(engine.decoder.parameters()).dtype).removeprefix("torch.")
        assert any(k.startswith("prompt rows: ") for k in plan.kernels)


def test_the_plan_is_frozen_and_logged_once_in_one_line(tiny_model_dir, caplog):
    with caplog.at_level(logging.INFO, logger="engine.core.engine"):
        engine = Engine.from_pretrained(tiny_model_dir("custom_voice"), device="cpu", precision="exact")
        engine.synthesize("Hello there.", engine_voice(engine), max_frames=3)
    said = [r.getMessage() for r in caplog.records if r.getMessage().startswith("execution plan: ")]
    assert said == [f"execution plan: {engine.execution_plan.summary()}"] and "\n" not in said[0]
    with pytest.raises(dataclasses.FrozenInstanceError):
        engine.execution_plan.path = "cuda-graphs"
    assert json.loads(json.dumps(engine.execution_plan.as_dict()))["precision"] == "exact"


def engine_voice(engine):
    from engine import Voice

    return Voice.preset(engine.speakers[0])


def test_the_old_cpu_int8_argument_names_a_precision(tiny_model_dir):
    exact = Engine.from_pretrained(tiny_model_dir("custom_voice"), device="cpu", cpu_int8=False)
    assert exact.execution_plan.precision == "exact" and not exact.cpu_int8
    assert Engine.from_pretrained(tiny_model_dir("custom_voice"), device="cpu", cpu_int8=False,
                                  precision="fast").cpu_int8  # the new name wins


def test_the_default_precision_is_the_option(tiny_model_dir, engine_options):
    engine_options(precision="exact")
    assert Engine.from_pretrained(tiny_model_dir("custom_voice"), device="cpu").execution_plan.precision == "exact"
    assert planned("cpu").precision == "exact" and planned("cpu", "fast").precision == "fast"


def test_float64_takes_the_exact_plan_and_says_why(tiny_model_dir):
    engine = Engine.from_pretrained(tiny_model_dir("custom_voice"), device="cpu", dtype=torch.float64)
    plan = engine.execution_plan
    assert (plan.precision, plan.weights, plan.decoder) == ("exact", "float64", "float64") and not engine.cpu_int8
    assert len(plan.fallbacks) == 1 and "float64" in plan.fallbacks[0] and "fallback: " in plan.summary()


@pytest.mark.parametrize(("device", "precision", "dtype"), [
    (CPU, "fast", torch.float64), (CPU, "fast", torch.bfloat16), (CPU, "turbo", None), (CPU, "", None),
    (torch.device("cuda"), "exact", torch.bfloat16), (torch.device("cuda"), "fast", torch.float32),
])
def test_a_precision_the_dtype_contradicts_is_a_clear_error(device, precision, dtype):
    with pytest.raises(ValueError, match="precision"):
        resolve_precision(device, precision, dtype)


@pytest.mark.parametrize(("precision", "dtype", "expected"), [
    (None, None, ("fast", torch.float32)), ("exact", None, ("exact", torch.float32)),
    ("exact", torch.float64, ("exact", torch.float64)), (None, torch.float32, ("fast", torch.float32)),
])
def test_a_cpu_precision_resolves_to_its_float_part(precision, dtype, expected):
    assert resolve_precision(CPU, precision, dtype, "fast")[:2] == expected


def test_on_a_gpu_the_precision_picks_the_dtype_and_a_dtype_names_the_precision(monkeypatch):
    from engine.core import runtime

    cuda = torch.device("cuda")
    monkeypatch.setattr(runtime, "default_dtype", lambda device: torch.bfloat16)
    assert resolve_precision(cuda, "fast", None) == ("fast", torch.bfloat16, ())
    assert resolve_precision(cuda, "exact", None) == ("exact", torch.float32, ())
    assert resolve_precision(cuda, None, torch.float16)[:2] == ("fast", torch.float16)
    assert resolve_precision(cuda, None, torch.float32)[:2] == ("exact", torch.float32)


@pytest.mark.skipif(jit.numba is None, reason="Numba is not installed")
def test_numba_switched_off_is_a_fallback_named_in_the_plan(tiny_model_dir, engine_options):
    engine_options(cpu_numba=False)
    plan = Engine.from_pretrained(tiny_model_dir("custom_voice"), device="cpu", precision="fast").execution_plan
    assert plan.path == "torch-int8" and plan.bridge is None
    assert plan.fallbacks == ("the cpu_numba option is off: PyTorch's int8 steps",)


def test_pinned_choices_are_in_the_plan(tiny_model_dir, engine_options):
    """What follows the machine's momentary speed (chunk growth, the thread count measured frame by frame) is
    pinned through the options the plan is chosen from, and the plan says so."""
    engine_options(grow_chunks=False, threads=1)
    plan = Engine.from_pretrained(tiny_model_dir("custom_voice"), device="cpu", precision="fast").execution_plan
    assert (plan.grow_chunks, plan.threads, plan.thread_counts) == (False, 1, ())
    engine_options(grow_chunks=True, threads=None)
    grown = Engine.from_pretrained(tiny_model_dir("custom_voice"), device="cpu", precision="fast")
    assert grown.execution_plan.grow_chunks and grown.grows_chunks


def test_info_prints_the_machine_and_the_plan_as_json(capsys, tiny_model_dir):
    import main

    assert main.main(["info", "--precision", "exact", "--device", "cpu"]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert shown["plan"]["precision"] == "exact" and shown["plan"]["path"] == "float32"
    assert shown["machine"]["cores"] >= 1 and isinstance(shown["machine"]["cpu_features"], list)
    assert main.main(["info", "--model", str(tiny_model_dir("custom_voice")), "--precision", "exact"]) == 0
    loaded = json.loads(capsys.readouterr().out)["plan"]
    assert loaded["model"] == "CustomVoice 0.6B" and loaded["weights"] == "float32"


def test_info_of_a_model_that_cannot_load_is_one_line(capsys, tmp_path):
    import main

    assert main.main(["info", "--model", str(tmp_path / "missing"), "--device", "cpu"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("orator info: error: ")
