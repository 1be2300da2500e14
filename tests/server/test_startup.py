"""Startup: while the model loads and warms up, ``/health`` says how far it is and the API answers 503; the
batched backend tells how far its warm-up is."""

from __future__ import annotations

import threading
import time

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
