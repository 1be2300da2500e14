"""Turn whatever the engine or PyTorch raised into one sentence a reader of the GUI understands."""

from __future__ import annotations

from engine.errors import CheckpointError, OratorError


class StudioError(OratorError):
    """A condition of the studio itself, already worded for people (no model loaded yet, ...)."""


def _is_cuda_oom(exc: BaseException) -> bool:
    try:
        import torch
    except ImportError:
        return False
    if isinstance(exc, torch.cuda.OutOfMemoryError):
        return True
    return isinstance(exc, RuntimeError) and "CUDA out of memory" in str(exc)


def describe_error(exc: BaseException) -> str:
    """A clear message for the error dialogs and the status bar."""
    if _is_cuda_oom(exc):
        return ("The GPU ran out of memory. Close other programs using the GPU, pick the 0.6B model, "
                "or run on the CPU.")
    if isinstance(exc, CheckpointError):
        text = str(exc)
        if "could not download" in text:
            return f"Model not found and it could not be downloaded (no network?): {text}"
        return f"Model not found or incomplete: {text}"
    if isinstance(exc, OratorError):  # already worded for people (voice, text, torch too old, studio)
        return str(exc)
    if isinstance(exc, ConnectionError | TimeoutError):
        return f"No network connection: {exc}"
    if isinstance(exc, MemoryError):
        return "The computer ran out of memory. Pick the 0.6B model or close other programs."
    if isinstance(exc, FileNotFoundError):
        return f"File not found: {exc.filename or exc}"
    return f"{type(exc).__name__}: {exc}"
