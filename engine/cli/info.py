"""``orator info``: this machine and the execution plan an engine runs, as JSON on standard output.

    python main.py info                         # the machine, and the plan the options would choose
    python main.py info --precision exact       # ... for another precision or device
    python main.py info --model DIR             # the plan of that model loaded (its steps built, compiled if needed)

Without ``--model`` nothing is loaded: the plan is ``engine.core.execution_plan.planned`` (the kernels' compile not
tried). With it, the engine is loaded as ``say`` loads it and its ``execution_plan`` printed. Its ``--help`` imports
neither torch nor the web stack. Exit status 0, 2 for a model that cannot be loaded or an option it contradicts.
"""

from __future__ import annotations

import argparse
import json
import sys

from engine.cli.exits import EXIT_ERROR
from engine.cli.options import add_precision_argument
from engine.errors import OratorError


def add_info_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--model", help="a model directory or a Hugging Face id: load it and print its plan")
    parser.add_argument("--device", choices=("cpu", "cuda"), help="default: cuda when available")
    add_precision_argument(parser)


def run_info_command(args: argparse.Namespace) -> int:
    try:
        print(json.dumps(info(args.model, args.device, args.precision), indent=1))
        return 0
    except (OratorError, ValueError) as e:
        print(f"orator info: error: {e}", file=sys.stderr)
        return EXIT_ERROR


def info(model: str | None, device: str | None, precision: str | None) -> dict:
    """{"machine": ..., "plan": ...}: the plan of ``model`` loaded, or the one a load would start from."""
    import torch

    from engine.core.execution_plan import machine, planned

    if device == "cuda" and not torch.cuda.is_available():
        raise ValueError("--device cuda: this PyTorch installation sees no CUDA GPU; use --device cpu")
    if model is None:
        return {"machine": machine(), "plan": planned(device, precision).as_dict()}
    from engine.cli.loading import load_engine

    engine = load_engine(model, device, out=sys.stderr, precision=precision)
    return {"machine": machine(), "plan": engine.execution_plan.as_dict()}
