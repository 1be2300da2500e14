"""The many-streams benchmarks' clients: ``concurrently`` runs N requests on threads, and ``ClientProcess``
runs N HTTP requests on threads of a process of its own, as a deployed server's clients are other
processes; ``ClientProcesses`` shares them among several such processes. (In the server's process, the
client threads reading their streams would compete with the server's event loop, its scheduler threads and the
engine's loop thread for one GIL, and the HTTP figures would count that.)

This module imports the standard library only, and httpx when a client is built, so the client process
(``python -m bench.clients``, ~0.1 s to start) holds neither torch nor the engine. Its protocol, one JSON
object a line: once its ``httpx.Client`` is built it prints ``{"ready": true}``; then for each line on its
stdin, ``{"url", "n", "frames", "spacing_s", "text", "voice", "first"}``, it runs the n requests
(``http_requests`` through ``concurrently``, seeds from ``first`` on) and prints ``{"ttfa_ms": [...], "wall_s",
"start", "end", "sent": [...]}``: the wall time from the first request's start to the last one's end, measured in
the client process, those two moments and each request's start on ``time.perf_counter``'s clock (the system's
monotonic one, the same in every process). It exits 0 at the
end of its input; on any error it prints the traceback to stderr and exits 1, which ``ClientProcess`` raises as
a ``RuntimeError`` carrying that stderr.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import threading
import time
import traceback
from collections.abc import Callable
from pathlib import Path


def concurrently(n: int, request: Callable[[int], float], spacing_s: float = 0.0) -> tuple[list[float], float]:
    """Run ``request(i)`` (returning its time to first audio in ms) on n threads, all released together once every
    thread is up (thread creation, ~0.1 ms each and slower beside a busy process, would otherwise spread the
    arrivals over tens of milliseconds and count in the wall time), or ``spacing_s`` apart; returns the times
    and the wall seconds from the first start to the last end."""
    ttfa: list[float] = [0.0] * n
    errors: list[BaseException] = []
    together = threading.Barrier(n + 1) if not spacing_s else None

    def run(i: int) -> None:
        try:
            if together is not None:
                together.wait()
            ttfa[i] = request(i)
        except BaseException as e:  # noqa: BLE001 - reported below, after every thread ends
            errors.append(e)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(n)]
    if together is not None:
        for t in threads:
            t.start()
        t0 = time.perf_counter()
        together.wait()  # the last to arrive: every thread goes now
    else:
        t0 = time.perf_counter()
        for i, t in enumerate(threads):
            if i:
                time.sleep(spacing_s)
            t.start()
    for t in threads:
        t.join()
    if errors:
        raise errors[0]
    return ttfa, time.perf_counter() - t0


def http_client():
    """One client for every request thread: ``httpx.stream`` makes a client per call, and each builds an
    SSL context (about 25 ms of CPU, one thread at a time), which alone added ~25 ms per concurrent
    request to the measured time to first audio."""
    import httpx

    return httpx.Client(timeout=600, limits=httpx.Limits(max_connections=None, max_keepalive_connections=None))


def http_requests(client, url: str, frames: int, text: str, voice: str, first_seed: int = 0,
                  sent: list[float] | None = None) -> Callable[[int], float]:
    """Requests through ``client`` (``http_client()``) for ``text`` in the preset ``voice``, each forced to
    ``frames`` frames of raw pcm (request i with seed first_seed + i); each returns its time to first audio in
    ms, and puts the moment it started (``time.perf_counter``) in ``sent[i]`` when given."""

    def request(i: int) -> float:
        body = {"model": "orator", "voice": voice, "input": text, "response_format": "pcm",
                "seed": first_seed + i, "max_frames": frames, "min_frames": frames}
        t0 = time.perf_counter()
        if sent is not None:
            sent[i] = t0
        first, size = None, 0
        with client.stream("POST", f"{url}/v1/audio/speech", json=body) as r:
            r.raise_for_status()
            for part in r.iter_raw():
                first = first or (time.perf_counter() - t0) * 1000
                size += len(part)
        if size != 2 * frames * 1920:
            raise RuntimeError(f"request {i} got {size} bytes of pcm, not {2 * frames * 1920}")
        return first

    return request


class ClientProcess:
    """A client process (``python -m bench.clients``) with one ``httpx.Client`` shared by its request
    threads, started and ready on construction; ``run`` has it run n concurrent requests. Use it as a
    context manager (or ``close`` it): its input is closed and it exits."""

    def __init__(self, url: str, text: str, voice: str):
        self.url, self.text, self.voice = url, text, voice
        self.sent: list[float] = []  # when each request of the last run started (``time.perf_counter``)
        root = Path(__file__).resolve().parents[1]  # where ``bench`` is importable from, whatever the cwd
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(root), os.environ.get("PYTHONPATH")])))
        self._stderr = tempfile.TemporaryFile()  # a file, not a pipe: a chatty child cannot block on it
        self.proc = subprocess.Popen([sys.executable, "-m", "bench.clients"], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=self._stderr, text=True, env=env)
        self._read()  # {"ready": true}

    def run(self, n: int, frames: int, spacing_s: float = 0.0) -> tuple[list[float], float]:
        """n requests of ``frames`` frames, started at once or ``spacing_s`` apart: (their times to first
        audio in ms, the wall seconds from the first start to the last end), as ``concurrently``."""
        self.send(n, frames, spacing_s)
        answer = self.receive()
        self.sent = answer["sent"]
        return answer["ttfa_ms"], answer["wall_s"]

    def send(self, n: int, frames: int, spacing_s: float = 0.0, first: int = 0) -> None:
        """Have it start n requests (seeds first, first + 1, ...); ``receive`` waits for their answer."""
        command = {"url": self.url, "n": n, "frames": frames, "spacing_s": spacing_s, "text": self.text,
                   "voice": self.voice, "first": first}
        try:
            self.proc.stdin.write(json.dumps(command) + "\n")
            self.proc.stdin.flush()
        except OSError:  # it has exited
            raise self._failure() from None

    def receive(self) -> dict:
        """The answer to the last ``send``: {"ttfa_ms", "wall_s", "start", "end", "sent"} (``time.perf_counter``
        of the first start, the last end and each request's start: the system's monotonic clock, the same in every
        process)."""
        return self._read()

    def _read(self) -> dict:
        line = self.proc.stdout.readline()
        if not line:
            raise self._failure()
        return json.loads(line)

    def _failure(self) -> RuntimeError:
        try:
            code = self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            code = self.proc.wait()
        self._stderr.seek(0)
        stderr = self._stderr.read().decode(errors="replace").strip()
        return RuntimeError(f"the benchmark's client process exited with code {code}:\n{stderr[-8000:]}")

    def close(self) -> None:
        if self.proc.poll() is None:
            try:
                self.proc.stdin.close()
                self.proc.wait(timeout=30)
            except (OSError, subprocess.TimeoutExpired):
                self.proc.kill()
                self.proc.wait()
        self.proc.stdout.close()
        self._stderr.close()

    def __enter__(self) -> ClientProcess:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


class ClientProcesses:
    """Several client processes (``ClientProcess``) sharing each run's requests, as many clients of a deployed
    server are many processes: one process reading 128 streams under one GIL may lag the server. ``run`` as
    ``ClientProcess.run``, without spacing; the wall runs from the first start in any process to the last end."""

    def __init__(self, url: str, text: str, voice: str, count: int):
        self.sent: list[float] = []  # when each request of the last run started, in every process
        self.processes: list[ClientProcess] = []
        try:
            for _ in range(count):
                self.processes.append(ClientProcess(url, text, voice))
        except BaseException:
            self.close()
            raise

    def run(self, n: int, frames: int) -> tuple[list[float], float]:
        shares = [n // len(self.processes) + (i < n % len(self.processes)) for i in range(len(self.processes))]
        busy = [(process, share) for process, share in zip(self.processes, shares, strict=True) if share]
        first = 0
        for process, share in busy:  # each starts as soon as it reads its line: all within microseconds
            process.send(share, frames, first=first)
            first += share
        answers = [process.receive() for process, _ in busy]
        ttfa = [t for answer in answers for t in answer["ttfa_ms"]]
        self.sent = [t for answer in answers for t in answer["sent"]]
        return ttfa, max(a["end"] for a in answers) - min(a["start"] for a in answers)

    def close(self) -> None:
        for process in self.processes:
            process.close()

    def __enter__(self) -> ClientProcesses:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def serve_commands(stdin, out) -> None:
    """The client process's loop (see the module's docstring)."""
    with http_client() as client:
        out.write(json.dumps({"ready": True}) + "\n")
        out.flush()
        for line in stdin:
            c = json.loads(line)
            sent = [0.0] * c["n"]
            requests = http_requests(client, c["url"], c["frames"], c["text"], c["voice"], c.get("first", 0), sent)
            ttfa, wall = concurrently(c["n"], requests, c["spacing_s"])
            end = time.perf_counter()
            out.write(json.dumps({"ttfa_ms": ttfa, "wall_s": wall, "start": end - wall, "end": end, "sent": sent})
                      + "\n")
            out.flush()


def main() -> None:
    out, sys.stdout = sys.stdout, sys.stderr  # stdout carries the answers only: stray prints go to stderr
    try:
        serve_commands(sys.stdin, out)
    except BaseException:  # noqa: BLE001 - the parent reads this traceback from stderr
        traceback.print_exc()
        sys.exit(1)


if __name__ == "__main__":
    main()
