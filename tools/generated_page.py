"""Pages written by a script (docs/cli.md, docs/architecture.md, docs/benchmarks.md): the generated block between two
marker lines swapped for a new one, and the command line's write-or-``--check`` step, which names the command that
rewrites a page found out of date."""

from __future__ import annotations

import sys
from pathlib import Path


def replace_block(page: str, start: str, end: str, block: str, where: str) -> str:
    """``page`` with the text from its ``start`` line to its ``end`` line replaced by ``block`` (markers included);
    exits saying ``where`` the markers are missing."""
    head, found, rest = page.partition(start)
    if not found or end not in rest:
        raise SystemExit(where)
    return head + block + rest.split(end, 1)[1]


def write_or_check(path: Path, wanted: str, command: str, argv: list[str] | None = None) -> int:
    """Write ``wanted`` to ``path``; with ``--check`` among the arguments, only compare: 1 (saying to run
    ``command``) where the page differs, else 0."""
    if "--check" in (sys.argv[1:] if argv is None else argv):
        if not path.is_file() or path.read_text(encoding="utf-8") != wanted:
            print(f"{path} is out of date: run {command}", file=sys.stderr)
            return 1
        return 0
    path.write_text(wanted, encoding="utf-8")
    return 0
