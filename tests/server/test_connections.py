"""Connection limits on live servers over real sockets, on both of uvicorn's parsers: a connection that sends
no request head, or trickles one, is closed after the header timeout; connections beyond the cap are closed at
once; uvicorn's ``limit_concurrency`` answers 503; a speech stream longer than the header timeout is not cut."""

from __future__ import annotations

import socket
import threading
import time

import httpx
import pytest

from server.settings import ServerSettings

HEADER_TIMEOUT = 0.6
SLACK = 2.0  # the shared 2-core machine may be slow to schedule the server's loop


@pytest.fixture(scope="module", params=["httptools", "h11"])
def timed_server(request, start_server, tiny_engine):
    settings = ServerSettings(header_timeout_s=HEADER_TIMEOUT, keep_alive_s=30)
    return start_server(tiny_engine("custom_voice"), settings=settings, http=request.param)


@pytest.fixture(scope="module", params=["httptools", "h11"])
def capped_server(request, start_server, tiny_engine):
    settings = ServerSettings(header_timeout_s=3.0, max_connections=8, limit_concurrency=8)
    return start_server(tiny_engine("custom_voice"), settings=settings, http=request.param)


@pytest.fixture(scope="module")
def limited_server(start_server, tiny_engine):
    settings = ServerSettings(max_connections=8, limit_concurrency=4)
    return start_server(tiny_engine("custom_voice"), settings=settings)


def _connect(url: str) -> socket.socket:
    host, port = url.removeprefix("http://").split(":")
    sock = socket.create_connection((host, int(port)), timeout=10)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return sock


def _closed_within(sock: socket.socket, seconds: float) -> float | None:
    """Seconds until the server closed ``sock`` (reading only its end), or None if it stayed open that long."""
    started = time.monotonic()
    sock.settimeout(seconds)
    try:
        while sock.recv(4096):
            pass
    except TimeoutError:
        return None
    except ConnectionResetError:
        pass
    return time.monotonic() - started


def _closed(sock: socket.socket) -> bool:
    return _closed_within(sock, 0.05) is not None


def _read_response(sock: socket.socket) -> bytes:
    """One response with a Content-Length body, read off ``sock``."""
    data = b""
    while b"\r\n\r\n" not in data:
        data += sock.recv(4096)
    head, _, body = data.partition(b"\r\n\r\n")
    lines = head.lower().split(b"\r\n")
    length = int(next(line.split(b":")[1] for line in lines if line.startswith(b"content-length")))
    while len(body) < length:
        body += sock.recv(4096)
    return head


def test_a_connection_that_sends_nothing_is_closed_after_the_header_timeout(timed_server):
    with _connect(timed_server.url) as sock:
        elapsed = _closed_within(sock, HEADER_TIMEOUT + SLACK)
    assert elapsed is not None and elapsed >= HEADER_TIMEOUT - 0.1


@pytest.mark.parametrize("after_a_response", [False, True])
def test_a_slowloris_trickling_its_head_is_closed(timed_server, after_a_response):
    """A byte every 0.1 s keeps no deadline alive, neither on a fresh connection nor after a response (where
    uvicorn's keep-alive timer stops at the first byte)."""
    with _connect(timed_server.url) as sock:
        if after_a_response:
            sock.sendall(b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
            assert _read_response(sock).startswith(b"HTTP/1.1 200")
        started = time.monotonic()
        head = b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: " + b"a" * 1000
        cut = False
        for byte in head:
            try:
                sock.sendall(bytes([byte]))
            except (BrokenPipeError, ConnectionResetError):
                cut = True
                break
            if _closed_within(sock, 0.1) is not None:
                cut = True
                break
            if time.monotonic() - started > HEADER_TIMEOUT + SLACK:
                break
        elapsed = time.monotonic() - started
    assert cut and HEADER_TIMEOUT - 0.1 <= elapsed <= HEADER_TIMEOUT + SLACK


def test_a_head_in_pieces_within_the_timeout_is_served_then_the_idle_connection_is_closed(timed_server):
    """A head completed within the timeout is answered; the kept connection then has the timeout again (not
    uvicorn's 30 s keep-alive here) to send its next head."""
    with _connect(timed_server.url) as sock:
        for piece in (b"GET /health HTTP/1.1\r\n", b"Host: 127.0.0.1\r\n"):
            sock.sendall(piece)
            time.sleep(HEADER_TIMEOUT / 3)
        sock.sendall(b"\r\n")
        assert _read_response(sock).startswith(b"HTTP/1.1 200")
        elapsed = _closed_within(sock, HEADER_TIMEOUT + SLACK)
    assert elapsed is not None and elapsed >= HEADER_TIMEOUT - 0.1


def test_a_speech_stream_longer_than_the_header_timeout_is_not_cut(timed_server):
    """While a stream runs for several header timeouts (100 frames: ~2.7 s on the 2-core CPU machine), an idle
    connection beside it is closed: the deadline runs, but not during a request."""
    body = {"model": "orator", "voice": "vivian", "input": "A long one.", "response_format": "pcm",
            "chunk_frames": 1, "min_frames": 100, "max_frames": 100, "seed": 1}
    idle = _connect(timed_server.url)
    idle_closed_after = []
    watcher = threading.Thread(target=lambda: idle_closed_after.append(_closed_within(idle, 30)))
    watcher.start()
    received, started = 0, time.monotonic()
    with httpx.stream("POST", f"{timed_server.url}/v1/audio/speech", json=body, timeout=60) as r:
        assert r.status_code == 200
        for part in r.iter_raw():
            received += len(part)
    elapsed = time.monotonic() - started
    watcher.join()
    idle.close()
    assert elapsed > 2 * HEADER_TIMEOUT
    assert received == 100 * 1920 * 2  # every frame of 1920 16-bit samples came
    assert idle_closed_after[0] is not None and idle_closed_after[0] < elapsed


def test_connections_beyond_the_cap_are_closed_at_once_and_health_answers_again(capped_server):
    held = [_connect(capped_server.url) for _ in range(8)]
    time.sleep(0.3)  # every one accepted
    try:
        with _connect(capped_server.url) as extra:
            elapsed = _closed_within(extra, 1.5)
        assert elapsed is not None and elapsed < 1.0  # not the 3 s header timeout
        assert not any(_closed(sock) for sock in held)
        held.pop().close()
        time.sleep(0.3)
        assert httpx.get(f"{capped_server.url}/health", timeout=5).status_code == 200
        started = time.monotonic()
        assert all(_closed_within(sock, 3.0 + SLACK) is not None for sock in held)  # the header timeout frees them
        assert time.monotonic() - started < 3.0 + SLACK
        assert httpx.get(f"{capped_server.url}/health", timeout=5).status_code == 200
    finally:
        for sock in held:
            sock.close()


def test_beyond_limit_concurrency_a_request_answers_503(limited_server):
    """limit_concurrency 4: a request on a fourth open connection is served, one on a fifth answers 503."""
    held = [_connect(limited_server.url) for _ in range(4)]
    time.sleep(0.3)
    try:
        assert httpx.get(f"{limited_server.url}/health", timeout=5).status_code == 503
        held.pop().close()
        time.sleep(0.3)
        assert httpx.get(f"{limited_server.url}/health", timeout=5).status_code == 200
    finally:
        for sock in held:
            sock.close()


def test_the_open_file_limit_is_raised_to_hold_the_connections_or_the_cap_lowered(monkeypatch):
    """A low soft limit is raised to what the cap needs; a hard limit below that lowers the cap, so that the
    server never runs out of descriptors (where it stops accepting anyone, /health included)."""
    import resource

    from server.connections import OPEN_FILES_RESERVE, fit_open_file_limit

    limits = {"soft": 256, "hard": 4096}
    monkeypatch.setattr(resource, "getrlimit", lambda _: (limits["soft"], limits["hard"]))

    def setrlimit(_, values):
        if values[0] > limits["hard"]:
            raise ValueError("not allowed")
        limits["soft"] = values[0]

    monkeypatch.setattr(resource, "setrlimit", setrlimit)
    assert fit_open_file_limit(512) == 512 and limits["soft"] == 512 + OPEN_FILES_RESERVE
    limits.update(soft=256, hard=300)
    assert fit_open_file_limit(512) == 300 - OPEN_FILES_RESERVE and limits["soft"] == 300


def test_a_live_session_open_past_the_header_timeout_still_speaks(timed_server):
    """The request-head deadline ends with the WebSocket handshake: a live-text session kept open for several header
    timeouts, its text sent only then, is spoken and closed normally (1000)."""
    import json

    from websockets.sync.client import connect

    from tests.server.helpers import SAMPLES_PER_FRAME, drain_socket

    url = timed_server.url.replace("http://", "ws://") + "/v1/audio/speech/stream"
    with connect(url) as ws:
        ws.send(json.dumps({"type": "session.config", "voice": "vivian", "response_format": "pcm", "max_frames": 2}))
        time.sleep(3 * HEADER_TIMEOUT + SLACK)
        ws.send(json.dumps({"type": "input.text.delta", "delta": "Still here."}))
        ws.send(json.dumps({"type": "input.done"}))
        audio, events, code = drain_socket(ws)
    assert code == 1000 and events[-1]["type"] == "speech.done"
    assert len(audio) == 2 * 2 * SAMPLES_PER_FRAME
