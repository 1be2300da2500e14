"""Atomic, durable file writes: write a temporary file beside the target, sync it, rename it over the target,
then sync the folder.

A crash or power loss mid-write leaves either the old file or the new one, never a truncated mix, and a
completed write survives a power loss. Temporary files are named ``.orator-*.tmp`` (``TEMP_PREFIX`` /
``TEMP_SUFFIX``): short whatever the target's name, so a long target name never makes its temporary name too
long, and recognisable, so a folder's owner can clean up those an interrupted write left behind.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable
from pathlib import Path

TEMP_PREFIX = ".orator-"
TEMP_SUFFIX = ".tmp"


def atomic_write(path: str | os.PathLike, write: Callable[[Path], None]) -> None:
    """Call ``write(tmp_path)`` for a temporary file in ``path``'s folder, then move it onto ``path``."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(prefix=TEMP_PREFIX, suffix=TEMP_SUFFIX, dir=path.parent)
    os.close(fd)
    tmp = Path(tmp_name)
    try:
        write(tmp)
        with open(tmp, "rb+") as f:
            os.fsync(f.fileno())
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)
    sync_folder(path.parent)


def atomic_write_text(path: str | os.PathLike, text: str) -> None:
    atomic_write(path, lambda tmp: tmp.write_text(text, encoding="utf-8"))


def sync_folder(folder: str | os.PathLike) -> None:
    """Flush a folder's entries (a rename, a new or removed file) to disk, where the system allows it."""
    if os.name != "posix":  # Windows cannot open a folder as a file; its renames are journaled by NTFS
        return
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:  # some network and FUSE file systems refuse to sync a folder; the rename itself stands
        pass
    finally:
        os.close(fd)
