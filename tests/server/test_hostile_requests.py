"""Hostile speech requests against both backends: each bad request is answered alone (never a 5xx), no slot is
left taken, and a good request sent beside it gets exactly the audio it gets alone."""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest
import torch
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from engine import Engine
from server.scheduler import backend_factory
from server.settings import ServerSettings
from tests.server.helpers import engine_pcm, sse_audio, sse_events, wait_for_state

GOOD = {"model": "orator", "voice": "vivian", "input": "A good neighbour.", "response_format": "pcm",
        "max_frames": 2, "seed": 11}
BASE = {"model": "orator", "voice": "vivian", "input": "Hello there.", "response_format": "pcm", "max_frames": 2,
        "seed": 3}
# a bad request may ask for long audio: the servers stop it at 2 s (25 frames) to keep the tests quick
LIMITS = ServerSettings(max_audio_s=2.0)


@pytest.fixture(scope="module")
def engine64(tiny_model_dir):
    return Engine.from_pretrained(tiny_model_dir("custom_voice"), dtype=torch.float64)


@pytest.fixture(scope="module", params=["single", "batched"])
def server(request, start_server, engine64):
    backend = backend_factory(4 if request.param == "batched" else 1)
    return start_server(engine64, settings=LIMITS, make_backend=backend)


@pytest.fixture(scope="module")
def solo(engine64):
    return engine_pcm(engine64, GOOD["input"], "vivian", GOOD["seed"], GOOD["max_frames"])


def _post(url: str, content: bytes) -> tuple[int, bytes | str]:
    """Send a raw JSON body; (status, body), or (-1, why) when the response was cut after it started."""
    try:
        with httpx.stream("POST", f"{url}/v1/audio/speech", content=content, timeout=60,
                          headers={"content-type": "application/json"}) as r:
            return r.status_code, r.read()
    except httpx.RemoteProtocolError as e:  # a started stream stopped by a limit: cut, as designed
        return -1, str(e)


def _idle(url: str) -> dict:
    return httpx.get(f"{url}/health", timeout=10).json()["queue"]


def _check_beside_a_good_request(url: str, bad: bytes, solo: bytes) -> tuple[int, bytes | str]:
    with ThreadPoolExecutor(2) as pool:
        bad_answer = pool.submit(_post, url, bad)
        good_answer = pool.submit(_post, url, json.dumps(GOOD).encode())
        status, body = bad_answer.result()
        good_status, good_body = good_answer.result()
    assert status < 500, f"a bad request got {status}: {body[:300]!r}"
    assert good_status == 200 and good_body == solo, "the good neighbour's audio changed"
    queue = _idle(url)
    assert queue["running"] == 0 and queue["waiting"] == 0, f"a slot is still taken: {queue}"
    return status, body


NUMBERS = ["temperature", "top_k", "top_p", "repetition_penalty", "seed", "speed", "chunk_frames",
           "first_chunk_frames", "max_frames", "min_frames", "greedy"]
STRINGS = ["model", "input", "voice", "instructions", "response_format", "stream_format", "language"]
HOSTILE_NUMBERS = [0, -1, 2**31, 2**63, 2**64 + 1, 2**70, 1e308, 1e-300, float("inf"), float("-inf"), float("nan"),
                   -0.0, True, False, None, "1", [], {}]
HOSTILE_STRINGS = ["", " ", "\ud800", "x\udfff\ud800", "\x00", "\u202e", "\u2028", "\x7f", "nan", None, 7, [],
                   {"id": "\ud800"}, {"id": 5}, "a" * 5000]


def _hostile(field: str):
    """Hostile values for ``field``: non-finite, huge and mistyped numbers; strings with lone surrogates and control
    characters; wrong types."""
    if field in NUMBERS:
        return st.one_of(st.sampled_from(HOSTILE_NUMBERS), st.floats(allow_nan=True, allow_infinity=True),
                         st.integers(-(2**80), 2**80))
    return st.one_of(st.sampled_from(HOSTILE_STRINGS), st.text(st.characters(exclude_categories=()), max_size=40))


FIELD_VALUES = st.sampled_from(NUMBERS + STRINGS).flatmap(lambda field: st.tuples(st.just(field), _hostile(field)))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(FIELD_VALUES, min_size=1, max_size=3))
@example([("temperature", float("inf"))])  # the values that poisoned a batch, always tried
@example([("top_k", 2**70)])
@example([("input", "\ud800")])
@example([("instructions", "\ud800"), ("seed", 2**63)])
def test_a_hostile_request_fails_alone_and_leaves_no_slot_taken(server, solo, overrides):
    body = json.dumps({**BASE, **dict(overrides)}).encode()  # NaN and Infinity as Python's json (and FastAPI) read them
    _check_beside_a_good_request(server.url, body, solo)


@pytest.mark.parametrize("raw, field", [
    (b'"temperature": 1e999', "temperature"),
    (b'"temperature": NaN', "temperature"),
    (b'"top_k": 1180591620717411303424', "top_k"),
    (b'"seed": 9223372036854775808', "seed"),
    (b'"repetition_penalty": -Infinity', "repetition_penalty"),
    (b'"speed": 1e999', "speed"),
    (b'"min_frames": 100000', "min_frames"),
])
def test_numbers_that_parse_but_cannot_be_used_are_a_400_naming_the_field(server, solo, raw, field):
    body = json.dumps(BASE).encode()[:-1] + b", " + raw + b"}"
    status, answer = _check_beside_a_good_request(server.url, body, solo)
    assert status == 400 and json.loads(answer)["error"]["param"] == field


def test_text_the_tokenizer_cannot_encode_is_a_400_and_never_takes_a_slot_for_good(server, solo):
    """The lone surrogate of JSON's "\\ud800", in more requests than the server has slots: each is refused, and
    the server serves the next request."""
    for field in ("input", "instructions"):
        body = json.dumps({**BASE, field: "Broken \ud800 text."}).encode()
        for _ in range(5):
            status, answer = _check_beside_a_good_request(server.url, body, solo)
            assert status == 400 and json.loads(answer)["error"]["param"] == field


@pytest.mark.parametrize("batch", [1, 4])
def test_a_prompt_that_cannot_fit_is_a_400_before_anything_is_allocated(start_server, tiny_engine, batch):
    """A voice description long enough to need gigabytes of attention on the eager path (a quadratic prefill),
    in a request or in a new library voice, is refused as too long; the server goes on serving."""
    settings = ServerSettings(max_instructions_chars=200_000, max_upload_bytes=1 << 20)
    live = start_server(tiny_engine("voice_design"), settings=settings, make_backend=backend_factory(batch))
    description = "calm and slow " * 5000
    body = {**BASE, "voice": "narrator", "instructions": description}
    r = httpx.post(f"{live.url}/v1/audio/speech", json=body, timeout=60)
    assert r.status_code == 400 and "too long" in r.json()["error"]["message"]
    assert "instructions" in r.json()["error"]["message"]
    r = httpx.post(f"{live.url}/v1/audio/voices", json={"name": "Endless", "description": description}, timeout=60)
    assert r.status_code == 400 and "too long" in r.json()["error"]["message"]
    assert "Endless" not in httpx.get(f"{live.url}/v1/audio/voices").text
    r = httpx.post(f"{live.url}/v1/audio/speech", json={**body, "instructions": "calm and slow"}, timeout=60)
    assert r.status_code == 200 and len(r.content) == 2 * 2 * 1920
    assert _idle(live.url)["running"] == 0


def test_a_request_past_its_audio_limit_is_stopped_visibly_and_frees_its_slot(server, solo):
    long = {**BASE, "min_frames": 400, "max_frames": 400, "chunk_frames": 4}
    status, _ = _check_beside_a_good_request(server.url, json.dumps(long).encode(), solo)
    assert status == -1  # the audio stream is cut, not ended as if complete
    r = httpx.post(f"{server.url}/v1/audio/speech", json={**long, "stream_format": "sse"}, timeout=60)
    events = sse_events(r.text)
    assert events[-1]["type"] == "error" and events[-1]["error"]["code"] == "audio_too_long"
    seconds = len(sse_audio(events)) / 2 / 24000
    assert LIMITS.max_audio_s - 0.5 < seconds <= LIMITS.max_audio_s + 4 / 12.5  # stopped within a chunk
    assert _idle(server.url)["running"] == 0


def test_a_client_that_reads_nothing_is_disconnected_and_its_slot_freed(start_server, engine64):
    """A client that sends its request and then never reads (its socket's buffers fill) is disconnected after the
    send timeout, and its stream is cancelled: it holds neither a slot nor its audio."""
    import socket

    live = start_server(engine64, settings=ServerSettings(send_timeout_s=1.0), make_backend=backend_factory(4))
    body = json.dumps({**BASE, "min_frames": 3000, "max_frames": 3000, "chunk_frames": 8}).encode()
    port = int(live.url.rsplit(":", 1)[1])
    with socket.socket() as client:
        client.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        client.connect(("127.0.0.1", port))
        client.sendall(b"POST /v1/audio/speech HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                       b"Content-Length: %d\r\n\r\n%s" % (len(body), body))
        head = b""
        while b"\r\n\r\n" not in head:
            head += client.recv(1)
        request_id = next(line.split(b":", 1)[1].strip().decode() for line in head.split(b"\r\n")
                          if line.lower().startswith(b"x-request-id"))
        status = wait_for_state(live.url, request_id, {"cancelled", "done", "failed"}, timeout=60)
    assert status["state"] == "cancelled" and status["frames"] < 3000
    assert _idle(live.url)["running"] == 0


def test_a_chunked_body_past_the_upload_limit_is_refused_without_reading_it_all(start_server, engine64):
    """A body sent without a Content-Length (chunked) is counted as it is read: past the limit, 413 (not the
    multipart's upload spooled in full first), and nothing stored; JSON and multipart alike."""
    live = start_server(engine64, settings=ServerSettings(max_upload_bytes=4096))

    def chunks(head: bytes, tail: bytes, blocks: int = 2000):
        yield head
        for _ in range(blocks):  # 2 MB in all
            yield b" " * 1024
        yield tail

    r = httpx.post(f"{live.url}/v1/audio/voices", content=chunks(b'{"name": "Big", "description": "', b'"}'),
                   headers={"content-type": "application/json"}, timeout=30)
    assert r.status_code == 413 and r.json()["error"]["code"] == "request_too_large"
    boundary = b"orator-test-boundary"
    head = (b"--" + boundary + b'\r\nContent-Disposition: form-data; name="name"\r\n\r\nBig\r\n--' + boundary
            + b'\r\nContent-Disposition: form-data; name="audio_sample"; filename="big.wav"\r\n'
              b"Content-Type: audio/wav\r\n\r\n")
    r = httpx.post(f"{live.url}/v1/audio/voices", content=chunks(head, b"\r\n--" + boundary + b"--\r\n"),
                   headers={"content-type": f"multipart/form-data; boundary={boundary.decode()}"}, timeout=30)
    assert r.status_code == 413 and r.json()["error"]["code"] == "request_too_large"
    assert "Big" not in httpx.get(f"{live.url}/v1/audio/voices").text
