"""The user's cache folder for Orator: the platform's (``~/.cache/Orator`` on Linux, ``~/Library/Caches/Orator`` on
macOS), which the segment cache (``engine.production.segment_cache``) and the compiled CPU steps
(``engine.core.cpu.numba_cache``) live under."""

from __future__ import annotations

import os
from pathlib import Path


def user_cache_folder() -> Path:
    """The platform's user cache folder for Orator (not created here)."""
    try:
        from platformdirs import user_cache_dir
    except ImportError:  # the command line may run without platformdirs: the place it picks on Linux
        return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "Orator"
    return Path(user_cache_dir("Orator", "Orator"))
