"""The server with ``--batch``: concurrent requests run together in the engine's batched frame loop and
each still gets exactly its own audio (float64 engine, so batching cannot change a rounding)."""

from __future__ import annotations

import threading

import httpx
import pytest
import torch

from engine import Engine
from server.scheduler import BatchedBackend, EngineBackend, backend_factory
from tests.server.helpers import (
    SAMPLES_PER_FRAME,
    assert_a_disconnect_cancels_the_stream_and_frees_its_slot,
    engine_pcm,
    pcm_close,
    speak_concurrently,
)

CLIENTS = 8
FRAMES = 3


@pytest.fixture(scope="module")
def batched_server(start_server, tiny_model_dir):
    engine = Engine.from_pretrained(tiny_model_dir("custom_voice"), dtype=torch.float64)
    return start_server(engine, make_backend=backend_factory(4))


def test_backend_factory_picks_the_batched_backend_only_when_asked():
    assert backend_factory(1) is EngineBackend
    assert backend_factory(0) is EngineBackend
    assert callable(backend_factory(8)) and backend_factory(8) is not EngineBackend


def test_concurrent_clients_are_batched_and_each_gets_its_own_audio(batched_server):
    assert isinstance(batched_server.app.state.scheduler.backend, BatchedBackend)

    answers = speak_concurrently(batched_server.url, [f"Batched client {i}." for i in range(CLIENTS)],
                                 [300 + i for i in range(CLIENTS)], FRAMES)
    assert all(len(a) == 2 * FRAMES * SAMPLES_PER_FRAME for a in answers)
    for i, answer in enumerate(answers):
        expected = engine_pcm(batched_server.engine, f"Batched client {i}.", "vivian", 300 + i, FRAMES)
        assert pcm_close(answer, expected), f"client {i} got someone else's audio"
    queue = httpx.get(f"{batched_server.url}/health").json()["queue"]
    assert queue["capacity"] == 4 and queue["running"] == 0
    # served from the event loop: the scheduler started no worker thread for them
    assert not [t for t in threading.enumerate() if t.name.startswith("orator-engine")]


def test_a_client_that_disconnects_frees_its_batch_slot(batched_server):
    assert_a_disconnect_cancels_the_stream_and_frees_its_slot(batched_server.url)
    assert httpx.get(f"{batched_server.url}/health").json()["queue"]["running"] == 0


def test_many_waiting_live_sessions_closing_together_leave_no_slot_held(batched_server):
    """Live sessions that send only their config (four hold the slots, the rest wait in line) and then all close at
    once: afterwards no slot is held and the next request is served."""
    import asyncio
    import json
    import time

    from websockets.asyncio.client import connect

    sessions = 24
    url = batched_server.url.replace("http://", "ws://") + "/v1/audio/speech/stream"
    config = {"type": "session.config", "voice": "vivian", "response_format": "pcm", "max_frames": FRAMES}

    def queue() -> dict:
        return httpx.get(f"{batched_server.url}/health").json()["queue"]

    async def open_and_close_together() -> dict:
        sockets = [await connect(url) for _ in range(sessions)]
        for ws in sockets:
            await ws.send(json.dumps(config))
        deadline = time.monotonic() + 60
        while (held := await asyncio.to_thread(queue))["waiting"] < sessions - 4 and time.monotonic() < deadline:
            await asyncio.sleep(0.05)
        await asyncio.gather(*(ws.close() for ws in sockets))
        return held

    held = asyncio.run(open_and_close_together())
    assert held["running"] == 4 and held["waiting"] == sessions - 4
    deadline = time.monotonic() + 30
    while (after := queue()) != {**after, "running": 0, "waiting": 0} and time.monotonic() < deadline:
        time.sleep(0.05)
    assert after["running"] == 0 and after["waiting"] == 0
    speech = httpx.post(f"{batched_server.url}/v1/audio/speech", timeout=60, json={
        "model": "orator", "voice": "vivian", "input": "Still speaking.", "response_format": "pcm",
        "max_frames": FRAMES, "seed": 1})
    assert speech.status_code == 200 and len(speech.content) == 2 * FRAMES * SAMPLES_PER_FRAME
    assert queue()["running"] == 0
