"""The whole side-by-side benchmark in one command: build full-size synthetic checkpoints, then run
each system on each of them in its own process (so peak memory is its own), and print one table.

    python -m bench.run_all --sizes 0.6b 1.7b --systems orator faster official --frames 250 --runs 3 --out DIR

Writes DIR/results.jsonl (raw per-run values included) and DIR/table.md. On the CPU (``--device cpu``), ``--cores
4 8`` runs every system pinned to the first N cores with ``taskset`` (the GPU hidden), each with N threads (Orator
with its own choice, ``engine.core.runtime.cpu_threads``); ``orator-float32`` is Orator's exact float32 CPU path.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

from bench.common import DEFAULT_FRAMES, DEFAULT_RUNS, FIRST_CHUNK_SIZES, environment, format_table, read_jsonl

RUNNERS = {"orator": "bench.run_orator", "orator-float32": "bench.run_orator",
           "orator-pytorch-steps": "bench.run_orator",
           "faster": "bench.run_faster", "official": "bench.run_official"}
# orator-pytorch-steps: int8 frames without Numba (the VNNI products against the 16-bit ones: bench.tuning.cpu_vnni)
DEFAULT_SYSTEMS = ["orator", "orator-float32", "faster", "official"]
# what each Orator system asks of the engine's plan (bench.run_orator: --precision, --option), recorded with its result
RUNNER_ARGS = {"orator-float32": ["--precision", "exact"], "orator-pytorch-steps": ["--option", "cpu_numba=0"]}


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", nargs="+", default=["0.6b", "1.7b"], choices=["tiny", "0.6b", "1.7b"])
    ap.add_argument("--systems", nargs="+", default=DEFAULT_SYSTEMS, choices=list(RUNNERS))
    ap.add_argument("--frames", type=int, default=DEFAULT_FRAMES)
    ap.add_argument("--runs", type=int, default=DEFAULT_RUNS)
    ap.add_argument("--chunks", type=int, nargs="+", default=list(FIRST_CHUNK_SIZES))
    ap.add_argument("--models", default="/tmp/orator-bench-models", help="where checkpoints are built")
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--cores", type=int, nargs="+", help="CPU only: pin each run to the first N cores")
    ap.add_argument("--out", required=True, help="output directory")
    args = ap.parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    results_path = out / "results.jsonl"
    env = environment(args.device)
    print(json.dumps(env), flush=True)
    for size in args.sizes:
        model = Path(args.models) / f"{size}-custom_voice"
        if not (model / "model.safetensors").exists():
            subprocess.run([sys.executable, "-m", "engine.synthetic", str(model), "--size", size,
                            "--type", "custom_voice"], check=True)
        for cores in args.cores or [None]:
            for system in args.systems:
                cmd = [sys.executable, "-m", RUNNERS[system], "--model", str(model), "--frames", str(args.frames),
                       "--runs", str(args.runs), "--device", args.device, "--out", str(results_path),
                       "--chunks", *map(str, args.chunks), *RUNNER_ARGS.get(system, [])]
                env = dict(os.environ)
                if cores is not None:
                    cmd = ["taskset", "-c", f"0-{cores - 1}", *cmd]
                    env.update(CUDA_VISIBLE_DEVICES="", OMP_NUM_THREADS=str(cores))
                print("$", " ".join(cmd), flush=True)
                done = subprocess.run(cmd, env=env)
                if done.returncode:
                    print(f"{system} on {size} failed with exit code {done.returncode}", flush=True)
    table = format_table(read_jsonl(results_path), args.chunks) if results_path.exists() else "(no results)"
    (out / "table.md").write_text(json.dumps(env) + "\n\n" + table + "\n", encoding="utf-8")
    print(table, flush=True)


if __name__ == "__main__":
    main()
