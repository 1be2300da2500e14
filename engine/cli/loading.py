"""The model a command speaks with: loaded as ``--model``, ``--device`` and ``--precision`` ask, with one line
saying what was loaded, and the sampling ``--seed`` and ``--greedy`` ask of it.

PyTorch is imported here only when a model is loaded, never when a command's arguments are parsed.
"""

from __future__ import annotations

import argparse
import time
from dataclasses import replace

from engine.errors import UnsupportedError


def load_engine(model: str, device: str | None, out=None, precision: str | None = None):
    """The ``Engine`` of ``model`` on ``device`` (None: cuda when available), its load reported on ``out``
    (None: stdout); ``UnsupportedError`` for ``cuda`` where PyTorch sees no GPU."""
    import torch
    import transformers

    from engine import Engine
    from engine.core.config import model_title

    transformers.logging.set_verbosity_error()  # its tokenizer-loading notices mean nothing to a CLI user
    if device is None:
        device = "cuda" if torch.cuda.is_available() else "cpu"
    elif device == "cuda" and not torch.cuda.is_available():
        raise UnsupportedError("--device cuda: this PyTorch installation sees no CUDA GPU; use --device cpu")
    start = time.perf_counter()
    engine = Engine.from_pretrained(model, device=device, precision=precision)
    print(f"loaded {model} ({model_title(engine.model_type, engine.model_size)}) on {device} "
          f"in {time.perf_counter() - start:.1f} s; plan: {engine.execution_plan.summary()}", file=out)
    return engine


def sampling_of(args: argparse.Namespace, engine):
    """The engine's default sampling with ``--greedy`` and ``--seed`` applied."""
    return replace(engine.defaults, greedy=args.greedy or engine.defaults.greedy,
                   seed=args.seed if args.seed is not None else engine.defaults.seed)
