"""Where Numba keeps the CPU steps' compiled code: ``use_cache_folder``, which every module of the engine that imports
Numba calls first (Numba reads its cache folder once, at import), and the kernel sources' digest that names the folder
(``engine.core.cpu.numba_cache`` says why). It imports nothing of the engine's inference, so that those modules can."""

from __future__ import annotations

import functools
import hashlib
import os
import sys
import tempfile
from pathlib import Path

from engine.user_cache import user_cache_folder

ENV = "NUMBA_CACHE_DIR"
ENGINE_ROOT = Path(__file__).resolve().parents[3]
# every file whose code the Numba kernels compile or inline, or whose constants they read, from ENGINE_ROOT
KERNEL_SOURCES = (
    "core/cpu/numba_layer.py", "core/cpu/vnni.py", "core/cpu/int8.py", "core/cpu/numba_predictor.py",
)


def sources_digest(root: Path | None = None) -> str | None:
    """SHA-256 of ``KERNEL_SOURCES`` (names and contents) under ``root``, by default this engine's as first read by
    this process; None where one is missing (a frozen app ships no sources: Numba caches nothing there)."""
    return _engine_digest() if root is None else _digest(root)


@functools.cache
def _engine_digest() -> str | None:
    return _digest(ENGINE_ROOT)


def _digest(root: Path) -> str | None:
    digest = hashlib.sha256()
    for name in KERNEL_SOURCES:
        try:
            data = (root / name).read_bytes()
        except OSError:
            return None
        digest.update(name.encode() + b"\0" + len(data).to_bytes(8, "little") + data)
    return digest.hexdigest()


def _writable(folder: Path) -> bool:
    try:
        folder.mkdir(parents=True, exist_ok=True)
        tempfile.TemporaryFile(dir=folder).close()
        return True
    except OSError:
        return False


def use_cache_folder() -> Path | None:
    """Point Numba's cache at the user's cache folder (``numba/<sources' digest>``), unless NUMBA_CACHE_DIR is set
    already; returns the folder Numba caches in, None where it is not one this module knows of (no sources, or
    a folder that cannot be written: Numba then looks for a place of its own)."""
    if os.environ.get(ENV):
        return cache_folder()
    digest = sources_digest()
    if digest is None:
        return None
    folder = user_cache_folder() / "numba" / digest[:16]
    if not _writable(folder):
        return None
    os.environ[ENV] = str(folder)
    if "numba.core.config" in sys.modules:  # imported before the engine: its settings read the folder again
        sys.modules["numba.core.config"].reload_config()
    return folder


def cache_folder() -> Path | None:
    """The folder Numba caches this process's kernels in (NUMBA_CACHE_DIR), where it is set and can be written."""
    value = os.environ.get(ENV)
    if not value or sources_digest() is None:
        return None
    folder = Path(value)
    return folder if _writable(folder) else None
