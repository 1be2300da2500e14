"""Liveness and readiness: ``/health`` answers 200 while the process serves; ``/ready`` answers 503 until the model
is loaded and warmed up, and while every slot has gone ``stall_s`` without a frame with requests waiting (a backend
that never yields stands for an engine that lost its requests)."""

from __future__ import annotations

import asyncio
import socket
import threading
import time

import httpx
import numpy as np
from fastapi.testclient import TestClient

from engine import Chunk, Sampling, Voice
from server.app import create_app
from server.scheduler import Scheduler, SpeechJob, backend_factory
from server.settings import ServerSettings


class NeverYields:
    """An async backend of ``capacity`` slots whose jobs never yield a chunk, except jobs called "quick" (one)."""

    def __init__(self, capacity: int = 1):
        self.capacity = capacity

    async def run_async(self, job, cancel):
        if job.text != "quick":
            await asyncio.Event().wait()
        yield Chunk(np.zeros(1920, np.float32), 24000, 0, 1, 0, (0, 1), 0.0, True)


class Clock:
    def __init__(self):
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def _job(text: str) -> SpeechJob:
    return SpeechJob(text, Voice.preset("vivian"), Sampling(seed=0))


def test_the_scheduler_is_stalled_once_every_slot_went_stall_s_without_a_chunk_while_requests_wait():
    async def scenario():
        clock = Clock()
        scheduler = Scheduler(NeverYields(capacity=2), max_queue=8, stall_s=30, clock=clock)
        seen = []
        lost = [scheduler.submit(_job("lost")) for _ in range(2)]
        await asyncio.sleep(0)
        clock.now += 100
        seen.append(scheduler.stalled())  # every slot idle for 100 s, but nobody waits: nothing is held up
        waiting = scheduler.submit(_job("quick"))
        clock.now += 29
        seen.append(scheduler.stalled())  # idle before anyone waited held nobody up: 29 s of waiting so far
        clock.now += 1
        seen.append(scheduler.stalled())
        lost[0].cancel()  # a slot freed: the quick one starts and ends, the scheduler moves again
        await asyncio.wait_for(_drain(waiting), 5)
        seen.append(scheduler.stalled())
        refill = [scheduler.submit(_job("lost")), scheduler.submit(_job("lost"))]  # one runs, one waits
        clock.now += 29.5
        seen.append(scheduler.stalled())  # the refilled slot started 29.5 s ago: that counts as progress
        clock.now += 0.5
        seen.append(scheduler.stalled())
        scheduler.shutdown()
        return seen, refill

    seen, _ = asyncio.run(scenario())
    assert seen == [None, None, 30.0, None, None, 30.0]


async def _drain(ticket):
    return [event async for event in ticket.events()]


def test_ready_answers_503_while_the_model_loads_and_health_stays_200(tiny_engine, tmp_path):
    engine = tiny_engine("custom_voice")
    warming, release = threading.Event(), threading.Event()

    def make_backend(eng, progress):
        progress(1, 3, "the frame step")
        warming.set()
        release.wait(30)
        return backend_factory(1)(eng, None)

    app = create_app(lambda: engine, tmp_path, make_backend=make_backend)
    with TestClient(app, base_url="http://localhost") as client:
        assert warming.wait(30)
        health, ready = client.get("/health"), client.get("/ready")
        assert health.status_code == 200 and health.json()["status"] == "loading" and not health.json()["ready"]
        assert ready.status_code == 503 and ready.json()["status"] == "loading"
        assert ready.json()["loading"]["stage"] == "warming up: the frame step"  # the page shows this progress
        release.set()
        deadline = time.monotonic() + 60
        while client.get("/ready").status_code != 200 and time.monotonic() < deadline:
            time.sleep(0.05)
        ready, health = client.get("/ready"), client.get("/health")
    assert ready.status_code == 200 and ready.json()["status"] == "ready" and ready.json()["queue"]["running"] == 0
    assert health.status_code == 200 and health.json()["ready"]


def test_ready_answers_503_when_the_model_failed_to_load(tmp_path):
    def broken():
        raise FileNotFoundError("no model here")

    app = create_app(broken, tmp_path)
    with TestClient(app, base_url="http://localhost") as client:
        deadline = time.monotonic() + 30
        while client.get("/health").json()["status"] == "loading" and time.monotonic() < deadline:
            time.sleep(0.02)
        ready, health = client.get("/ready"), client.get("/health")
    assert ready.status_code == 503 and ready.json()["status"] == "failed" and "no model here" in ready.json()["reason"]
    assert health.status_code == 200 and health.json()["status"] == "failed"


def _hanging_request(url: str, text: str) -> socket.socket:
    """A speech request sent and never read (its answer never comes from a backend that never yields)."""
    host, port = url.removeprefix("http://").split(":")
    body = f'{{"model": "orator", "voice": "vivian", "input": "{text}", "response_format": "pcm"}}'.encode()
    sock = socket.create_connection((host, int(port)), timeout=10)
    sock.sendall(b"POST /v1/audio/speech HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                 b"Content-Length: " + str(len(body)).encode() + b"\r\n\r\n" + body)
    return sock


def test_a_server_whose_slots_produce_nothing_while_requests_wait_is_not_ready(start_server, tiny_engine):
    server = start_server(tiny_engine("custom_voice"), settings=ServerSettings(stall_s=0.3),
                          make_backend=lambda engine, progress: NeverYields(capacity=1))
    assert httpx.get(f"{server.url}/ready").status_code == 200
    held = [_hanging_request(server.url, "lost"), _hanging_request(server.url, "waiting")]
    try:
        deadline = time.monotonic() + 30
        while httpx.get(f"{server.url}/ready").status_code == 200 and time.monotonic() < deadline:
            time.sleep(0.05)
        ready, health = httpx.get(f"{server.url}/ready"), httpx.get(f"{server.url}/health")
        assert ready.status_code == 503 and ready.json()["status"] == "stalled" and ready.json()["stalled_s"] >= 0.3
        assert ready.json()["queue"]["running"] == 1 and ready.json()["queue"]["waiting"] == 1
        assert health.status_code == 200 and health.json()["status"] == "ok" and not health.json()["ready"]
    finally:
        for sock in held:
            sock.close()
    deadline = time.monotonic() + 30  # the clients gone cancel their requests: nothing waits, the server is ready
    while httpx.get(f"{server.url}/ready").status_code != 200 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert httpx.get(f"{server.url}/ready").status_code == 200
