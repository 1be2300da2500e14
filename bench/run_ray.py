"""Many streams through Ray Serve's proxy (``serve --ray-replicas R``) against the single-process server (``serve
--batch K``): aggregate audio-seconds per second and p50/p95 time to first audio at several concurrency levels,
each request forced to the same number of frames.

    python -m bench.run_ray --model DIR --device cuda --batch 64 --replicas 1 2 4 --streams 64 128 256 \\
        --frames 150 [--single] [--client-processes 4] [--ray-address ADDR] --out results.jsonl

Each server is the ``python main.py serve`` command itself, started and stopped here (its own Ray instance per
replica count, or the cluster at ``--ray-address``), so a row measures what a deployment gets; the clients run in
processes of their own (``bench.clients``). Before the measured runs each server takes one burst as wide as all
its slots (replicas x batch) of short requests. ``--single`` adds the single-process server's rows (one engine,
``--batch``) as the baseline. Rows: ``path`` ("single" or "ray"), ``replicas``, ``batch``, then
``bench.run_batch``'s fields.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

from bench.run_batch import WARM_FRAMES, client_processes, summarize

ROOT = Path(__file__).resolve().parents[1]
START_TIMEOUT_S = 1800  # a 1.7B model's graphs on several GPUs take minutes to capture the first time


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def serve_command(model: str, device: str, batch: int, port: int, replicas: int | None = None,
                  ray_address: str | None = None) -> list[str]:
    command = [sys.executable, "main.py", "serve", "--model", model, "--device", device, "--batch", str(batch),
               "--port", str(port), "--max-queue", "4096", "--limit-concurrency", "4096", "--max-connections",
               "8192"]
    if replicas is not None:
        command += ["--ray-replicas", str(replicas)]
    if ray_address is not None:
        command += ["--ray-address", ray_address]
    return command


def ready(url: str, replicas: int | None) -> bool:
    """Whether the server answers with its model loaded (on Ray: every replica's)."""
    import httpx

    try:
        health = httpx.get(f"{url}/health", timeout=5).json()
    except (httpx.TransportError, ValueError):
        return False
    if replicas is None:
        return bool(health.get("model_loaded"))
    states = health.get("replicas", [])
    return len(states) == replicas and all(state["status"] == "ok" for state in states)


@contextlib.contextmanager
def running(command: list[str], url: str, replicas: int | None) -> Iterator[float]:
    """The server ``command`` started, yielding the seconds it took to be ready; stopped with SIGINT at the end."""
    started = time.perf_counter()
    log = tempfile.TemporaryFile("w+")  # not a pipe: a server logging more than a pipe holds would block on it
    child = subprocess.Popen(command, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT, text=True)
    try:
        while not ready(url, replicas):
            if child.poll() is not None:
                log.seek(0)
                raise RuntimeError(f"the server exited with {child.returncode}: {log.read()[-2000:]}")
            if time.perf_counter() - started > START_TIMEOUT_S:
                raise RuntimeError(f"the server was not ready after {START_TIMEOUT_S} s")
            time.sleep(0.5)
        yield time.perf_counter() - started
    finally:
        if child.poll() is None:
            child.send_signal(signal.SIGINT)
            try:
                child.wait(timeout=120)
            except subprocess.TimeoutExpired:
                child.kill()
                child.wait()
        log.close()


def measure(path: str, command: list[str], url: str, replicas: int | None, args) -> list[dict]:
    rows = []
    with running(command, url, replicas) as start_s, client_processes(url, args.client_processes) as clients:
        clients.run((replicas or 1) * args.batch, WARM_FRAMES)
        for n in args.streams:
            ttfa, wall = clients.run(n, args.frames)
            where = "separate process" if args.client_processes == 1 else f"{args.client_processes} processes"
            row = dataclasses.asdict(summarize("http", n, args.frames, ttfa, wall, args.device, clients=where))
            rows.append({**row, "path": path, "replicas": replicas or 1, "batch": args.batch,
                         "start_s": round(start_s, 1)})
            print(json.dumps(rows[-1], sort_keys=True), flush=True)
    return rows


def main(argv=None) -> list[dict]:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", required=True)
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--batch", type=int, default=64, help="streams per replica (and of the single server)")
    ap.add_argument("--replicas", type=int, nargs="+", default=[1, 2, 4])
    ap.add_argument("--streams", type=int, nargs="+", default=[64, 128, 256])
    ap.add_argument("--frames", type=int, default=150)
    ap.add_argument("--single", action="store_true", help="also the single-process server, the baseline")
    ap.add_argument("--client-processes", type=int, default=4)
    ap.add_argument("--ray-address", default=None, help="deploy on this Ray cluster instead of a local instance")
    ap.add_argument("--out", help="append JSON lines here")
    args = ap.parse_args(argv)
    rows = []
    if args.single:
        port = _free_port()
        rows += measure("single", serve_command(args.model, args.device, args.batch, port),
                        f"http://127.0.0.1:{port}", None, args)
    for replicas in args.replicas:
        port = _free_port()
        rows += measure("ray", serve_command(args.model, args.device, args.batch, port, replicas, args.ray_address),
                        f"http://127.0.0.1:{port}", replicas, args)
    if args.out:
        with open(args.out, "a", encoding="utf-8") as f:
            f.writelines(json.dumps(row, sort_keys=True) + "\n" for row in rows)
    return rows


if __name__ == "__main__":
    main()
