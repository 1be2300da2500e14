"""The engine's switches (engine.options): read from the environment once, changed in code, and read where the
engine decides (graphs, compilation, Triton kernels) at the time it decides, not at import."""

from __future__ import annotations

import pytest
import torch

from engine import options
from engine.frames.compile import compile_enabled
from engine.frames.graphs.capture import graphs_enabled
from engine.kernels import TRITON_INSTALLED, triton_available
from engine.options import Options


@pytest.mark.parametrize(("environ", "expected"), [
    ({}, Options()),
    ({"ORATOR_EAGER": "1", "ORATOR_COMPILE": "0", "ORATOR_TRITON": "0"}, Options(False, False, False)),
    ({"ORATOR_EAGER": " TRUE ", "ORATOR_COMPILE": "No", "ORATOR_TRITON": "off"}, Options(False, False, False)),
    ({"ORATOR_EAGER": "0", "ORATOR_COMPILE": "1", "ORATOR_TRITON": "yes"}, Options()),
    ({"ORATOR_EAGER": "", "ORATOR_COMPILE": "", "ORATOR_TRITON": ""}, Options()),
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
    assert options.current() == Options(False, False, False)


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
