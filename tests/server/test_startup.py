"""Startup: while the model loads and warms up, ``/health`` says how far it is and the API answers 503 (or, with
``load_first``, the startup waits for it); the batched backend tells how far its warm-up is."""

from __future__ import annotations

import threading
import time

import pytest
from fastapi.testclient import TestClient

from server.app import create_app
from server.scheduler import backend_factory


def test_health_reports_the_warm_up_while_the_api_answers_503(tiny_engine, tmp_path):
    engine = tiny_engine("custom_voice")
    reported, release = threading.Event(), threading.Event()

    def make_backend(eng, progress):
        progress(2, 5, "the 4-stream frame step")
        reported.set()
        release.wait(30)
        progress(5, 5, "done")
        return backend_factory(1)(eng, None)

    app = create_app(lambda: engine, tmp_path, make_backend=make_backend)
    with TestClient(app, base_url="http://localhost") as client:  # a Host the loopback server answers to
        assert reported.wait(30)
        health = client.get("/health").json()
        assert health["status"] == "loading" and not health["model_loaded"]
        assert health["loading"]["stage"] == "warming up: the 4-stream frame step"
        assert (health["loading"]["done"], health["loading"]["total"]) == (2, 5)
        assert health["loading"]["elapsed_s"] >= 0
        refused = client.post("/v1/audio/speech", json={"model": "orator", "input": "Hi.", "voice": "vivian"})
        assert refused.status_code == 503 and refused.json()["error"]["code"] == "model_unavailable"
        release.set()
        deadline = time.monotonic() + 60
        while not client.get("/health").json()["model_loaded"] and time.monotonic() < deadline:
            time.sleep(0.05)
        health = client.get("/health").json()
    assert health["status"] == "ok" and "loading" not in health


def test_the_batched_backend_tells_how_far_its_warm_up_is(tiny_engine):
    told = []
    backend = backend_factory(2)(tiny_engine("custom_voice"), lambda *progress: told.append(progress))
    assert backend.capacity == 2
    total = told[-1][1]
    assert told[-1] == (total, total, "done") and [done for done, _, _ in told] == list(range(total + 1))
    assert {what for _, _, what in told} >= {"the 2-stream frame step", "the 2-stream decodes"}


def test_load_first_starts_serving_only_once_loaded(tiny_engine, tmp_path):
    """A Ray Serve replica's app: its startup (which Ray waits for before routing to it) ends once the model is
    loaded and warmed up, so its first request is served."""
    engine, warmed = tiny_engine("custom_voice"), []

    def make_backend(eng, progress):
        time.sleep(0.3)
        warmed.append(True)
        return backend_factory(1)(eng, progress)

    app = create_app(lambda: engine, tmp_path, make_backend=make_backend, load_first=True)
    with TestClient(app, base_url="http://localhost") as client:
        assert warmed and client.get("/health").json()["status"] == "ok"
        spoken = client.post("/v1/audio/speech", json={"model": "orator", "input": "Hi.", "voice": "vivian",
                                                       "response_format": "pcm", "max_frames": 2})
        assert spoken.status_code == 200 and spoken.content


def test_load_first_fails_the_startup_with_the_reason(tmp_path):
    def broken():
        raise FileNotFoundError("no model at /nowhere")

    app = create_app(broken, tmp_path, load_first=True)
    with pytest.raises(RuntimeError, match="cannot load the model: FileNotFoundError: no model at /nowhere"):
        with TestClient(app, base_url="http://localhost"):
            pass


def test_shutting_the_server_down_ends_the_batched_loop_thread(tiny_engine, tmp_path):
    app = create_app(lambda: tiny_engine("custom_voice"), tmp_path, make_backend=backend_factory(2), load_first=True)
    with TestClient(app, base_url="http://localhost") as client:
        spoken = client.post("/v1/audio/speech", json={"model": "orator", "input": "Hi.", "voice": "vivian",
                                                       "response_format": "pcm", "max_frames": 2})
        assert spoken.status_code == 200
        loop = app.state.scheduler.backend.streams._loop
        assert loop.is_alive()
    loop.join(10)
    assert not loop.is_alive()  # a server made and stopped in a process that goes on leaves no thread behind
