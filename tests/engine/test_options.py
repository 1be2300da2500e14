"""The engine's switches (engine.core.options): read from the environment once, changed in code, and read where the
engine decides (graphs, compilation, Triton kernels) at the time it decides, not at import."""

from __future__ import annotations

import dataclasses

import pytest
import torch

from engine.core import options
from engine.core.frames.compile import compile_enabled
from engine.core.frames.graphs.capture import graphs_enabled
from engine.core.gpu_kernels import TRITON_INSTALLED, triton_available
from engine.core.options import Options


@pytest.mark.parametrize(("environ", "expected"), [
    ({}, Options()),
    ({"ORATOR_EAGER": "1", "ORATOR_COMPILE": "0", "ORATOR_TRITON": "0"}, Options(False, False, False)),
    ({"ORATOR_EAGER": " TRUE ", "ORATOR_COMPILE": "No", "ORATOR_TRITON": "off"}, Options(False, False, False)),
    ({"ORATOR_EAGER": "0", "ORATOR_COMPILE": "1", "ORATOR_TRITON": "yes"}, Options()),
    ({"ORATOR_EAGER": "", "ORATOR_COMPILE": "", "ORATOR_TRITON": ""}, Options()),
    # the switches of removed CPU paths (int4, Inductor's steps, the decoder's thread, the team) change nothing
    ({"ORATOR_CPU_COMPILE": "1", "ORATOR_CPU_INT4": "1", "ORATOR_DECODER_THREADS": "2", "ORATOR_CPU_TEAM": "0"},
     Options()),
])
def test_environment_values(environ, expected):
    assert Options.from_environment(environ) == expected


def test_configure_changes_what_the_engine_decides_after_import(engine_options, monkeypatch):
    cuda = torch.device("cuda")
    monkeypatch.setattr(torch.cuda, "get_device_capability", lambda device=None: (8, 0))
    engine_options(graphs=True, compile=True, triton=True)
    assert graphs_enabled(cuda) and compile_enabled(cuda)
    assert not graphs_enabled(torch.device("cpu")) and not compile_enabled(torch.device("cpu"))
    assert triton_available() == TRITON_INSTALLED
    engine_options(graphs=False, compile=False, triton=False)
    assert not graphs_enabled(cuda) and not compile_enabled(cuda) and not triton_available()
    assert (options.current().graphs, options.current().compile, options.current().triton) == (False, False, False)


def test_compile_needs_volta_or_newer(engine_options, monkeypatch):
    engine_options(compile=True)
    monkeypatch.setattr(torch.cuda, "get_device_capability", lambda device=None: (6, 1))
    assert not compile_enabled(torch.device("cuda"))


def test_the_environment_is_read_at_first_use_not_at_import(engine_options, monkeypatch):
    monkeypatch.setenv("ORATOR_EAGER", "1")
    monkeypatch.setattr(options, "_current", None)  # as in a process that has not asked yet
    assert options.current().graphs is False
    monkeypatch.setenv("ORATOR_EAGER", "0")
    assert options.current().graphs is False  # read once
    assert options.configure(Options.from_environment()).graphs is True


@pytest.mark.parametrize("changes", [{"graph": False}, {"triton": 0}, {"compile": "no"}, {"triton": None}])
def test_bad_changes_are_refused(engine_options, changes):
    before = options.current()
    with pytest.raises(TypeError):
        options.configure(**changes)
    assert options.current() == before


@pytest.mark.parametrize(("environ", "expected"), [
    ({"ORATOR_CPU_INT8": "0"}, {"precision": "exact"}),  # the old spelling of ORATOR_PRECISION=exact
    ({"ORATOR_CPU_INT8": "yes"}, {"precision": "fast"}),
    ({}, {"precision": "fast"}),
    ({"ORATOR_PRECISION": " Exact "}, {"precision": "exact"}),
    ({"ORATOR_PRECISION": "fast", "ORATOR_CPU_INT8": "0"}, {"precision": "fast"}),  # the new name wins
    ({"ORATOR_THREADS": "4"}, {"threads": 4}),
    ({"ORATOR_THREADS": " 12 "}, {"threads": 12}),
    ({}, {"threads": None}),
])
def test_cpu_options_from_the_environment(environ, expected):
    got = Options.from_environment(environ)
    assert {name: getattr(got, name) for name in expected} == expected


@pytest.mark.parametrize("threads", ["abc", "-1", "0", "1.5", "99999", "4 4"])
def test_a_bad_thread_count_is_a_clear_error(threads):
    with pytest.raises(ValueError, match="thread"):
        Options.from_environment({"ORATOR_THREADS": threads})


@pytest.mark.parametrize("threads", [0, -3, True, 2.0, "8", 10**9])
def test_bad_threads_in_code_are_refused(threads, engine_options):
    with pytest.raises((TypeError, ValueError)):
        options.configure(threads=threads)


def test_a_removed_switch_in_the_environment_is_ignored_and_logged_once(monkeypatch, caplog):
    """ORATOR_CPU_VNNI=0 no longer pins the products (the plan measures them at load): a process that still sets it
    runs, hearing why once."""
    monkeypatch.setattr(options, "_retired_logged", set())
    with caplog.at_level("WARNING", logger="engine.core.options"):
        for _ in range(2):
            assert Options.from_environment({"ORATOR_CPU_VNNI": "0"}) == Options()
    said = [r.getMessage() for r in caplog.records if "ORATOR_CPU_VNNI" in r.getMessage()]
    assert len(said) == 1 and "measured at load" in said[0]


def test_at_most_five_switches_choose_the_cpu_path():
    """The issue's bound: precision, the Numba steps, the bridge, chunk growth, threads."""
    cpu = {f.name for f in dataclasses.fields(Options)} - {"graphs", "compile", "triton"}
    assert cpu == {"precision", "cpu_numba", "cpu_warmup", "grow_chunks", "threads"}


@pytest.mark.parametrize("removed", ["cpu_int4", "cpu_compile", "decoder_threads", "cpu_team", "cpu_vnni"])
def test_the_removed_cpu_paths_options_are_refused_in_code(removed, engine_options):
    before = options.current()
    with pytest.raises(TypeError, match="unknown option"):
        options.configure(**{removed: 1})
    assert options.current() == before


def test_threads_default_to_the_usable_cores_less_one(monkeypatch):
    from engine.core import runtime

    for cores, expected in ((1, 1), (2, 1), (8, 7), (16, 15)):
        monkeypatch.setattr(runtime, "available_cores", lambda cores=cores: cores)
        assert runtime.cpu_threads() == expected
    assert runtime.cpu_threads(3) == 3


@pytest.mark.parametrize("value", ["small", "int8", "1", "fastest"])
def test_a_bad_precision_is_a_clear_error(value, engine_options):
    before = options.current()
    with pytest.raises(ValueError, match="ORATOR_PRECISION must be one of fast, exact"):
        Options.from_environment({"ORATOR_PRECISION": value})
    for wrong in (value, value.upper(), None):
        with pytest.raises(ValueError, match="precision must be one of fast, exact"):
            options.configure(precision=wrong)
    assert options.current() == before


def test_the_old_cpu_int8_option_sets_the_precision(engine_options):
    assert options.configure(cpu_int8=False).precision == "exact"
    assert options.configure(cpu_int8=True).precision == "fast"
    assert not hasattr(options.current(), "cpu_int8")
