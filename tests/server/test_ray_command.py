"""``python main.py serve --ray-replicas 2`` from start to Ctrl-C: it starts its own Ray instance, serves the API
through Ray's proxy from two replicas, and on SIGINT removes everything and exits 0."""

from __future__ import annotations

import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx
import pytest

pytest.importorskip("ray.serve")
ROOT = Path(__file__).resolve().parents[2]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_the_command_serves_from_replicas_and_stops_on_ctrl_c(tiny_model_dir, tmp_path):
    port = _free_port()
    url = f"http://127.0.0.1:{port}"
    child = subprocess.Popen([sys.executable, "main.py", "serve", "--model", str(tiny_model_dir("custom_voice")),
                              "--ray-replicas", "2", "--port", str(port), "--library", str(tmp_path / "voices"),
                              "--api-key", "k"], cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                             text=True)
    lines: list[str] = []
    reader = threading.Thread(target=lambda: lines.extend(child.stderr), daemon=True)
    reader.start()
    try:
        deadline = time.monotonic() + 120
        while not any("through Ray Serve" in line for line in lines) and time.monotonic() < deadline:
            assert child.poll() is None, "".join(lines[-20:])
            time.sleep(0.2)
        replicas = httpx.get(f"{url}/health", timeout=30).json()["replicas"]
        assert len({r["replica"] for r in replicas}) == 2
        spoken = httpx.post(f"{url}/v1/audio/speech", headers={"Authorization": "Bearer k"}, timeout=60,
                            json={"model": "orator", "voice": "vivian", "input": "Hi.", "response_format": "pcm",
                                  "max_frames": 3})
        assert spoken.status_code == 200 and len(spoken.content) == 2 * 3 * 1920
        child.send_signal(signal.SIGINT)
        child.wait(timeout=90)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
        reader.join(timeout=10)
    err = "".join(lines)
    assert child.returncode == 0 and "through Ray Serve (2 replicas)" in err and "Traceback" not in err
    with pytest.raises(httpx.TransportError):  # the proxy went with the instance
        httpx.get(f"{url}/health", timeout=5)
