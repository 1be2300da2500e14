"""The benchmarks' client process (``bench.clients.ClientProcess``): it imports httpx and not torch, runs
its requests concurrently on its own threads, and its failures reach the parent with its traceback."""

from __future__ import annotations

import itertools
import json
import os
import socket
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from bench.clients import ClientProcess, ClientProcesses, concurrently

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def fake_speech():
    """A stand-in for ``/v1/audio/speech``: ``max_frames`` frames of silent pcm, less ``short`` bytes; every
    request's body is kept."""

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self):  # noqa: N802 - http.server's name
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            server.bodies.append(body)
            pcm = bytes(max(2 * body["max_frames"] * 1920 - server.short, 0))
            self.send_response(200)
            self.send_header("Content-Length", str(len(pcm)))
            self.end_headers()
            self.wfile.write(pcm)

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.bodies, server.short = [], 0
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield server
    server.shutdown()
    server.server_close()


def test_concurrent_requests_start_together_once_every_thread_is_up():
    """No request starts before the last thread exists (their arrivals are not spread by thread creation); with
    a spacing they start that far apart."""
    n, seen, starts = 32, [], []

    def request(i: int) -> float:
        seen.append(threading.active_count())
        starts.append(time.perf_counter())
        return float(i)

    ttfa, wall = concurrently(n, request)
    assert ttfa == [float(i) for i in range(n)] and wall > 0
    assert seen[0] >= n + 1  # the first request to start found every request thread up, and this one
    starts.clear()
    concurrently(3, request, spacing_s=0.05)
    assert len(starts) == 3 and all(b - a >= 0.045 for a, b in itertools.pairwise(starts))


def test_the_client_process_loads_httpx_and_not_torch():
    found = subprocess.run(
        [sys.executable, "-c", "import json, sys, bench.clients as c; c.http_client().close(); "
         "print(json.dumps(sorted({m.split('.')[0] for m in sys.modules})))"],
        cwd=ROOT, capture_output=True, text=True, check=True)
    loaded = set(json.loads(found.stdout))
    assert "httpx" in loaded
    assert not loaded & {"torch", "numpy", "engine", "server", "transformers", "uvicorn", "fastapi"}


def test_requests_run_concurrently_in_another_process(fake_speech):
    url = f"http://127.0.0.1:{fake_speech.server_port}"
    with ClientProcess(url, "Hello there.", "vivian") as clients:
        assert clients.proc.pid != os.getpid()
        t0 = time.perf_counter()
        ttfa, wall = clients.run(5, frames=3)
        assert len(ttfa) == 5 and all(t > 0 for t in ttfa) and wall > 0
        # each request's start, on this process's clock too (the system's monotonic one)
        assert len(clients.sent) == 5 and all(t0 < t < time.perf_counter() for t in clients.sent)
        ttfa, _ = clients.run(2, frames=4, spacing_s=0.01)  # the same process, again
        assert len(ttfa) == 2
    assert clients.proc.returncode == 0  # it exits at the end of its input
    assert sorted(b["seed"] for b in fake_speech.bodies) == [0, 0, 1, 1, 2, 3, 4]
    assert {(b["input"], b["voice"], b["response_format"]) for b in fake_speech.bodies} == {
        ("Hello there.", "vivian", "pcm")}
    assert {(b["max_frames"], b["min_frames"]) for b in fake_speech.bodies} == {(3, 3), (4, 4)}


def test_a_failed_request_raises_in_the_parent_with_the_childs_traceback(fake_speech):
    fake_speech.short = 2
    with ClientProcess(f"http://127.0.0.1:{fake_speech.server_port}", "Hi.", "vivian") as clients:
        with pytest.raises(RuntimeError, match="exited with code 1") as failed:
            clients.run(2, frames=3)
    assert "Traceback" in str(failed.value) and "bytes of pcm, not 11520" in str(failed.value)


def test_no_server_raises_in_the_parent():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed again: nothing listens there
    with ClientProcess(f"http://127.0.0.1:{port}", "Hi.", "vivian") as clients:
        with pytest.raises(RuntimeError, match="(?s)exited with code 1.*ConnectError"):
            clients.run(1, frames=3)


def test_a_dead_client_process_raises_in_the_parent(fake_speech):
    with ClientProcess(f"http://127.0.0.1:{fake_speech.server_port}", "Hi.", "vivian") as clients:
        clients.proc.kill()
        clients.proc.wait()
        with pytest.raises(RuntimeError, match="exited with code -9"):
            clients.run(1, frames=3)


def test_several_client_processes_share_the_requests_with_distinct_seeds(fake_speech):
    """Seven requests over three processes (3, 2, 2): seeds 0..6 once each, a first-audio time each, and one wall
    from the first start to the last end across the processes."""
    url = f"http://127.0.0.1:{fake_speech.server_port}"
    with ClientProcesses(url, "Hello there.", "vivian", 3) as clients:
        pids = {process.proc.pid for process in clients.processes}
        t0 = time.perf_counter()
        ttfa, wall = clients.run(7, 4)
        elapsed = time.perf_counter() - t0
        sent = clients.sent
    assert len(pids) == 3 and os.getpid() not in pids
    assert sorted(body["seed"] for body in fake_speech.bodies) == list(range(7))
    assert len(ttfa) == 7 and all(t > 0 for t in ttfa)
    assert 0 < wall < elapsed
    assert len(sent) == 7 and all(t0 < t < t0 + elapsed for t in sent) and max(sent) - min(sent) < wall
    assert all(process.proc.returncode == 0 for process in clients.processes)
