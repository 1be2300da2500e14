"""The warm-up process in a frozen app, which has no ``python -m``: the app itself is started with the warm-up's flag,
and main.py answers it (engine.core.cpu.numba_cache.warmup.command)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from engine.core.cpu import numba_cache
from engine.core.cpu.numba_cache import warmup

ROOT = Path(numba_cache.ENGINE_ROOT).parent


def test_a_frozen_app_starts_itself_with_the_flag(monkeypatch, tmp_path):
    assert warmup.command(tmp_path)[1:3] == ["-m", "engine.core.cpu.numba_cache.warmup"]
    monkeypatch.setattr(sys, "frozen", True, raising=False)
    assert warmup.command(tmp_path) == [sys.executable, warmup.WARMUP_FLAG, str(tmp_path)]


def test_main_answers_the_flag_with_the_warm_up(tmp_path):
    """A folder holding this plan's marker already: the warm-up started through main.py finds it and exits 0 without
    compiling (an unknown flag would be an argparse error, status 2); a folder it cannot create is an error."""
    numba_cache.write_marker(tmp_path, numba_cache.compiled_key())
    done = subprocess.run([sys.executable, "main.py", warmup.WARMUP_FLAG, str(tmp_path)], cwd=ROOT,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    assert "compiling" not in done.stderr
    blocked = tmp_path / "file"
    blocked.write_text("not a folder")
    failed = subprocess.run([sys.executable, "main.py", warmup.WARMUP_FLAG, str(blocked / "cache")], cwd=ROOT,
                            capture_output=True, text=True, timeout=600)
    assert failed.returncode != 0
