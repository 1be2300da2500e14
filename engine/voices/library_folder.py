"""The files of a voice library's folder: which are voices (``NAME.voice``, ``scan_voice_files``), what marks a
file's change (``file_stamp``), which are temporary files an interrupted write left behind (``is_temp_name``), and
the exclusive lock on the folder that serializes changes across processes (``folder_lock``, on the hidden
``LOCK_FILE``)."""

from __future__ import annotations

import os
from contextlib import contextmanager
from pathlib import Path

from engine.atomic_files import TEMP_PREFIX, TEMP_SUFFIX

VOICE_SUFFIX = ".voice"
LOCK_FILE = ".orator-library.lock"  # hidden: never listed as a voice, never taken for a temporary file


@contextmanager
def folder_lock(folder: Path):
    """An exclusive lock on ``folder`` shared with other processes; none where there is no ``flock`` (Windows) or
    the lock file cannot be opened (a read-only folder, where no change succeeds anyway)."""
    try:
        import fcntl
    except ImportError:
        yield
        return
    try:
        fd = os.open(folder / LOCK_FILE, os.O_RDWR | os.O_CREAT, 0o644)
    except OSError:
        yield
        return
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # closing releases the lock


def scan_voice_files(folder: Path) -> list[str]:
    """The names of the folder's voice files (temporary and hidden files aside)."""
    try:
        with os.scandir(folder) as it:
            return [e.name[: -len(VOICE_SUFFIX)] for e in it
                    if e.name.endswith(VOICE_SUFFIX) and not e.name.startswith(".") and len(e.name) > len(VOICE_SUFFIX)
                    and e.is_file()]
    except FileNotFoundError:
        return []


def file_stamp(path: Path) -> tuple[int, int, int]:
    """What changes whenever a file's content may have: a replaced file is a new inode."""
    st = path.stat()
    return st.st_mtime_ns, st.st_size, st.st_ino


def is_temp_name(file_name: str) -> bool:
    """Whether ``file_name`` is a temporary file of an interrupted write (this version's or an earlier one's)."""
    if file_name.startswith(TEMP_PREFIX) and file_name.endswith(TEMP_SUFFIX):
        return True
    # earlier versions': .NAME.voice.*.tmp[.voice], and .tmp* of the tempfile crate safetensors wrote through
    return file_name.startswith(".") and (file_name.endswith((".tmp", ".tmp" + VOICE_SUFFIX))
                                          or file_name.startswith(".tmp"))
