"""The PyInstaller one-folder app (dist/Orator, built by ``bash packaging/build.sh``) starts headless
and speaks through its own bundled Python, Qt and torch.

Skipped unless ``ORATOR_BUILD_BUNDLE=1`` (scripts/test.sh sets it on CI right after building); with it
set, a missing bundle is a failure.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BUNDLE = ROOT / "dist" / "Orator"
EXECUTABLE = BUNDLE / "orator"
# packages the spec leaves out: tests and their tag reader, the official oracle, browser automation, the OpenAI
# client, Tk
LEFT_OUT = ("tests", "mutagen", "qwen_tts", "playwright", "openai", "tkinter", "pytest", "librosa", "onnxruntime")

pytestmark = pytest.mark.skipif(os.environ.get("ORATOR_BUILD_BUNDLE") != "1",
                                reason="set ORATOR_BUILD_BUNDLE=1 after bash packaging/build.sh")


@pytest.fixture(scope="module")
def bundle() -> Path:
    if not EXECUTABLE.is_file():
        pytest.fail(f"{EXECUTABLE} is missing: run bash packaging/build.sh first")
    return BUNDLE


def run_bundled(*args: str, timeout: float, **extra_env: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "QT_QPA_PLATFORM": "offscreen", **extra_env}
    return subprocess.run([str(EXECUTABLE), *args], capture_output=True, text=True, timeout=timeout, env=env,
                          cwd="/")


def test_bundle_holds_the_icon_and_desktop_entry(bundle):
    internal = bundle / "_internal"
    assert (internal / "resources" / "orator.svg").is_file()
    assert (bundle / "orator.png").is_file()
    entry = (bundle / "orator.desktop").read_text()
    assert "Exec=orator %f" in entry and "Icon=orator" in entry and "Type=Application" in entry


def test_bundle_leaves_out_what_the_app_does_not_need(bundle):
    internal = bundle / "_internal"
    present = [name for name in LEFT_OUT if (internal / name).exists()]
    assert present == []
    assert not list(internal.rglob("_tkinter*.so"))
    assert not list(internal.rglob("libQt6WebEngineCore*"))


def test_bundled_app_lists_its_commands(bundle):
    result = run_bundled("--help", timeout=120)
    assert result.returncode == 0, result.stderr
    for command in ("gui", "serve", "say", "export"):
        assert command in result.stdout


def test_bundled_app_passes_its_self_test(bundle):
    result = run_bundled("--self-test", timeout=600)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "self-test passed" in result.stdout


def tiny_model(folder: Path) -> Path:
    import sys

    model = folder / "tiny"
    subprocess.run([sys.executable, "-m", "engine.synthetic", str(model), "--size", "tiny", "--type", "custom_voice"],
                   check=True, cwd=ROOT, capture_output=True, timeout=300)
    return model


def test_bundled_app_exports_an_audiobook_through_its_own_ffmpeg(bundle, tmp_path):
    """PyAV and the FFmpeg libraries in its wheel are bundled: an M4B with chapters comes out."""
    import mutagen

    model = tiny_model(tmp_path)
    (tmp_path / "book.txt").write_text("Chapter 1\n\nHello there.\n\nChapter 2\n\nGoodbye now.\n", encoding="utf-8")
    result = run_bundled("export", str(tmp_path / "book.txt"), "--model", str(model), "--voice", "vivian",
                         "--max-frames", "2", "--no-cache", "--library", str(tmp_path / "voices"), timeout=600)
    assert result.returncode == 0, result.stdout + result.stderr
    assert [c.title for c in mutagen.File(tmp_path / "book.m4b").chapters] == ["Chapter 1", "Chapter 2"]


def test_bundled_app_caches_its_compiled_kernels(bundle, tmp_path):
    """The CPU kernels ship as source files, so Numba caches them: the first ``say`` speaks on the cold-start bridge
    while the app, started again as its warm-up process, compiles them into the cache folder and writes the marker;
    a later ``say`` finds it and speaks on the compiled kernels with no bridge."""
    import time

    assert list((bundle / "_internal" / "engine" / "core" / "cpu").glob("numba_layer.py"))
    model, cache = tiny_model(tmp_path), tmp_path / "numba"
    say = ("say", "Hello there.", "--model", str(model), "--voice", "vivian", "--max-frames", "4")
    # the users' default, which the test session turns off for its own engines (tests/conftest.py)
    bridge_on = {"NUMBA_CACHE_DIR": str(cache), "ORATOR_CPU_WARMUP": "1"}
    first = run_bundled(*say, "--out", str(tmp_path / "first.wav"), timeout=600, **bridge_on)
    assert first.returncode == 0, first.stdout + first.stderr
    assert "bridge:" in first.stdout + first.stderr
    for _ in range(180):  # a guard against a warm-up that never ends, not a measurement: it polls the folder
        if list(cache.glob("ready-*.json")):
            break
        time.sleep(10)
    assert list(cache.glob("ready-*.json")), (cache / "warmup.log").read_text(errors="replace")
    second = run_bundled(*say, "--out", str(tmp_path / "second.wav"), timeout=600, **bridge_on)
    assert second.returncode == 0, second.stdout + second.stderr
    plan = next(line for line in (second.stdout + second.stderr).splitlines() if "plan:" in line)
    assert "numba-int8" in plan and "bridge:" not in plan, plan
