"""Orator's command line: ``python main.py`` starts the desktop studio; subcommands do the rest.

Each subcommand is one entry of ``COMMANDS``: a function that adds its arguments to a subparser and
the function that runs it. ``gui`` is the default when no subcommand is given.
"""

from __future__ import annotations

import argparse
import sys

if __name__ == "__main__" and sys.argv[1:2] == ["--pdf-worker"]:
    # the PDF reader's child process (engine/documents/pdf_worker.py): a frozen app has no "python -m", so it
    # starts here, before the imports below load PyTorch
    from engine.documents.pdf_worker import worker_main

    sys.exit(worker_main(sys.argv[2:4]))

if __name__ == "__main__" and sys.argv[1:2] == ["--numba-warmup"]:
    # the compiling process of the cold-start bridge (engine/core/cpu/numba_cache/warmup.py), likewise started here
    # in a frozen app
    from engine.core.cpu.numba_cache.warmup import main as warmup_main

    sys.exit(warmup_main(sys.argv[2:3]))

from engine.cli.export import add_export_arguments, run_export_command  # noqa: E402
from engine.cli.info import add_info_arguments, run_info_command  # noqa: E402
from engine.cli.options import add_precision_argument  # noqa: E402
from engine.cli.say import add_say_arguments, run_say_command  # noqa: E402
from engine.cli.voiceover import add_voiceover_arguments, run_voiceover_command  # noqa: E402
from server.cli import add_serve_arguments, run_serve_command  # noqa: E402


# ---- gui ------------------------------------------------------------------------------------------
def add_gui_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("file", nargs="?", help="a document to open (.txt .md .html .epub .pdf .docx)")
    parser.add_argument("--self-test", action="store_true",
                        help="speak one sentence with a tiny synthetic model, headless; exit 0 if it works")
    add_precision_argument(parser)


def run_gui_command(args: argparse.Namespace) -> int:
    if args.self_test:
        from qtapp.self_test import run_self_test

        return run_self_test(args.precision)
    from qtapp.app import run_gui

    return run_gui(args.file, args.precision)


# ---- dispatch: add a subcommand by adding one line here ------------------------------------------------
COMMANDS = {
    "gui": ("open the desktop studio (the default)", add_gui_arguments, run_gui_command),
    "serve": ("serve the OpenAI-compatible speech API and its web page", add_serve_arguments, run_serve_command),
    "say": ("speak text into a wav or flac file", add_say_arguments, run_say_command),
    "export": ("turn documents into audiobooks: m4b, mp3, opus, flac or wav, with chapters and subtitles",
               add_export_arguments, run_export_command),
    "voiceover": ("speak a subtitle file (.srt, .vtt) into one track, each line on its cue",
                  add_voiceover_arguments, run_voiceover_command),
    "info": ("print this machine and the execution plan a model runs on, as JSON", add_info_arguments,
             run_info_command),
}
DEFAULT_COMMAND = "gui"


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="orator", description="Orator: a desktop speech studio and "
                                                                 "a fast Qwen3-TTS engine.")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, (help_text, add_arguments, run) in COMMANDS.items():
        sub = subparsers.add_parser(name, help=help_text, description=help_text)
        add_arguments(sub)
        sub.set_defaults(run=run)
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    parser = build_parser()
    if not argv or argv[0] not in COMMANDS and argv[0] not in ("-h", "--help"):
        argv = [DEFAULT_COMMAND, *argv]
    args = parser.parse_args(argv)
    return args.run(args)


if __name__ == "__main__":
    sys.exit(main())
