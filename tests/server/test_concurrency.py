"""Many voices at once: 32 concurrent clients, the queue limit (429), queue positions and disconnects."""

from __future__ import annotations

import json
import threading
import time

import httpx
import numpy as np
import pytest

from engine import Chunk, TextError
from server.settings import ServerSettings
from tests.server.helpers import (
    SAMPLES_PER_FRAME,
    assert_a_disconnect_cancels_the_stream_and_frees_its_slot,
    engine_pcm,
    pcm_close,
    speak_concurrently,
    sse_events,
    wait_for_queue,
    wait_for_state,
)

CLIENTS = 32
FRAMES = 2


def test_32_concurrent_clients_get_their_own_correct_audio(live_server):
    answers = speak_concurrently(live_server.url, [f"Client number {i}." for i in range(CLIENTS)],
                                 [1000 + i for i in range(CLIENTS)], FRAMES)
    assert all(len(a) == 2 * FRAMES * SAMPLES_PER_FRAME for a in answers)
    assert len(set(answers)) == CLIENTS
    for i, answer in enumerate(answers):
        expected = engine_pcm(live_server.engine, f"Client number {i}.", "vivian", 1000 + i, FRAMES)
        assert pcm_close(answer, expected), f"client {i} got someone else's audio"
    assert httpx.get(f"{live_server.url}/health").json()["queue"] == {"capacity": 1, "running": 0, "waiting": 0,
                                                                      "max_queue": 64}


def test_a_client_that_disconnects_cancels_its_stream_and_frees_the_slot(live_server):
    assert_a_disconnect_cancels_the_stream_and_frees_its_slot(live_server.url)


class GatedBackend:
    """A stand-in engine whose jobs wait for ``release`` before yielding their two chunks."""

    capacity = 1

    def __init__(self):
        self.release = threading.Event()

    def run(self, job, cancel):
        self.release.wait(30)
        for i in range(2):
            if cancel.is_set():
                return
            yield Chunk(np.zeros(SAMPLES_PER_FRAME, np.float32), 24000, i, 1, 0, (0, 1), 0.01, i == 1)


@pytest.fixture(scope="module")
def gated_server(start_server, tiny_engine):
    backend = GatedBackend()
    live = start_server(tiny_engine("custom_voice"), settings=ServerSettings(max_queue=2, retry_after_s=3),
                        make_backend=lambda engine, progress: backend)
    return live, backend


def test_full_queue_answers_429_with_retry_after_and_waiting_clients_see_their_place(gated_server):
    live, backend = gated_server
    url = f"{live.url}/v1/audio/speech"
    body = {"model": "orator", "voice": "vivian", "input": "Wait.", "response_format": "pcm"}
    results: dict[int, object] = {}

    def speak(i: int) -> None:
        results[i] = httpx.post(url, json={**body, "stream_format": "sse"}, timeout=60)

    threads = [threading.Thread(target=speak, args=(i,)) for i in range(3)]
    for thread in threads:
        thread.start()
        time.sleep(0.3)  # keep their order
    refused = httpx.post(url, json=body, timeout=10)
    assert refused.status_code == 429 and refused.headers["retry-after"] == "3"
    assert refused.json()["error"]["type"] == "rate_limit_error"
    backend.release.set()
    for thread in threads:
        thread.join(30)
    positions = [[e["position"] for e in sse_events(results[i].text) if e["type"] == "speech.queue"] for i in range(3)]
    assert positions == [[], [1], [2, 1]]
    assert all(sse_events(results[i].text)[-1]["type"] == "speech.audio.done" for i in range(3))


def test_a_waiting_client_that_disconnects_gives_up_its_place(gated_server):
    live, backend = gated_server
    url, body = f"{live.url}/v1/audio/speech", HOLD_ON
    running = _one_held_running(live, backend)
    with httpx.stream("POST", url, json={**body, "stream_format": "sse"}, timeout=60) as r:
        request_id = r.headers["x-request-id"]
        first = next(r.iter_lines())
        assert json.loads(first[5:]) == {"type": "speech.queue", "id": request_id, "position": 1}
    assert wait_for_state(live.url, request_id, {"cancelled"})["frames"] == 0
    wait_for_queue(live.url, running=1, waiting=0)
    backend.release.set()
    running.join(30)


def test_a_waiting_audio_client_gets_its_headers_and_place_at_once(gated_server):
    """Audio responses start with their first audio, except a request waiting in line: it hears its place now."""
    live, backend = gated_server
    url, body = f"{live.url}/v1/audio/speech", HOLD_ON
    running = _one_held_running(live, backend)
    try:
        with httpx.stream("POST", url, json=body, timeout=httpx.Timeout(60, read=5)) as r:
            assert r.status_code == 200 and r.headers["x-queue-position"] == "1"
            assert httpx.get(f"{live.url}/health").json()["queue"]["waiting"] == 1  # still in line
            backend.release.set()
            assert len(r.read()) == 2 * 2 * SAMPLES_PER_FRAME
    finally:
        backend.release.set()
        running.join(30)


class FailingBackend:
    """A stand-in engine that refuses each job's text, before its first chunk or (``after_first``) after it."""

    capacity = 1
    after_first = False

    def run(self, job, cancel):
        if self.after_first:
            yield Chunk(np.zeros(SAMPLES_PER_FRAME, np.float32), 24000, 0, 1, 0, (0, 1), 0.01, False)
        raise TextError("the text cannot be spoken")


def test_an_engine_error_before_any_audio_answers_its_json_error_and_one_after_cuts_the_stream(start_server,
                                                                                               tiny_engine):
    backend = FailingBackend()
    live = start_server(tiny_engine("custom_voice"), make_backend=lambda engine, progress: backend)
    body = {"model": "orator", "voice": "vivian", "input": "Say it.", "response_format": "pcm"}
    for stream_format in ("audio", "sse"):
        r = httpx.post(f"{live.url}/v1/audio/speech", json={**body, "stream_format": stream_format}, timeout=30)
        if stream_format == "audio":  # a status a client can act on, not a 200 with no audio
            assert r.status_code == 400 and r.headers["content-type"] == "application/json"
            assert r.json()["error"]["code"] == "invalid_input" and "cannot be spoken" in r.json()["error"]["message"]
            assert r.headers["x-request-id"]
        else:  # server-sent events report it as an event
            assert r.status_code == 200 and sse_events(r.text)[-1]["type"] == "error"
    backend.after_first = True
    with httpx.stream("POST", f"{live.url}/v1/audio/speech", json=body, timeout=30) as r:
        assert r.status_code == 200
        with pytest.raises(httpx.RemoteProtocolError):  # cut, not ended as if the audio were complete
            r.read()
    r = httpx.post(f"{live.url}/v1/audio/speech", json={**body, "stream_format": "sse"}, timeout=30)
    assert [e["type"] for e in sse_events(r.text)][-2:] == ["speech.audio.delta", "error"]
    assert httpx.get(f"{live.url}/health").json()["queue"]["running"] == 0


HOLD_ON = {"model": "orator", "voice": "vivian", "input": "Hold on.", "response_format": "pcm"}


def _one_held_running(live, backend) -> threading.Thread:
    """A request (on a thread of its own) holding the gated server's only slot until ``backend.release``."""
    backend.release.clear()
    running = threading.Thread(target=lambda: httpx.post(f"{live.url}/v1/audio/speech", json=HOLD_ON, timeout=60))
    running.start()
    wait_for_queue(live.url, running=1, waiting=0)
    return running


