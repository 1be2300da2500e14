"""Numba's cache folder and the warm-up's markers (engine.core.cpu.numba_cache): the folder keyed on every kernel
source, a user's NUMBA_CACHE_DIR kept, markers keyed on what decides the compiled code, written whole."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from engine.core.cpu import numba_cache

ROOT = Path(numba_cache.ENGINE_ROOT).parent


def test_every_module_that_compiles_with_numba_is_a_kernel_source():
    """A file that compiles Numba code (a jitted function, an overload or an intrinsic, which may inline another
    file's) is one whose edit must start a fresh cache: Numba checks only the file of the function it caches."""
    uses = re.compile(r"^\s*@(njit|overload|intrinsic|numba\.njit)\b", re.MULTILINE)
    found = {str(p.relative_to(numba_cache.ENGINE_ROOT)) for p in Path(numba_cache.ENGINE_ROOT).rglob("*.py")
             if uses.search(p.read_text(encoding="utf-8"))}
    assert found, "no module of the engine imports Numba"
    assert found <= set(numba_cache.KERNEL_SOURCES), found - set(numba_cache.KERNEL_SOURCES)


def _copy_sources(tmp_path: Path) -> Path:
    for name in numba_cache.KERNEL_SOURCES:
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(Path(numba_cache.ENGINE_ROOT) / name, tmp_path / name)
    return tmp_path


@pytest.mark.parametrize("name", numba_cache.KERNEL_SOURCES)
def test_the_digest_changes_with_any_kernel_source(tmp_path, name):
    root = _copy_sources(tmp_path)
    assert numba_cache.sources_digest(root) == numba_cache.sources_digest()
    with open(root / name, "a", encoding="utf-8") as f:
        f.write("\n# an edit\n")
    assert numba_cache.sources_digest(root) != numba_cache.sources_digest()


def test_no_digest_without_the_sources(tmp_path):
    """A frozen app ships no sources: nothing is cached against them."""
    root = _copy_sources(tmp_path)
    (root / numba_cache.KERNEL_SOURCES[-1]).unlink()
    assert numba_cache.sources_digest(root) is None


def test_the_marker_follows_its_key(tmp_path):
    key = numba_cache.compiled_key()
    assert key["sources"] == numba_cache.sources_digest()
    assert not numba_cache.is_warm(tmp_path, key)
    path = numba_cache.write_marker(tmp_path, key)
    assert path.parent == tmp_path and numba_cache.is_warm(tmp_path, key)
    assert [p.name for p in tmp_path.iterdir()] == [path.name]  # no temporary file left beside it
    edited = dict(key, sources=numba_cache.sources_digest(_copy_sources(tmp_path / "edited")) + "0")
    for other in (edited, dict(key, plan={"weights": "float32"}), dict(key, numba="0.0.1"),
                  dict(key, features=key["features"] + ",+madeup")):
        assert numba_cache.marker_path(tmp_path, other) != path
        assert not numba_cache.is_warm(tmp_path, other)


def test_a_torn_or_foreign_marker_is_not_one(tmp_path):
    key = numba_cache.compiled_key()
    path = numba_cache.marker_path(tmp_path, key)
    path.write_text(json.dumps(key)[:-7], encoding="utf-8")
    assert not numba_cache.is_warm(tmp_path, key)
    path.write_text(json.dumps(dict(key, plan={"weights": "int4"})), encoding="utf-8")
    assert not numba_cache.is_warm(tmp_path, key)


def _folder_in_fresh_process(env: dict) -> dict:
    """What a fresh interpreter's ``use_cache_folder`` returns and what Numba then caches into."""
    code = ("import json, os; from engine.core.cpu.numba_cache import use_cache_folder; f = use_cache_folder(); "
            "import numba; print(json.dumps([str(f) if f else None, os.environ.get('NUMBA_CACHE_DIR'), "
            "numba.config.CACHE_DIR]))")
    env = {k: v for k, v in dict(os.environ, **env).items() if v is not None}
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, check=True,
                         timeout=300)
    returned, variable, numba_dir = json.loads(out.stdout.splitlines()[-1])
    return {"returned": returned, "variable": variable, "numba": numba_dir}


def test_numba_caches_in_the_users_cache_folder_keyed_on_the_sources(tmp_path):
    got = _folder_in_fresh_process({"XDG_CACHE_HOME": str(tmp_path), "NUMBA_CACHE_DIR": None})
    expected = str(tmp_path / "Orator" / "numba" / numba_cache.sources_digest()[:16])
    assert got == {"returned": expected, "variable": expected, "numba": expected}


def test_a_users_numba_cache_dir_stands(tmp_path):
    mine = str(tmp_path / "mine")
    got = _folder_in_fresh_process({"XDG_CACHE_HOME": str(tmp_path / "xdg"), "NUMBA_CACHE_DIR": mine})
    assert got == {"returned": mine, "variable": mine, "numba": mine}
    assert not (tmp_path / "xdg").exists()


def test_an_unwritable_cache_folder_leaves_numba_its_own(tmp_path):
    blocked = tmp_path / "a file"
    blocked.write_text("not a folder")
    got = _folder_in_fresh_process({"XDG_CACHE_HOME": str(blocked), "NUMBA_CACHE_DIR": None})
    assert got == {"returned": None, "variable": None, "numba": ""}


def test_a_copy_of_the_same_sources_has_another_marker(tmp_path):
    """Numba keeps a function's entries under its source's folder and drops them when the file's time or size
    changes: another checkout of the same sources has the same digest but none of these entries, so its marker
    differs, and so does this copy's once a file is touched."""
    key = numba_cache.compiled_key()
    assert key["stamps"] == numba_cache.source_stamps()
    copy = _copy_sources(tmp_path / "copy")
    assert numba_cache.sources_digest(copy) == key["sources"]
    stamps = numba_cache.source_stamps(copy)
    assert [s[0] for s in stamps] != [s[0] for s in key["stamps"]]
    assert not numba_cache.is_warm(tmp_path, dict(key, stamps=stamps))
    touched = copy / numba_cache.KERNEL_SOURCES[0]
    os.utime(touched, ns=(0, 0))
    assert numba_cache.source_stamps(copy)[0] != stamps[0] and numba_cache.source_stamps(copy)[1:] == stamps[1:]
