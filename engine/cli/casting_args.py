"""``orator export``'s casting options: ``--dialogue-voice NAME`` and ``--cast CHARACTER=VOICE,...|FILE``, read
into an ``engine.production.casting.Cast`` before any model loads (a bad cast is one clear line, exit status 2)."""

from __future__ import annotations

import argparse

from engine.errors import UnsupportedError
from engine.production.casting import Cast, cast_argument


def add_cast_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--dialogue-voice", metavar="NAME",
                        help="speak quoted dialogue in this voice (a voice of the library or a preset speaker); "
                             "narration keeps the default voice")
    parser.add_argument("--cast", metavar="CHARACTER=VOICE,...|FILE",
                        help="speak the quotations the text gives to a character (\"...,\" said Elizabeth) in that "
                             "character's voice, e.g. \"Elizabeth=Vivian,Mr. Darcy=Ryan\", or a file of such "
                             "pairs, one a line; other quotations take --dialogue-voice, else the default voice")


def cast_of(args: argparse.Namespace) -> Cast | None:
    """The cast the options ask for, or None; ``UnsupportedError`` for a cast that cannot be read."""
    dialogue = " ".join((args.dialogue_voice or "").split()) or None
    if args.dialogue_voice is not None and not dialogue:
        raise UnsupportedError("--dialogue-voice: give the name of a voice")
    characters = cast_argument(args.cast) if args.cast is not None else ()
    cast = Cast(dialogue, characters)
    return cast or None
