"""First audio from a command's start with nothing compiled and once the kernels are cached, and the time of the
Welcome dialog's speed measurement: the figures of docs/benchmarks.md#cpu-cold-start.

    python -m bench.cold_start --model DIR --cores 2 --machine "2-core VM, AMD EPYC Zen 3" --out FILE.jsonl

Every figure comes from a new process pinned to the first ``--cores`` cores with a cache folder of its own
(``XDG_CACHE_HOME``), so nothing a run compiled is seen by the next unless the variant says so: ``cold`` starts with
that folder empty, as a first run on a machine does; ``cached`` after the warm-up process that the cold run started
has written its marker. A speaking process does what ``orator say`` does (``engine.cli.loading.load_engine``, then
``Engine.stream`` of two sentences) and its time counts from its parent starting it to the first chunk on the host;
a Welcome process does what the first-run dialog does (``engine.core.cpu.speed_probe.measure_cpu_speed`` for the
0.6B, then the 1.7B at the thread count the first found faster), timed likewise from its start.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

TEXT = "The first words of a long book. A second sentence follows the first."
START_ENV = "ORATOR_BENCH_STARTED"  # the parent's time.time() when it started the process
WARM_WAIT_S = 900.0  # the longest a warm-up process may take to write its marker before the cached runs give up


def speak(model: str) -> dict:
    """In the measured process: load as ``orator say`` does and stream ``TEXT`` until its first chunk."""
    started = float(os.environ[START_ENV])
    from engine.cli.loading import load_engine
    from engine.voices import Voice

    engine = load_engine(model, "cpu")
    loaded = time.time()
    stream = engine.stream(TEXT, Voice.preset(engine.speakers[0]))
    first = next(stream)
    at_first = time.time()
    stream.close()
    return {"load_s": loaded - started, "first_audio_s": at_first - started,
            "first_chunk_frames": first.n_frames, "plan": engine.execution_plan.summary()}


def welcome() -> dict:
    """In the measured process: the first-run dialog's measurement of both sizes."""
    started = float(os.environ[START_ENV])
    from engine.core.cpu.speed_probe import measure_cpu_speed

    small = measure_cpu_speed("0.6b")
    large = measure_cpu_speed("1.7b", threads=small.threads)
    return {"welcome_s": time.time() - started, "welcome_plan": small.plan,
            "welcome_xrt": {"0.6b": round(small.realtime_factor, 3), "1.7b": round(large.realtime_factor, 3)}}


def measured(what: str, model: str, cores: int, cache: Path) -> dict:
    """Run ``what`` ("speak" or "welcome") in a new process on ``cores`` cores with ``cache`` as its cache folder."""
    env = dict(os.environ, XDG_CACHE_HOME=str(cache), CUDA_VISIBLE_DEVICES="", PYTHONUNBUFFERED="1")
    env.pop("NUMBA_CACHE_DIR", None)
    env.pop("ORATOR_NUMBA_CACHE", None)
    cmd = ["taskset", "-c", f"0-{cores - 1}", sys.executable, "-m", "bench.cold_start", "--child", what,
           "--model", model]
    env[START_ENV] = repr(time.time())
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False)
    if done.returncode:
        raise RuntimeError(f"{what} failed ({done.returncode}): {done.stderr[-2000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def wait_for_marker(cache: Path) -> float:
    """Seconds until the warm-up process started in ``cache`` has written its marker (its log says it finished)."""
    started = time.time()
    while time.time() - started < WARM_WAIT_S:
        if list(cache.rglob("ready-*.json")):
            return time.time() - started
        time.sleep(1.0)
    raise RuntimeError(f"no warm-up marker in {cache} after {WARM_WAIT_S:.0f} s")


def run(model: str, cores: int, runs: int, machine: str, out: Path) -> None:
    from bench.common import environment

    env = environment("cpu")
    base = {"system": "Orator", "model": model, "cores": cores, "machine": machine, "date": env["date"],
            "commit": env["commit"], "torch": env["torch"],
            "command": f"python -m bench.cold_start --model {model} --cores {cores}"}
    records = []
    for _ in range(runs):
        with tempfile.TemporaryDirectory(prefix="orator-cold-") as folder:
            cache = Path(folder)
            records.append({**base, "variant": "cold", **measured("welcome", model, cores, cache)})
            records[-1].update(measured("speak", model, cores, cache))
            records[-1]["warmup_s"] = records[-1]["first_audio_s"] + wait_for_marker(cache)
            cached = {**base, "variant": "cached", **measured("speak", model, cores, cache)}
            cached.update(measured("welcome", model, cores, cache))
            records.append(cached)
        for record in records[-2:]:
            print(json.dumps(record), flush=True)
    with out.open("a", encoding="utf-8") as f:
        for record in records:
            f.write(json.dumps(record) + "\n")


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", required=True, help="a 0.6B CustomVoice checkpoint (python -m engine.synthetic)")
    ap.add_argument("--cores", type=int, default=2)
    ap.add_argument("--runs", type=int, default=1, help="cold and cached pairs, each in a new cache folder")
    ap.add_argument("--machine", default="", help="the machine's name in the record")
    ap.add_argument("--out", type=Path, default=Path("cold-start.jsonl"))
    ap.add_argument("--child", choices=("speak", "welcome"), help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        print(json.dumps(speak(args.model) if args.child == "speak" else welcome()), flush=True)
        return
    run(args.model, args.cores, args.runs, args.machine or datetime.date.today().isoformat(), args.out)


if __name__ == "__main__":
    main()
