"""The options several commands share (sampling, device, precision, frame budget, segment target, pronunciation),
their value types, and what they are read into.

Nothing here imports PyTorch at import time: ``--help`` of every command parses without it
(tests/test_main_imports.py).
"""

from __future__ import annotations

import argparse

from engine.core.text.segments import DEFAULT_TARGET_CHARS, check_target_chars


def add_generation_arguments(parser: argparse.ArgumentParser) -> None:
    """What ``say``, ``export`` and ``voiceover`` take: sampling, device, frame budget, segment target,
    pronunciation."""
    parser.add_argument("--seed", type=int, help="seed for reproducible sampling")
    parser.add_argument("--greedy", action="store_true", help="always take the most likely code (no sampling)")
    parser.add_argument("--device", choices=("cpu", "cuda"), help="default: cuda when available")
    add_precision_argument(parser)
    parser.add_argument("--max-frames", type=positive_int, metavar="N",
                        help="at most N frames (12.5 per second) per segment (default: more, the longer its text)")
    add_segment_chars_argument(parser)
    add_pronunciation_arguments(parser)


def add_precision_argument(parser: argparse.ArgumentParser) -> None:
    """``--precision fast|exact``, which every command that loads a model takes (``engine.core.execution_plan``)."""
    from engine.core.options import PRECISIONS

    parser.add_argument("--precision", choices=PRECISIONS, default=None,
                        help="fast: int8 weights on a processor, bfloat16 on a GPU; exact: float32 (default: fast, "
                             "or $ORATOR_PRECISION; docs/cpu.md)")


def add_pronunciation_arguments(parser: argparse.ArgumentParser) -> None:
    rules = parser.add_mutually_exclusive_group()
    rules.add_argument("--pronunciation", metavar="FILE",
                       help="the pronunciation rules to speak with (default: the studio's, else the shipped ones)")
    rules.add_argument("--no-pronunciation", action="store_true", help="speak the text as written, without rules")


def add_segment_chars_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--segment-chars", type=_segment_chars, metavar="N",
                        help=f"merge short sentences of a line into segments of up to N characters, each spoken in "
                             f"one go (default {DEFAULT_TARGET_CHARS}; 0: one sentence at a time)")


def pronunciation_of(args: argparse.Namespace):
    """The lexicon a command speaks with (``engine.pronunciation.lexicon_or_default``), or None for
    ``--no-pronunciation``; a file that cannot be read raises its ``LexiconFileError``."""
    if args.no_pronunciation:
        return None
    from engine.pronunciation import lexicon_or_default

    return lexicon_or_default(args.pronunciation)


def positive_int(value: str) -> int:
    """An argument type: a whole number of at least 1."""
    try:
        number = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{value!r} is not a whole number") from None
    if number < 1:
        raise argparse.ArgumentTypeError("must be at least 1")
    return number


def _segment_chars(value: str) -> int:
    try:
        return check_target_chars(int(value))
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e) if "segment target" in str(e) else f"{value!r} is not a whole "
                                         "number") from None
