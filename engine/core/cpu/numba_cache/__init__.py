"""Where Numba keeps the CPU steps' compiled code, and whether all that the engine's plan needs is there.

Numba caches a compiled function beside its source (``__pycache__``) unless ``NUMBA_CACHE_DIR`` names a folder, and
a packaged or read-only install cannot write beside its sources. ``use_cache_folder`` (``folder``, called by each
module of the engine right before it imports Numba) sets it to ``numba/<digest>`` in the user's cache folder
(``engine.user_cache``), ``<digest>`` that of every source file the kernels compile or inline (``KERNEL_SOURCES``):
Numba checks only the file of the function it caches, so without it an edit to a file that function inlines would
load stale code (numba/numba#1833). A NUMBA_CACHE_DIR the user set stands (and with it that risk).

A *marker* in that folder (``ready-<hash>.json``) says that every kernel of one plan is in the cache: the warm-up
process (``engine.core.cpu.numba_cache.warmup``) writes it once it has compiled them all, keyed (``compiled_key``) on
the sources' digest, the versions of Numba, llvmlite, NumPy and Python, the processor Numba compiles for (its name and
features), the NUMBA_* settings and the plan's compile-time choices. This module imports nothing heavy: the warm-up
process reads its lock before it loads PyTorch.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
from pathlib import Path

from engine.atomic_files import atomic_write_text
from engine.core.cpu.numba_cache.folder import (  # noqa: F401 - this package's names
    ENGINE_ROOT,
    ENV,
    KERNEL_SOURCES,
    cache_folder,
    sources_digest,
    use_cache_folder,
)

LOCK_NAME = "warmup.lock"  # held by the warm-up process that is compiling into the folder
LOG_NAME = "warmup.log"  # what the warm-up processes printed and logged


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
        "stamps": source_stamps(),
    }


def source_stamps(root: Path = ENGINE_ROOT) -> list[list]:
    """Each kernel source's absolute path, modification time and size (a frozen app's executable's time and size):
    Numba files a function's entries under its source's folder and drops them when that stamp changes, so a marker
    written for another copy of the same sources (a second checkout, a reinstall) must not say this one is warm."""
    frozen = Path(sys.executable) if getattr(sys, "frozen", False) else None
    stamps = []
    for name in KERNEL_SOURCES:
        path = (Path(root) / name).resolve()
        stat = (frozen or path).stat()
        stamps.append([str(path), stat.st_mtime, stat.st_size])
    return stamps


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
