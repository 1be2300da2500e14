"""The server on Ray Serve (``server.ray_serve``): two CPU replicas of the tiny model behind Ray's HTTP proxy, one
deployment for the module. The official ``openai`` client gets the engine's audio through the proxy, plain and
streamed; requests spread over the replicas; a voice saved through one replica speaks on the other; the API key
and Host checks hold behind the proxy; the live-text WebSocket streams through it; a replica killed mid-stream
cuts only its own stream, and Ray replaces it."""

from __future__ import annotations

import json
import os
import signal
import socket
import time
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest

ray = pytest.importorskip("ray")
serve = pytest.importorskip("ray.serve")

from server.ray_replicas import REPLICA_HEADER, REQUEST_ID_HEADER  # noqa: E402
from server.ray_serve import ReplicaConfig, deploy, deployment_options, undeploy  # noqa: E402
from server.settings import ServerSettings  # noqa: E402
from tests.server.helpers import (  # noqa: E402
    SAMPLES_PER_FRAME,
    drain_socket,
    engine_pcm,
    pcm_close,
    sse_audio,
    sse_events,
)

KEY = "s3cret"
AUTH = {"Authorization": f"Bearer {KEY}"}
FRAMES = 6


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def ray_url(tiny_model_dir, tmp_path_factory):
    ray.init(num_cpus=2, include_dashboard=False, namespace="orator", log_to_driver=False)
    try:
        port = _free_port()
        serve.start(http_options={"host": "127.0.0.1", "port": port})
        options, threads = deployment_options(2, None, batch=1, max_queue=8, gpus=False, cluster_cpus=2)
        config = ReplicaConfig(model=str(tiny_model_dir("custom_voice")), library=str(tmp_path_factory.mktemp("lib")),
                               settings=ServerSettings(api_key=KEY), threads=threads)
        deploy(config, options)
        yield f"http://127.0.0.1:{port}"
    finally:
        try:
            undeploy()
            serve.shutdown()
        finally:
            ray.shutdown()


def _client(url: str):
    from openai import OpenAI

    return OpenAI(base_url=f"{url}/v1", api_key=KEY, max_retries=0, timeout=120)


def _speak(url: str, voice: str = "vivian", frames: int = FRAMES, seed: int = 7, **extra) -> httpx.Response:
    body = {"model": "orator", "voice": voice, "input": "Hello there.", "response_format": "pcm",
            "max_frames": frames, "seed": seed, **extra}
    return httpx.post(f"{url}/v1/audio/speech", json=body, headers=AUTH, timeout=120)


def _replicas(url: str) -> list[dict]:
    return httpx.get(f"{url}/health", timeout=30).json()["replicas"]


def test_health_reports_every_replica_loaded(ray_url):
    health = httpx.get(f"{ray_url}/health", timeout=30)
    answer = health.json()
    assert health.status_code == 200 and answer["status"] == "ok"
    assert answer["replica"] == health.headers[REPLICA_HEADER]
    replicas = answer["replicas"]
    assert len({r["replica"] for r in replicas}) == 2 and len({r["pid"] for r in replicas}) == 2
    assert os.getpid() not in {r["pid"] for r in replicas}  # replicas are processes of their own
    deadline = time.monotonic() + 10  # the other replica's report may be from before its load ended
    while {r["status"] for r in replicas} != {"ok"} and time.monotonic() < deadline:
        time.sleep(0.3)
        replicas = _replicas(ray_url)
    assert {r["status"] for r in replicas} == {"ok"}


def test_openai_client_gets_the_engines_audio_plain_and_streamed(ray_url, tiny_engine):
    expected = engine_pcm(tiny_engine("custom_voice"), "Hello there.", "vivian", seed=7, max_frames=FRAMES,
                          chunk_frames=1)  # the request's chunks below
    client = _client(ray_url)
    body = {"seed": 7, "max_frames": FRAMES, "chunk_frames": 1}
    plain = client.audio.speech.create(model="orator", voice="vivian", input="Hello there.", response_format="pcm",
                                       extra_body=body)
    assert len(plain.content) == 2 * FRAMES * SAMPLES_PER_FRAME and pcm_close(plain.content, expected)
    with client.audio.speech.with_streaming_response.create(
            model="orator", voice="vivian", input="Hello there.", response_format="pcm", extra_body=body) as r:
        # the speech request's id names its replica: ids stay unique across replicas
        assert r.headers[REQUEST_ID_HEADER].startswith(f"speech-{r.headers[REPLICA_HEADER]}-")
        assert len(r.headers.get_list("x-request-id")) == 1  # Ray's own; the app's moved beside it
        pieces = [p for p in r.iter_bytes(chunk_size=None) if p]
    assert len(pieces) > 1 and b"".join(pieces) == plain.content
    with client.audio.speech.with_streaming_response.create(
            model="orator", voice="vivian", input="Hello there.", response_format="pcm", stream_format="sse",
            extra_body=body) as r:
        events = sse_events(r.read().decode())
    assert events[-1]["type"] == "speech.audio.done" and sse_audio(events) == plain.content


def test_concurrent_requests_spread_over_the_replicas(ray_url):
    before = {r["replica"]: r["served"] for r in _replicas(ray_url)}
    with ThreadPoolExecutor(4) as pool:
        # forced to 40 frames: a tiny model's draw may end its speech sooner
        answers = list(pool.map(lambda seed: _speak(ray_url, frames=40, seed=seed, min_frames=40), range(4)))
    assert all(a.status_code == 200 and len(a.content) == 2 * 40 * SAMPLES_PER_FRAME for a in answers)
    served = {a.headers[REPLICA_HEADER] for a in answers}
    assert len({a.headers[REQUEST_ID_HEADER] for a in answers}) == 4
    assert served == set(before)  # both replicas took some: the router sent each to the one with a free slot
    time.sleep(1.5)  # a report a second
    after = {r["replica"]: r["served"] for r in _replicas(ray_url)}
    assert all(after[replica] > before[replica] for replica in served)


def test_a_request_status_answers_through_whichever_replica_is_asked(ray_url):
    spoken = _speak(ray_url, frames=5)
    request_id, owner = spoken.headers[REQUEST_ID_HEADER], spoken.headers[REPLICA_HEADER]
    answered_by = set()
    for _ in range(20):  # the proxy picks a replica at random: until the other one has answered too
        status = httpx.get(f"{ray_url}/v1/audio/speech/{request_id}", headers=AUTH, timeout=30)
        assert status.status_code == 200 and status.json()["id"] == request_id and status.json()["state"] == "done"
        assert status.json()["frames"] == 5
        answered_by.add(status.headers[REPLICA_HEADER])
        if len(answered_by) == 2:
            break
    assert answered_by == {owner, next(r["replica"] for r in _replicas(ray_url) if r["replica"] != owner)}
    other = next(iter(answered_by - {owner}))
    for unknown in (f"speech-{other}-999999", f"speech-{owner}-999999", "speech-nosuchreplica-1", "x" * 4000,
                    "speech--1", "speech-%2e%2e-1"):
        missing = httpx.get(f"{ray_url}/v1/audio/speech/{unknown}", headers=AUTH, timeout=30)
        assert missing.status_code == 404 and missing.json()["error"]["code"] == "not_found"


def test_a_voice_saved_through_one_replica_speaks_on_every_replica(ray_url):
    made = httpx.post(f"{ray_url}/v1/audio/voices", json={"name": "Narrator", "speaker": "ryan"}, headers=AUTH,
                      timeout=60)
    assert made.status_code == 200 and made.json()["kind"] == "preset"
    expected = _speak(ray_url, voice="ryan", frames=30).content
    with ThreadPoolExecutor(4) as pool:
        answers = list(pool.map(lambda _: _speak(ray_url, voice="Narrator", frames=30), range(4)))
    assert all(a.status_code == 200 and a.content == expected for a in answers)
    assert {a.headers[REPLICA_HEADER] for a in answers} == {r["replica"] for r in _replicas(ray_url)}
    with ThreadPoolExecutor(2) as pool:  # the same name saved through both at once: one is stored, one refused
        clashes = list(pool.map(lambda speaker: httpx.post(
            f"{ray_url}/v1/audio/voices", json={"name": "Twin", "speaker": speaker}, headers=AUTH, timeout=60),
            ["ryan", "vivian"]))
    assert sorted(c.status_code for c in clashes) == [200, 409]


def test_the_key_host_and_origin_checks_hold_behind_the_proxy(ray_url):
    assert httpx.get(f"{ray_url}/v1/models", timeout=30).status_code == 401
    assert httpx.get(f"{ray_url}/v1/models", headers=AUTH, timeout=30).json()["data"][0]["id"] == "orator"
    rebound = httpx.get(f"{ray_url}/health", headers={"Host": "evil.example"}, timeout=30)
    assert rebound.status_code == 421 and rebound.json()["error"]["code"] == "invalid_host"
    cross = httpx.post(f"{ray_url}/v1/audio/voices", data={"name": "Mallory", "speaker": "ryan"},
                       headers={"Origin": "http://evil.example"}, timeout=30)
    assert cross.status_code in (401, 403)
    assert httpx.get(f"{ray_url}/", timeout=30).status_code == 200  # the web page stays open


def test_an_oversized_body_is_refused_before_it_is_sent(ray_url):
    """The replica's body limit answers from the declared length, through the proxy, with no byte of it sent."""
    host, port = ray_url.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=30) as conn:
        conn.sendall(f"POST /v1/audio/voices HTTP/1.1\r\nHost: {host}\r\nAuthorization: Bearer {KEY}\r\n"
                     f"Content-Type: application/json\r\nContent-Length: {10**12}\r\n\r\n".encode())
        answer = b""
        while b"\r\n\r\n" not in answer:
            answer += conn.recv(4096)
    assert answer.startswith(b"HTTP/1.1 413")


def test_live_text_streams_over_the_websocket_through_the_proxy(ray_url):
    from websockets.sync.client import connect

    url = ray_url.replace("http://", "ws://") + "/v1/audio/speech/stream"
    config = {"type": "session.config", "voice": "vivian", "response_format": "pcm", "max_frames": 3, "seed": 5}
    with connect(url, additional_headers=AUTH, open_timeout=30) as ws:
        ws.send(json.dumps(config))
        ws.send(json.dumps({"type": "input.text.delta", "delta": "Hello there, my friend."}))
        ws.send(json.dumps({"type": "input.text.delta", "delta": " How are you?"}))
        ws.send(json.dumps({"type": "input.done"}))
        audio, events, _ = drain_socket(ws)
    assert [e["type"] for e in events] == ["segment.started", "segment.started", "speech.done"]
    assert len(audio) == 2 * 2 * 3 * SAMPLES_PER_FRAME


def test_a_replica_killed_mid_stream_cuts_only_its_stream_and_is_replaced(ray_url):
    """Last in the module: it leaves a new replica in place of the one killed."""
    body = {"model": "orator", "voice": "vivian", "input": "A long story that one replica never finishes.",
            "response_format": "pcm", "max_frames": 300, "chunk_frames": 1, "seed": 2}
    whole = 2 * 300 * SAMPLES_PER_FRAME
    timeout = httpx.Timeout(30, read=20)  # a hang fails the test instead of stalling it
    with httpx.Client(timeout=timeout) as a, httpx.Client(timeout=timeout) as b:
        with a.stream("POST", f"{ray_url}/v1/audio/speech", json=body, headers=AUTH) as doomed, \
                b.stream("POST", f"{ray_url}/v1/audio/speech", json={**body, "seed": 3}, headers=AUTH) as survivor:
            assert doomed.status_code == survivor.status_code == 200
            assert doomed.headers[REPLICA_HEADER] != survivor.headers[REPLICA_HEADER]
            victim = next(r for r in _replicas(ray_url) if r["replica"] == doomed.headers[REPLICA_HEADER])
            parts = doomed.iter_raw()
            received = len(next(parts))  # audio before the end: streamed, not buffered
            os.kill(victim["pid"], signal.SIGKILL)
            with pytest.raises(httpx.TransportError):  # a cut stream, never one that looks complete
                for part in parts:
                    received += len(part)
            assert received < whole
            assert sum(len(p) for p in survivor.iter_raw()) == whole
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:  # Ray starts a replica in its place; it serves once loaded
        replicas = _replicas(ray_url)
        ids = {r["replica"] for r in replicas}
        if len(ids) == 2 and victim["replica"] not in ids and {r["status"] for r in replicas} == {"ok"}:
            break
        time.sleep(0.5)
    assert victim["replica"] not in ids and len(ids) == 2
    with ThreadPoolExecutor(4) as pool:
        answers = list(pool.map(lambda seed: _speak(ray_url, frames=20, seed=seed, min_frames=20), range(4)))
    assert all(a.status_code == 200 and len(a.content) == 2 * 20 * SAMPLES_PER_FRAME for a in answers)
