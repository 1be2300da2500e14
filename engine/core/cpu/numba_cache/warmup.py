"""``python -m engine.core.cpu.numba_cache.warmup FOLDER``: compile every Numba kernel of the engine's int8 CPU
plan into Numba's cache, in a process of its own, then write the plan's marker in FOLDER
(``engine.core.cpu.numba_cache``).

``engine.core.cpu.numba_cache.cold_start`` starts it (``start``) where the marker is missing and speaks on the PyTorch
steps meanwhile: a compiling thread would hold the interpreter lock the speaking loop and the audio callback need. It
runs at a lower priority than the program it serves, one at a time per folder: it holds ``LOCK_NAME`` while it works
(the system lets go of it when the process ends, however it ends), and one that finds the lock taken exits at once.

It compiles by running what the engine runs: tiny synthetic int8 models (``engine.synthetic``) loaded as a real one
is, their steps warmed up, a prompt spoken greedily and sampled. Numba keys compiled code on its arguments' types
(element type, dimensions, memory layout), never their sizes, so the entries serve models of every size with the
same layouts: one whose code predictor is as wide as the talker (the 0.6B's) and one with a projection between them
(the 1.7B's), whose predictor frames read their input rows as other types. Numba writes each cache file to a
temporary name and renames it, and the marker is written last, the same way: a warm-up ended at any point leaves
whole entries (kept for the next one) and no marker.
"""

from __future__ import annotations

import argparse
import logging
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from filelock import FileLock, Timeout

from engine.core.cpu import numba_cache

log = logging.getLogger(__name__)

NICE = 19  # the lowest priority (POSIX): the warm-up takes only the cores the program leaves idle
MAX_LOG_BYTES = 1 << 20  # the log is emptied by the next warm-up beyond this
SIZES = ("tiny-equal", "tiny")  # the predictor as wide as the talker (0.6B), and projected (1.7B)
TEXT = ("The warm-up reads this sentence once, so that every loop of the prompt and of the frames is compiled "
        "before a listener waits for it.")


WARMUP_FLAG = "--numba-warmup"  # main.py starts the warm-up on it in a frozen app

def command(folder: Path) -> list[str]:
    """The warm-up's command line: ``python -m`` this module, or in a frozen app (no ``-m`` there) the app itself with
    ``WARMUP_FLAG``, which main.py answers before it imports anything heavy."""
    if getattr(sys, "frozen", False):
        return [sys.executable, WARMUP_FLAG, str(folder)]
    return [sys.executable, "-m", "engine.core.cpu.numba_cache.warmup", str(folder)]


def start(folder: Path) -> subprocess.Popen:
    """Start a warm-up process for ``folder`` (its output appended to the folder's ``LOG_NAME``), detached from this
    one: it goes on after this program exits, and a console's Ctrl-C does not reach it."""
    root = Path(numba_cache.ENGINE_ROOT).parent  # where ``engine`` imports from
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in (str(root), os.environ.get("PYTHONPATH")) if p))
    args = command(folder)
    if os.name == "nt":
        flags = dict(creationflags=subprocess.CREATE_NEW_PROCESS_GROUP | subprocess.IDLE_PRIORITY_CLASS
                     | subprocess.CREATE_NO_WINDOW)
    else:
        flags = dict(start_new_session=True)
    with open(Path(folder) / numba_cache.LOG_NAME, "ab") as out:
        return subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT, cwd=root,
                                env=env, **flags)


def compile_plan() -> None:
    """Run every kernel of the int8 plan once, through the engine."""
    import torch

    from engine import Engine, Voice
    from engine.core import options
    from engine.core.sampling import Sampling
    from engine.synthetic.checkpoint import build_checkpoint

    # the kernels compile here, whatever the environment asks of the engine; one thread leaves the cores to the program
    options.configure(cpu_int8=True, cpu_numba=True, cpu_warmup=False, threads=1)
    with tempfile.TemporaryDirectory(prefix="orator-warmup-") as tmp:
        for size in SIZES:
            model = build_checkpoint(Path(tmp) / size, size, "custom_voice", seed=0)
            engine = Engine.from_pretrained(str(model), device="cpu", dtype=torch.float32)
            engine.warmup()
            if not engine.cpu_numba_steps:
                raise RuntimeError("the Numba steps did not compile (the log above says why)")
            voice = Voice.preset(engine.speakers[0])
            for greedy in (True, False):
                engine.synthesize(TEXT, voice, Sampling(greedy=greedy, sub_greedy=greedy, seed=0), max_frames=3)
            log.info("compiled the CPU steps of a %s model", size)


def _lower_priority() -> None:
    """The cores go to the program first. On Linux the warm-up runs as an idle task (``SCHED_IDLE``, inherited by
    the threads it starts): a nice value alone lets a woken thread of the program wait for the compiler's time slice
    to end, and PyTorch's thread team waits for its slowest thread at every operation
    (docs/benchmarks.md#cpu-cold-start). Also ``NICE`` for the process and for its scheduling group: the warm-up
    leads a session of its own (``start``), and where the kernel groups each session's processes (autogroup) a nice
    value ranks a process only within its group while the groups share the CPU evenly."""
    if hasattr(os, "sched_setscheduler") and hasattr(os, "SCHED_IDLE"):
        try:
            os.sched_setscheduler(0, os.SCHED_IDLE, os.sched_param(0))
        except OSError:
            pass
    if hasattr(os, "nice"):
        try:
            os.nice(NICE)
        except OSError:
            pass
    try:
        with open("/proc/self/autogroup", "w") as group:
            group.write(str(NICE))
    except OSError:  # no autogroup here (not Linux, or a kernel without it): the process's nice value is enough
        pass


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m engine.core.cpu.numba_cache.warmup",
                                     description=__doc__.split("\n")[0])
    parser.add_argument("folder", type=Path, help="where the marker and the lock are (Numba's cache folder)")
    args = parser.parse_args(argv)
    args.folder.mkdir(parents=True, exist_ok=True)
    lock = FileLock(args.folder / numba_cache.LOCK_NAME)
    try:
        lock.acquire(timeout=0)
    except Timeout:
        return 0  # another warm-up compiles into this folder: the program watches for its marker
    try:
        logfile = args.folder / numba_cache.LOG_NAME
        if logfile.is_file() and logfile.stat().st_size > MAX_LOG_BYTES:
            logfile.write_bytes(b"")
        _lower_priority()
        logging.basicConfig(level=logging.INFO, format="%(asctime)s warm-up %(process)d %(levelname)s %(message)s")
        key = numba_cache.compiled_key()
        if numba_cache.is_warm(args.folder, key):
            return 0
        log.info("compiling the Numba CPU steps into %s", os.environ.get(numba_cache.ENV, "Numba's own cache folder"))
        compile_plan()
        log.info("done: %s", numba_cache.write_marker(args.folder, key))
        return 0
    finally:
        lock.release()


if __name__ == "__main__":
    sys.exit(main())
