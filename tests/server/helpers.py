"""Shared by the server tests: decoding responses and what the engine alone gives for a request."""

from __future__ import annotations

import base64
import dataclasses
import io
import json
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import soundfile as sf

from engine import Voice
from server.formats import to_pcm16

RATE = 24000
SAMPLES_PER_FRAME = 1920


def decode(response_format: str, data: bytes) -> tuple[np.ndarray, int]:
    if response_format == "pcm":
        return np.frombuffer(data, dtype="<i2").astype(np.float32) / 32767, RATE
    if response_format == "aac":  # libsndfile reads no AAC
        import av

        with av.open(io.BytesIO(data)) as container:
            frames = [frame.to_ndarray()[0] for frame in container.decode(audio=0)]
            return np.concatenate(frames), container.streams.audio[0].sample_rate
    return sf.read(io.BytesIO(data), dtype="float32")


def sse_events(text: str) -> list[dict]:
    return [json.loads(line[5:]) for line in text.splitlines() if line.startswith("data:")]


def sse_audio(events: list[dict]) -> bytes:
    return b"".join(base64.b64decode(e["audio"]) for e in events if e["type"] == "speech.audio.delta")


def engine_pcm(engine, text: str, speaker: str, seed: int, max_frames: int, chunk_frames: int = 4) -> bytes:
    """The pcm bytes the engine gives alone for a speech request with these fields, streamed in the server's chunks
    (a 1-frame chunk, then ``chunk_frames`` ones, the request's ``chunk_frames``: a bfloat16 decoder rounds by
    chunk)."""
    sampling = dataclasses.replace(engine.defaults, seed=seed)
    chunks = engine.stream(text, Voice.preset(speaker), chunk_frames=chunk_frames, first_chunk_frames=1,
                           sampling=sampling, max_frames=max_frames, largest_chunk_frames=chunk_frames)
    return to_pcm16(np.concatenate([c.samples for c in chunks]))


def pcm_close(a: bytes, b: bytes) -> bool:
    """Equal 16-bit pcm, allowing one step of rounding."""
    x, y = np.frombuffer(a, "<i2").astype(np.int32), np.frombuffer(b, "<i2").astype(np.int32)
    return x.shape == y.shape and int(np.abs(x - y).max(initial=0)) <= 1


def speak_concurrently(url: str, texts: list[str], seeds: list[int], max_frames: int) -> list[bytes]:
    """One official ``openai`` client per text, all at once (voice vivian, pcm): the answers, in order."""
    from openai import OpenAI

    def speak(text: str, seed: int) -> bytes:
        client = OpenAI(base_url=f"{url}/v1", api_key="unused", max_retries=0, timeout=300)
        return client.audio.speech.create(model="orator", voice="vivian", input=text, response_format="pcm",
                                          extra_body={"seed": seed, "max_frames": max_frames}).content

    with ThreadPoolExecutor(len(texts)) as pool:
        return list(pool.map(speak, texts, seeds))


def wait_for_state(url: str, request_id: str, states: set[str], timeout: float = 30) -> dict:
    """The status of request ``request_id`` once its state is one of ``states``."""
    import time

    import httpx

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        status = httpx.get(f"{url}/v1/audio/speech/{request_id}").json()
        if status["state"] in states:
            return status
        time.sleep(0.05)
    raise AssertionError(f"request {request_id} never reached {states}: {status}")


def wait_for_queue(url: str, running: int, waiting: int, timeout: float = 30) -> None:
    """Return once the server's /health shows ``running`` and ``waiting`` requests; fail after ``timeout``."""
    import time

    import httpx

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        queue = httpx.get(f"{url}/health").json()["queue"]
        if (queue["running"], queue["waiting"]) == (running, waiting):
            return
        time.sleep(0.05)
    raise AssertionError(f"queue never reached running={running} waiting={waiting}: {queue}")


def assert_a_disconnect_cancels_the_stream_and_frees_its_slot(url: str) -> None:
    """A client that leaves after the first chunk of a long request: the request is cancelled early, and the next
    request is served."""
    import httpx

    speech = f"{url}/v1/audio/speech"
    body = {"model": "orator", "voice": "vivian", "input": "A long story that nobody hears to the end.",
            "response_format": "pcm", "max_frames": 2000, "chunk_frames": 1, "seed": 5}
    with httpx.stream("POST", speech, json=body, timeout=60) as r:
        request_id = r.headers["x-request-id"]
        next(r.iter_raw())
    status = wait_for_state(url, request_id, {"cancelled", "done"})
    assert status["state"] == "cancelled" and status["frames"] < 2000
    quick = httpx.post(speech, json={**body, "max_frames": 1}, timeout=60)
    assert quick.status_code == 200 and len(quick.content) == 2 * SAMPLES_PER_FRAME


def drain_socket(ws, timeout: float = 60) -> tuple[bytes, list[dict], int | None]:
    """Everything a WebSocket sends until the server closes: (audio bytes, JSON events, close code)."""
    from websockets.exceptions import ConnectionClosed

    audio, events = bytearray(), []
    try:
        while True:
            message = ws.recv(timeout=timeout)
            if isinstance(message, bytes):
                audio += message
            else:
                events.append(json.loads(message))
    except ConnectionClosed:
        pass
    return bytes(audio), events, ws.protocol.close_rcvd.code if ws.protocol.close_rcvd else None
