"""Loading the served model: ``load_engine``, shared by ``python main.py serve`` and each Ray Serve replica.

PyTorch and the engine are imported when a model loads, not with this module, so that the command line's parsers
stay light.
"""

from __future__ import annotations


def load_engine(model: str, device: str, dtype: str | None, decoder_dtype: str | None = None,
                precision: str | None = None):
    """An ``Engine`` of ``model`` on ``device`` (``auto``: CUDA where PyTorch sees it), dtypes named as in torch."""
    import torch

    from engine import Engine

    if device == "auto":
        device = "cuda" if torch.cuda.is_available() else "cpu"
    return Engine.from_pretrained(model, device=device, dtype=getattr(torch, dtype) if dtype else None,
                                  decoder_dtype=getattr(torch, decoder_dtype) if decoder_dtype else None,
                                  precision=precision)
