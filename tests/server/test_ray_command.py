"""``python main.py serve --ray-replicas 1 --ray-max-replicas 2`` from start to Ctrl-C: it starts its own Ray
instance and serves the API through Ray's proxy from one replica, Ray's autoscaler adds the second while requests
queue, and on SIGINT the command removes everything and exits 0."""

from __future__ import annotations

import signal
import socket
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest

pytest.importorskip("ray.serve")
ROOT = Path(__file__).resolve().parents[2]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _keep_busy(url: str, stop: threading.Event, failures: list) -> None:
    """Four requests at a time until ``stop``: more than one replica's --batch 1, so a queue forms."""
    body = {"model": "orator", "voice": "vivian", "input": "Busy.", "response_format": "pcm", "max_frames": 60}

    def one(_):
        with httpx.Client(timeout=60) as client:
            while not stop.is_set():
                r = client.post(f"{url}/v1/audio/speech", json=body, headers={"Authorization": "Bearer k"})
                if r.status_code != 200:
                    failures.append(r.status_code)

    with ThreadPoolExecutor(4) as pool:
        list(pool.map(one, range(4)))


def test_the_command_serves_autoscales_and_stops_on_ctrl_c(tiny_model_dir, tmp_path):
    port = _free_port()
    url = f"http://127.0.0.1:{port}"
    command = [sys.executable, "main.py", "serve", "--model", str(tiny_model_dir("custom_voice")), "--ray-replicas",
               "1", "--ray-max-replicas", "2", "--batch", "1", "--port", str(port),
               "--library", str(tmp_path / "voices"), "--api-key", "k"]
    child = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    lines: list[str] = []
    reader = threading.Thread(target=lambda: lines.extend(child.stderr), daemon=True)
    reader.start()
    try:
        deadline = time.monotonic() + 120
        while not any("through Ray Serve" in line for line in lines) and time.monotonic() < deadline:
            assert child.poll() is None, "".join(lines[-20:])
            time.sleep(0.2)
        assert len(httpx.get(f"{url}/health", timeout=30).json()["replicas"]) == 1
        stop, failures = threading.Event(), []
        load = threading.Thread(target=_keep_busy, args=(url, stop, failures))
        load.start()
        try:
            deadline, replicas = time.monotonic() + 120, []
            while time.monotonic() < deadline:
                replicas = httpx.get(f"{url}/health", timeout=30).json()["replicas"]
                if len(replicas) == 2 and {r["status"] for r in replicas} == {"ok"}:
                    break
                time.sleep(1)
        finally:
            stop.set()
            load.join(timeout=90)
        assert len(replicas) == 2 and not failures  # scaled up, and no request failed meanwhile
        spoken = httpx.post(f"{url}/v1/audio/speech", headers={"Authorization": "Bearer k"}, timeout=60,
                            json={"model": "orator", "voice": "vivian", "input": "Hi.", "response_format": "pcm",
                                  "max_frames": 3})
        assert spoken.status_code == 200 and len(spoken.content) == 2 * 3 * 1920
        child.send_signal(signal.SIGINT)
        try:  # ~8 s on an idle 2-core machine; a loaded one has taken over 90
            child.wait(timeout=240)
        except subprocess.TimeoutExpired:
            pytest.fail("the command did not stop within 240 s of SIGINT; its last lines:\n" + "".join(lines[-30:]))
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
        reader.join(timeout=10)
    err = "".join(lines)
    assert child.returncode == 0 and "through Ray Serve (1 to 2 replicas, autoscaled)" in err and "Traceback" not in err
    with pytest.raises(httpx.TransportError):  # the proxy went with the instance
        httpx.get(f"{url}/health", timeout=5)
