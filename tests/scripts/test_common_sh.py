"""scripts/common.sh's torch install: the CPU wheel index on Linux without an NVIDIA GPU, when it answers."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def run_ensure_torch(tmp_path: Path, *, nvidia: bool, index_answers: bool) -> str:
    """``ensure_torch`` with stand-ins for python (no torch yet; pip records its arguments), curl and nvidia-smi
    first on PATH; returns the recorded pip arguments."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    record = tmp_path / "pip-args"
    (bin_dir / "python").write_text(
        "#!/bin/sh\n"
        'if [ "$1" = -c ]; then exit 1; fi\n'  # import torch fails: none installed yet
        f'echo "$@" > {record}\n')
    (bin_dir / "curl").write_text(f"#!/bin/sh\nexit {0 if index_answers else 7}\n")
    if nvidia:
        (bin_dir / "nvidia-smi").write_text("#!/bin/sh\nexit 0\n")
    for tool in bin_dir.iterdir():
        tool.chmod(0o755)
    env = {**os.environ, "PATH": f"{bin_dir}:/usr/bin:/bin"}
    subprocess.run(["bash", "-c", f". {ROOT}/scripts/common.sh && ensure_torch"], env=env, check=True,
                   capture_output=True, text=True, timeout=60)
    return record.read_text().strip()


@pytest.mark.skipif(os.uname().sysname != "Linux", reason="the choice is made for Linux")
@pytest.mark.parametrize(("nvidia", "answers", "cpu_index"), [
    (False, True, True),  # no GPU, index reachable: the CPU build
    (False, False, False),  # offline index: plain PyPI (or the local wheels pip is set up with)
    (True, True, False),  # an NVIDIA GPU: PyPI's CUDA build
])
def test_the_cpu_build_is_asked_for_only_without_an_nvidia_gpu(tmp_path, nvidia, answers, cpu_index):
    args = run_ensure_torch(tmp_path, nvidia=nvidia, index_answers=answers)
    assert args.startswith("-m pip install torch==")
    assert ("--extra-index-url https://download.pytorch.org/whl/cpu" in args) == cpu_index
