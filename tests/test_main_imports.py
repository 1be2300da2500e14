"""The command line imports what a command needs, when it needs it.

``--help`` of every command parses without torch or the web stack; ``say`` speaks where the server extra is not
installed; ``serve`` without it says in one line which extra to install. Each runs ``main.py`` in a fresh
interpreter, where a module either is imported or is not: the assertion is on ``sys.modules``, never on time.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import soundfile as sf

ROOT = Path(__file__).resolve().parents[1]
HEAVY = ("torch", "numpy", "fastapi", "starlette", "uvicorn", "PySide6", "numba", "transformers")

# Runs main.main(argv) in this interpreter with the named modules unimportable (as where an extra is not installed),
# then prints which heavy modules it imported, as JSON, on the last line.
PROBE = """
import json, sys
blocked, argv, heavy = json.loads(sys.argv[1])
for name in blocked:
    sys.modules[name] = None  # import raises ImportError, as for a package that is not installed
import main
try:
    code = main.main(argv)
except SystemExit as e:
    code = e.code
print(json.dumps({"code": code, "imported": [m for m in heavy if sys.modules.get(m) is not None]}))
"""


def run_main(argv: list[str], blocked: tuple[str, ...] = ()) -> tuple[dict, subprocess.CompletedProcess]:
    done = subprocess.run([sys.executable, "-c", PROBE, json.dumps([list(blocked), argv, HEAVY])], cwd=ROOT,
                          capture_output=True, text=True, timeout=300)
    assert done.stdout.strip(), done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1]), done


@pytest.mark.parametrize("argv", [["--help"], ["gui", "--help"], ["say", "--help"], ["export", "--help"],
                                  ["serve", "--help"], ["voiceover", "--help"], ["info", "--help"]])
def test_help_imports_neither_torch_nor_the_web_stack(argv):
    result, done = run_main(argv)
    assert result["code"] == 0, done.stderr
    assert "usage:" in done.stdout
    assert result["imported"] == []


def test_serve_without_the_server_extra_says_which_extra_in_one_line(tmp_path):
    result, done = run_main(["serve", "--model", str(tmp_path)], blocked=("fastapi", "uvicorn"))
    assert result["code"] == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert "server extra" in lines[0] and ".[server]" in lines[0]
    assert "Traceback" not in done.stderr
    assert "torch" not in result["imported"]  # refused before a model is loaded


def test_say_speaks_without_the_server_extra(tiny_model_dir, tmp_path):
    out = tmp_path / "hello.wav"
    blocked = ("fastapi", "starlette", "uvicorn", "httpx", "multipart", "websockets")
    result, done = run_main(["say", "Hello there.", "--model", str(tiny_model_dir()), "--voice", "vivian",
                             "--max-frames", "8", "--seed", "1", "--out", str(out)], blocked=blocked)
    assert result["code"] == 0, done.stderr
    assert not {"fastapi", "starlette", "uvicorn"} & set(result["imported"])
    audio, rate = sf.read(out)
    assert rate == 24000 and len(audio) > 0


def test_info_without_a_model_prints_the_plan_without_the_web_stack():
    result, done = run_main(["info", "--device", "cpu", "--precision", "fast"])
    assert result["code"] == 0, done.stderr
    shown = json.loads(done.stdout[:done.stdout.rindex("\n{")])
    assert shown["plan"]["precision"] == "fast" and shown["plan"]["weights"] == "int8"
    assert not {"fastapi", "starlette", "uvicorn", "PySide6"} & set(result["imported"])
