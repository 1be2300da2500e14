"""How a command ends: its exit statuses, the one line it prints for a failure, and the output checks that fail
before any speech.

Errors the engine raises on purpose (``OratorError``) exit with ``EXIT_ERROR``; an output that cannot be written
with ``EXIT_OUTPUT``; Ctrl-C with ``EXIT_INTERRUPTED``, as a shell reports a process a SIGINT ended.
"""

from __future__ import annotations

import sys
from pathlib import Path

EXIT_ERROR = 2  # a bad input, voice or option
EXIT_OUTPUT = 3  # the output cannot be written
EXIT_INTERRUPTED = 130  # Ctrl-C


class OutputError(Exception):
    """An output file or folder cannot be written."""


def fail(error: Exception, code: int, command: str = "export") -> int:
    """Print ``error`` as one line of ``orator COMMAND`` and return the exit status ``code``."""
    print(f"orator {command}: error: {' '.join(str(error).split())}", file=sys.stderr)
    return code


def check_writable(folder: Path) -> None:
    """Fail now, not after an hour of speech, when ``folder`` cannot take new files."""
    from engine.production.encode import create_temp_beside

    probe = folder / "probe"
    existing = next((p for p in (folder, *folder.parents) if p.exists()), None)
    if existing is not None and not existing.is_dir():
        raise OutputError(f"cannot write to {folder}: {existing} is a file, not a folder")
    try:
        create_temp_beside(probe).unlink()
    except OSError as e:
        raise OutputError(f"cannot write to {folder}: {e.strerror or e}") from None
