"""Errors from the engine and PyTorch become clear sentences for the GUI."""

from __future__ import annotations

import pytest
import torch

from engine.errors import CheckpointError, UnsupportedError
from qtapp.engine_errors import StudioError, describe_error


@pytest.mark.parametrize("exc, expected", [
    (torch.cuda.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB"), "The GPU ran out of memory"),
    (RuntimeError("CUDA out of memory. Tried to allocate 20.00 MiB"), "The GPU ran out of memory"),
    (CheckpointError("could not download 'Qwen/X' from Hugging Face (ConnectionError: ...)"), "no network?"),
    (CheckpointError("model directory '/m' does not exist"), "Model not found or incomplete: model directory"),
    (ConnectionError("[Errno 101] Network is unreachable"), "No network connection"),
    (MemoryError(), "The computer ran out of memory"),
    (FileNotFoundError(2, "No such file", "/books/a.epub"), "File not found: /books/a.epub"),
    (ValueError("odd"), "ValueError: odd"),
])
def test_messages_name_the_cause(exc, expected):
    assert expected in describe_error(exc)


def test_messages_already_written_for_people_pass_through():
    too_old = UnsupportedError("PyTorch 2.1.0 is too old: Orator needs 2.5.1 or newer.")
    assert describe_error(too_old) == str(too_old)
    assert describe_error(StudioError("No model is loaded yet.")) == "No model is loaded yet."
