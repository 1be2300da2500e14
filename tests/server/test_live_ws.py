"""``/v1/audio/speech/stream``: live text in over a WebSocket, audio out as it is made, on both backends; the
protocol's errors, limits, API key and Origin checks."""

from __future__ import annotations

import json
from dataclasses import replace

import httpx
import numpy as np
import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from websockets.exceptions import ConnectionClosed, InvalidStatus
from websockets.sync.client import connect

from engine import Engine, Sampling, Voice
from server.formats import to_pcm16
from server.scheduler import backend_factory
from server.settings import ServerSettings
from tests.server.helpers import SAMPLES_PER_FRAME, decode, drain_socket, wait_for_queue

FRAMES = 3
TEXT = "Hello there, my friend. How are you today?"
CONFIG = {"type": "session.config", "voice": "vivian", "response_format": "pcm", "max_frames": FRAMES, "seed": 5}


def _url(server) -> str:
    return server.url.replace("http://", "ws://") + "/v1/audio/speech/stream"


def _send(ws, message) -> None:
    ws.send(message if isinstance(message, (str, bytes)) else json.dumps(message))


def _speak(url: str, text: str, config=CONFIG, **connect_kwargs) -> tuple[bytes, list[dict], int]:
    with connect(url, **connect_kwargs) as ws:
        _send(ws, config)
        for i, word in enumerate(text.split(" ")):
            _send(ws, {"type": "input.text.delta", "delta": word if i == 0 else " " + word})
        _send(ws, {"type": "input.done"})
        return drain_socket(ws)


@pytest.fixture(scope="module")
def single(start_server, tiny_engine):
    return start_server(tiny_engine("custom_voice"), settings=ServerSettings(max_input_chars=200, max_live_chars=400))


@pytest.fixture(scope="module")
def batched(start_server, tiny_model_dir):
    engine = Engine.from_pretrained(tiny_model_dir("custom_voice"), dtype=torch.float64)
    return start_server(engine, make_backend=backend_factory(2))


@pytest.fixture(params=["single", "batched"])
def server(request):
    return request.getfixturevalue(request.param)


def test_audio_comes_while_the_text_is_still_arriving(server):
    with connect(_url(server)) as ws:
        _send(ws, CONFIG)
        _send(ws, {"type": "input.text.delta", "delta": "Hello there, my"})
        _send(ws, {"type": "input.text.delta", "delta": " friend. And"})
        # the batched loop speaks whole segments: its first is final once the next word shows the sentence ended
        _send(ws, {"type": "input.text.delta", "delta": " then some more words"})
        first = [ws.recv(timeout=60) for _ in range(2)]  # segment.started, then its audio, the text still open
        assert json.loads(first[0]) == {"type": "segment.started", "segment": 0, "start": 0}
        assert isinstance(first[1], bytes) and first[1]
        _send(ws, {"type": "input.text.delta", "delta": " to say."})
        _send(ws, {"type": "input.done"})
        audio, events, code = drain_socket(ws)
    assert code == 1000
    assert [e["type"] for e in events] == ["segment.started", "speech.done"]
    assert events[0] == {"type": "segment.started", "segment": 1, "start": len("Hello there, my friend. ")}
    done = events[-1]
    assert done["usage"]["output_tokens"] == 2 * FRAMES
    assert len(first[1]) + len(audio) == 2 * 2 * FRAMES * SAMPLES_PER_FRAME


def test_all_the_text_at_once_is_the_audio_of_engine_stream(single):
    with connect(_url(single)) as ws:
        _send(ws, CONFIG)
        _send(ws, {"type": "input.text.delta", "delta": TEXT})
        _send(ws, {"type": "input.done"})
        audio, events, code = drain_socket(ws)
    engine = single.engine
    chunks = engine.stream(TEXT, Voice.preset("vivian"), sampling=Sampling(seed=5), max_frames=FRAMES,
                           segment_chars=0, non_streaming=False)  # live text: one sentence a segment
    assert audio == to_pcm16(np.concatenate([c.samples for c in chunks]))
    assert code == 1000 and events[-1]["type"] == "speech.done"
    assert events[-1]["usage"]["input_tokens"] == len(engine.tokenizer.encode(TEXT))


def test_other_formats_stream_too(server):
    audio, events, code = _speak(_url(server), TEXT, {**CONFIG, "response_format": "wav"})
    samples, rate = decode("wav", audio)
    assert code == 1000 and rate == 24000 and len(samples) == 2 * FRAMES * SAMPLES_PER_FRAME


def test_a_client_that_goes_away_frees_its_slot(server):
    """The slot is freed by the client going away: the text timeout is an hour here, so no timeout can have
    freed it while the test waits."""
    settings = server.app.state.settings
    server.app.state.settings = replace(settings, live_text_timeout_s=3600)  # read by each new session
    try:
        with connect(_url(server)) as ws:
            _send(ws, {**CONFIG, "max_frames": 400})
            _send(ws, {"type": "input.text.delta", "delta": "A long sentence that is never finished and"})
            _send(ws, {"type": "input.text.delta", "delta": " more. And more"})
            while not isinstance(ws.recv(timeout=60), bytes):
                pass
        wait_for_queue(server.url, running=0, waiting=0, timeout=120)
    finally:
        server.app.state.settings = settings
    audio, events, code = _speak(_url(server), TEXT)  # served, not waiting behind the one gone
    assert code == 1000 and len(audio) == 2 * 2 * FRAMES * SAMPLES_PER_FRAME
    wait_for_queue(server.url, running=0, waiting=0, timeout=120)


DELTA = {"type": "input.text.delta", "delta": "Hi"}


@pytest.mark.parametrize(("messages", "code"), [
    (["not json"], "invalid_json"),
    (["[" * 100_000 + "]" * 100_000], "invalid_json"),
    ([b"\x00binary"], "invalid_message"),
    (["[1, 2]"], "invalid_message"),
    ([{"delta": "no type"}], "invalid_message"),
    ([DELTA], "config_required"),
    ([{**CONFIG, "temperature": 0}], "invalid_value"),
    ([{**CONFIG, "temperature": "hot"}], "invalid_value"),
    ([{**CONFIG, "input": "the text goes in deltas"}], "invalid_value"),
    ([{**CONFIG, "response_format": "ogg-vorbis"}], "invalid_value"),
    ([{**CONFIG, "pronunciation": True}], "unsupported_value"),  # rules do not apply to live text yet
    ([{**CONFIG, "voice": "nobody"}], "voice_not_found"),
    ([{**CONFIG, "instructions": "calm " * 1000}], "input_too_long"),
    ([{**CONFIG, "voice": "vivian", "instructions": "whisper"}], "unsupported"),
    ([CONFIG, DELTA, CONFIG], "unexpected_message"),
    ([CONFIG, {"type": "input.text.delta", "delta": 5}], "invalid_message"),
    ([CONFIG, {"type": "input.text.delta", "delta": "x" * 201}], "input_too_long"),
    ([CONFIG, {"type": "input.text.delta", "delta": "\ud800"}], "invalid_input"),
    ([CONFIG, {"type": "response.create"}], "invalid_message"),
    ([CONFIG, *[{"type": "input.text.delta", "delta": "x" * 100}] * 5], "input_too_long"),
    ([CONFIG, *[{"type": "input.text.delta", "delta": ""}] * 401], "input_too_long"),
    ([CONFIG, DELTA, {"type": "input.done"}, DELTA], "unexpected_message"),
])
def test_a_bad_message_gets_an_error_event_and_a_clean_close(single, messages, code):
    with connect(_url(single)) as ws:
        for message in messages:
            _send(ws, message)
        _, events, close = drain_socket(ws)
    errors = [e for e in events if e["type"] == "error"]
    assert len(errors) == 1 and errors[0]["error"]["code"] == code, events
    assert set(errors[0]["error"]) >= {"message", "type", "code"} and errors[0]["error"]["message"]
    assert close == 1008


def _error_code(events):
    return next((e["error"]["code"] for e in events if e["type"] == "error"), None)


def test_a_session_that_sends_nothing_is_ended(start_server, tiny_engine):
    impatient = start_server(tiny_engine("custom_voice"), settings=ServerSettings(live_text_timeout_s=0.5))
    with connect(_url(impatient)) as ws:
        _send(ws, CONFIG)
        _send(ws, DELTA)
        _, events, close = drain_socket(ws)
    assert _error_code(events) == "text_timeout" and close == 1008


def test_an_enormous_message_closes_the_socket_and_the_server_goes_on(single):
    try:
        with connect(_url(single), max_size=None) as ws:
            _send(ws, CONFIG)
            ws.send(json.dumps({"type": "input.text.delta", "delta": "x" * (2 << 20)}))
            _, _, close = drain_socket(ws)
    except (ConnectionClosed, OSError):  # closed while the message was still being written: reset under it
        close = 1009
    assert close == 1009  # message too big, refused by the protocol before it is buffered whole
    assert _speak(_url(single), TEXT)[2] == 1000


_MESSAGES = st.one_of(
    st.just(CONFIG), st.just({"type": "input.done"}),
    st.builds(lambda d: {"type": "input.text.delta", "delta": d}, st.text(max_size=30)),
    st.builds(lambda t: {"type": t}, st.text(max_size=10)), st.text(max_size=20), st.binary(max_size=10))


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(_MESSAGES, min_size=1, max_size=6))
def test_any_message_sequence_ends_done_or_with_one_error(single, messages):
    with connect(_url(single)) as ws:
        try:
            for message in [*messages, {"type": "input.done"}]:  # a sequence that never ends its text is ended here
                _send(ws, message)
        except ConnectionClosed:  # the server ended it on an error already
            pass
        _, events, close = drain_socket(ws)
    errors = [e for e in events if e["type"] == "error"]
    if close == 1000:
        assert not errors and events[-1]["type"] == "speech.done"
    else:
        assert len(errors) == 1 and close in (1008, 1011), (events, close)
    assert httpx.get(f"{single.url}/health").json()["status"] == "ok"


# ---- the API key and the Origin check --------------------------------------------------------------
@pytest.fixture(scope="module")
def keyed(start_server, tiny_engine):
    return start_server(tiny_engine("custom_voice"), settings=ServerSettings(api_key="s3cret"))


@pytest.mark.parametrize("kwargs", [{}, {"additional_headers": {"Authorization": "Bearer wrong"}},
                                    {"subprotocols": ["orator.v1", "bearer.wrong"]}])
def test_the_api_key_is_required(keyed, kwargs):
    with pytest.raises(InvalidStatus) as refused:
        connect(_url(keyed), **kwargs)
    assert refused.value.response.status_code == 401
    assert json.loads(refused.value.response.body)["error"]["code"] == "invalid_api_key"


@pytest.mark.parametrize("kwargs", [{"additional_headers": {"Authorization": "Bearer s3cret"}},
                                    {"subprotocols": ["orator.v1", "bearer.s3cret"],
                                     "origin": "https://some.other.site"}])
def test_the_key_in_a_header_or_a_subprotocol_opens_a_session(keyed, kwargs):
    audio, events, code = _speak(_url(keyed), TEXT, **kwargs)
    assert code == 1000 and audio


def test_a_keyless_session_from_another_origin_is_refused(single):
    with pytest.raises(InvalidStatus) as refused:
        connect(_url(single), origin="http://evil.example")
    assert refused.value.response.status_code == 403
    with connect(_url(single), origin=single.url) as ws:  # the server's own page
        _send(ws, {"type": "input.done"})
        _, events, _ = drain_socket(ws)
    assert _error_code(events) == "config_required"


def test_sessions_beyond_the_slot_wait_in_line_and_beyond_the_line_are_refused(start_server, tiny_engine):
    server = start_server(tiny_engine("custom_voice"), settings=ServerSettings(max_queue=1))
    with connect(_url(server)) as first, connect(_url(server)) as second:
        _send(first, CONFIG)
        _send(first, {"type": "input.text.delta", "delta": "Holding the only slot"})
        while not isinstance(first.recv(timeout=60), bytes):
            pass
        _send(second, CONFIG)
        assert json.loads(second.recv(timeout=30)) == {"type": "speech.queue", "position": 1}
        with connect(_url(server)) as third:
            _send(third, CONFIG)
            _, events, close = drain_socket(third)
        assert _error_code(events) == "queue_full" and close == 1013
        _send(first, {"type": "input.done"})
        assert drain_socket(first)[2] == 1000
        _send(second, {"type": "input.text.delta", "delta": TEXT})
        _send(second, {"type": "input.done"})
        audio, events, close = drain_socket(second)  # its text was taken while it waited; now it is spoken
    assert close == 1000 and len(audio) == 2 * 2 * FRAMES * SAMPLES_PER_FRAME


def test_a_handshake_for_another_host_is_refused(single):
    import base64
    import os
    import socket

    port = int(single.url.rsplit(":", 1)[1])
    key = base64.b64encode(os.urandom(16)).decode()
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        s.sendall((f"GET /v1/audio/speech/stream HTTP/1.1\r\nHost: rebind.example:{port}\r\nUpgrade: websocket\r\n"
                   f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n\r\n").encode())
        answer = s.recv(65536).decode("latin-1")
    assert answer.startswith("HTTP/1.1 421") and "invalid_host" in answer
