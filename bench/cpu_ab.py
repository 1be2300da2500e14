"""Orator before and after a change, and the official code, side by side on the CPU in one run: the figures of
docs/benchmarks.md#cpu-one-engine (and of #cpu-2-cores where the machine has no AVX-512).

    python -m bench.cpu_ab --before 3f43688 --cores 2 --runs 3 --machine "2-core VM, AMD EPYC Zen 3 (AVX2)" \
        --out docs/benchmarks/cpu-one-engine-zen3.jsonl

The ``--before`` commit is checked out into a temporary worktree and run by its own ``bench.run_orator`` (its
``engine`` first on the path), this checkout's by this one's, the official code by ``bench.run_official``: each run a
new process pinned to the first ``--cores`` cores (the GPU hidden), in turns (before, after, official, then again)
so that a drift of the machine's speed touches all three alike. Each Orator tree first speaks once unrecorded so
that its Numba kernels are compiled and cached before any timed run; records of a process that compiled anyway
would carry ``"counted": false``. Each record gets ``variant`` ("before"/"after"), ``machine``, ``cores`` and the
``command`` that made it.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MODEL = "/tmp/orator-bench-models/0.6b-custom_voice"


def commit_of(tree: Path) -> str:
    """The tree's commit: its ``COMMIT`` file's (a tree exported without history), else git's, else for this checkout
    ``ORATOR_COMMIT`` (a copy without history, as on a lent machine)."""
    named = tree / "COMMIT"
    if named.is_file():
        return named.read_text(encoding="utf-8").strip()
    try:
        return subprocess.run(["git", "-C", str(tree), "rev-parse", "--short", "HEAD"], capture_output=True,
                              text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return os.environ.get("ORATOR_COMMIT", "unknown") if tree == ROOT else "unknown"


def warm(tree: Path, cores: int) -> None:
    """Fill ``tree``'s Numba cache through its warm-up process where it has one (waiting for one already compiling
    into the same folder); a tree without it compiles in the unrecorded first run instead."""
    if not (tree / "engine/core/cpu/numba_cache/warmup.py").is_file():  # not by import: the editable install's
        return  # finder would serve this checkout's module to another tree
    env = dict(os.environ, PYTHONPATH=str(tree), CUDA_VISIBLE_DEVICES="")
    where = subprocess.run([sys.executable, "-c", "from engine.core.cpu.numba_cache import use_cache_folder; "
                            "print(use_cache_folder())"], cwd=tree, env=env, capture_output=True, text=True)
    if where.returncode:
        return
    folder = where.stdout.strip().splitlines()[-1]
    wait = f"from filelock import FileLock; FileLock({folder + '/warmup.lock'!r}).acquire(timeout=1800)"
    subprocess.run([sys.executable, "-c", wait], env=env, check=True)
    subprocess.run(["taskset", "-c", f"0-{cores - 1}", sys.executable, "-m", "engine.core.cpu.numba_cache.warmup",
                    folder], cwd=tree, env=env, check=True)


def one_run(module: str, tree: Path, args: argparse.Namespace, out: Path, runs: int) -> list[dict]:
    """``module`` of ``tree`` for ``runs`` timed runs on the pinned cores; its records."""
    cmd = ["taskset", "-c", f"0-{args.cores - 1}", sys.executable, "-m", module, "--model", args.model,
           "--frames", str(args.frames), "--runs", str(runs), "--device", "cpu", "--chunks", "1", "--out", str(out)]
    env = dict(os.environ, CUDA_VISIBLE_DEVICES="", OMP_NUM_THREADS=str(args.cores), PYTHONPATH=str(tree),
               ORATOR_COMMIT=commit_of(tree))
    out.unlink(missing_ok=True)
    print("$", " ".join(cmd), f"(in {tree})", flush=True)
    done = subprocess.run(cmd, cwd=tree, env=env, check=False)
    if done.returncode:
        raise RuntimeError(f"{module} in {tree} failed with exit code {done.returncode}")
    stamp = {"date": datetime.date.today().isoformat(), "commit": env["ORATOR_COMMIT"]}
    return [{**json.loads(line), **stamp} for line in out.read_text(encoding="utf-8").splitlines() if line.strip()]


def turns(trees: dict[str, Path], args: argparse.Namespace, scratch: Path) -> list[dict]:
    """Warm each tree's kernels, then ``args.runs`` turns of every system; the records."""
    for tree in trees.values():  # compile and cache each tree's kernels before anything is timed
        warm(tree, args.cores)
        one_run("bench.run_orator", tree, args, scratch, 1)
    records = []
    for _ in range(args.runs):
        for variant, tree in trees.items():
            records += [{**record, "variant": variant}
                        for record in one_run("bench.run_orator", tree, args, scratch, args.repeats)]
        if not args.no_official:
            records += one_run("bench.run_official", ROOT, args, scratch, args.repeats)
    return records


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    before = ap.add_mutually_exclusive_group(required=True)
    before.add_argument("--before", help="the commit to compare this checkout with")
    before.add_argument("--before-tree", type=Path, help="or that commit's files, where there is no git history")
    ap.add_argument("--model", default=MODEL, help="a full-size checkpoint (python -m engine.synthetic)")
    ap.add_argument("--cores", type=int, default=2)
    ap.add_argument("--runs", type=int, default=3, help="turns; each system runs once a turn")
    ap.add_argument("--repeats", type=int, default=1, help="timed runs of each system's process in a turn")
    ap.add_argument("--frames", type=int, default=40)
    ap.add_argument("--machine", required=True, help="the machine's name in the records")
    ap.add_argument("--no-official", action="store_true")
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args(argv)
    command = "python -m bench.cpu_ab " + " ".join(a if " " not in a else repr(a) for a in (argv or sys.argv[1:]))
    with tempfile.TemporaryDirectory(prefix="orator-before-") as folder:
        before = args.before_tree.resolve() if args.before_tree else Path(folder) / "tree"
        if not args.before_tree:
            subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", str(before), args.before],
                           check=True, capture_output=True)
        try:
            records = turns({"before": before, "after": ROOT}, args, Path(folder) / "out.jsonl")
        finally:
            if not args.before_tree:
                subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(before)], check=False)
    with args.out.open("a", encoding="utf-8") as f:
        for record in records:
            record.update(machine=args.machine, cores=args.cores, command=command)
            f.write(json.dumps(record) + "\n")
    print(f"wrote {len(records)} records to {args.out}", flush=True)


if __name__ == "__main__":
    main()
