"""Where Numba keeps the CPU steps' compiled code, and whether all that the engine's plan needs is there.

Numba caches a compiled function beside its source (``__pycache__``) unless ``NUMBA_CACHE_DIR`` names a folder, and
a packaged or read-only install cannot write beside its sources. ``use_cache_folder`` (called by ``engine.core.model``
before anything imports Numba) sets it to ``numba/<digest>`` in the user's cache folder (``engine.user_cache``),
``<digest>`` that of every source file the kernels compile or inline (``KERNEL_SOURCES``): Numba checks only the
file of the function it caches, so without it an edit to a file that function inlines would load stale code
(numba/numba#1833). A NUMBA_CACHE_DIR the user set stands (and with it that risk).

A *marker* in that folder (``ready-<hash>.json``) says that every kernel of one plan is in the cache: the warm-up
process (``engine.core.cpu.numba_cache.warmup``) writes it once it has compiled them all, keyed (``compiled_key``) on
the sources' digest, the versions of Numba, llvmlite, NumPy and Python, the processor Numba compiles for (its name and
features), the NUMBA_* settings and the plan's compile-time choices. This module imports nothing heavy: the warm-up
process reads its lock before it loads PyTorch.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import sys
import tempfile
from pathlib import Path

from engine.atomic_files import atomic_write_text
from engine.user_cache import user_cache_folder

ENV = "NUMBA_CACHE_DIR"
ENGINE_ROOT = Path(__file__).resolve().parents[3]
# every file whose code the Numba kernels compile or inline, or whose constants they read, from ENGINE_ROOT
KERNEL_SOURCES = (
    "core/cpu/numba_layer.py", "core/cpu/vnni.py", "core/cpu/int8.py", "core/cpu/prompt_numba.py",
    "core/cpu/prompt_rows_numba.py", "core/cpu/numba_predictor.py",
)
LOCK_NAME = "warmup.lock"  # held by the warm-up process that is compiling into the folder
LOG_NAME = "warmup.log"  # what the warm-up processes printed and logged


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


def compiled_key() -> dict:
    """What decides the compiled code of the int8 plan's kernels: a marker of another key says nothing about this
    one. Imports Numba."""
    import llvmlite
    import llvmlite.binding as llvm
    import numpy

    from engine.core.cpu import numba_layer  # its import tunes the features Numba compiles for

    config = numba_layer.numba.config
    return {
        "sources": sources_digest(), "numba": numba_layer.numba.__version__, "llvmlite": llvmlite.__version__,
        "numpy": numpy.__version__, "python": f"{sys.implementation.name} {sys.version.split()[0]}",
        "triple": llvm.get_process_triple(), "cpu": config.CPU_NAME or llvm.get_host_cpu_name(),
        "features": config.CPU_FEATURES or llvm.get_host_cpu_features().flatten(),
        "settings": {k: v for k, v in sorted(os.environ.items()) if k.startswith("NUMBA_") and k != ENV},
        "plan": {"weights": "int8"},
    }


def marker_path(folder: Path, key: dict) -> Path:
    name = hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()[:16]
    return Path(folder) / f"ready-{name}.json"


def is_warm(folder: Path, key: dict) -> bool:
    """Whether ``folder`` holds the marker of ``key`` (its content checked: a torn or foreign file is not one)."""
    try:
        return json.loads(marker_path(folder, key).read_text(encoding="utf-8")) == key
    except (OSError, ValueError):
        return False


def write_marker(folder: Path, key: dict) -> Path:
    """Say that every kernel of ``key`` is in ``folder``'s cache (written whole or not at all)."""
    path = marker_path(folder, key)
    atomic_write_text(path, json.dumps(key, sort_keys=True, indent=1) + "\n")
    return path
