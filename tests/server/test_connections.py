"""Connection limits on live servers over real sockets, on both of uvicorn's parsers: a connection that sends
no request head, or trickles one, is closed after the header timeout; connections beyond the cap are closed at
once; uvicorn's ``limit_concurrency`` answers 503; a speech stream longer than the header timeout is not cut.
Each close is told apart by which of the server's limits made it (``Closes``), never by how long it took: the
waits are generous, and the only bounds on time are lower ones (a deadline must not fire early)."""

from __future__ import annotations

import socket
import time

import httpx
import pytest

from server.connections import ConnectionLimits
from server.settings import ServerSettings

HEADER_TIMEOUT = 0.6
PATIENCE = 60.0  # the longest a test waits for an event the server must cause (a busy machine may be slow)


@pytest.fixture(scope="module", params=["httptools", "h11"])
def timed_server(request, start_server, tiny_engine):
    settings = ServerSettings(header_timeout_s=HEADER_TIMEOUT, keep_alive_s=30)
    return start_server(tiny_engine("custom_voice"), settings=settings, http=request.param)


@pytest.fixture(scope="module", params=["httptools", "h11"])
def capped_server(request, start_server, tiny_engine):
    settings = ServerSettings(header_timeout_s=5.0, max_connections=8, limit_concurrency=8)
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


class Closes:
    """What the server did with each connection, in order, by client port: "open" when it was accepted,
    "refused" when the cap closed it at once, "response" when a response on it was complete, "timed out" when a
    head deadline closed it, "lost" once it was gone."""

    def __init__(self, monkeypatch):
        self.events: list[tuple[str, int]] = []
        made, timed_out = ConnectionLimits.connection_made, ConnectionLimits._head_timed_out
        completed, lost = ConnectionLimits.on_response_complete, ConnectionLimits.connection_lost

        def port(protocol) -> int:
            return protocol.transport.get_extra_info("peername")[1]

        def record_made(protocol, transport):
            made(protocol, transport)
            self.events.append(("refused" if transport.is_closing() else "open", port(protocol)))

        def record_timed_out(protocol):
            was_closing = protocol.transport.is_closing()
            timed_out(protocol)
            if not was_closing and protocol.transport.is_closing():
                self.events.append(("timed out", port(protocol)))

        def record_completed(protocol):
            self.events.append(("response", port(protocol)))
            completed(protocol)

        def record_lost(protocol, exc):
            lost(protocol, exc)
            self.events.append(("lost", port(protocol)))

        monkeypatch.setattr(ConnectionLimits, "connection_made", record_made)
        monkeypatch.setattr(ConnectionLimits, "connection_lost", record_lost)
        monkeypatch.setattr(ConnectionLimits, "_head_timed_out", record_timed_out)
        monkeypatch.setattr(ConnectionLimits, "on_response_complete", record_completed)

    def of(self, sock: socket.socket | int) -> list[str]:
        """What happened to ``sock``'s connection (or the one from that client port), in order."""
        mine = sock if isinstance(sock, int) else sock.getsockname()[1]
        return [what for what, port in self.events if port == mine]

    def wait_for(self, sock: socket.socket | int, what: str) -> None:
        """Return once ``what`` happened to ``sock``'s connection; fail after ``PATIENCE``."""
        deadline = time.monotonic() + PATIENCE
        while what not in self.of(sock):
            assert time.monotonic() < deadline, (what, self.of(sock))
            time.sleep(0.01)


@pytest.fixture
def closes(monkeypatch) -> Closes:
    return Closes(monkeypatch)


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


def test_a_connection_that_sends_nothing_is_closed_after_the_header_timeout(timed_server, closes):
    with _connect(timed_server.url) as sock:
        elapsed = _closed_within(sock, PATIENCE)
        assert elapsed is not None and elapsed >= HEADER_TIMEOUT - 0.1
        closes.wait_for(sock, "lost")
        assert closes.of(sock) == ["open", "timed out", "lost"]


@pytest.mark.parametrize("after_a_response", [False, True])
def test_a_slowloris_trickling_its_head_is_closed(timed_server, closes, after_a_response):
    """A byte every 0.1 s keeps no deadline alive, neither on a fresh connection nor after a response (where
    uvicorn's keep-alive timer stops at the first byte): its head deadline closes it."""
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
            if time.monotonic() - started > PATIENCE:
                break
        elapsed = time.monotonic() - started
        assert cut and elapsed >= HEADER_TIMEOUT - 0.1
        closes.wait_for(sock, "lost")
        assert closes.of(sock) == ["open"] + ["response"] * after_a_response + ["timed out", "lost"]


def test_a_head_in_pieces_within_the_timeout_is_served_then_the_idle_connection_is_closed(timed_server, closes):
    """A head completed within the timeout is answered; the kept connection then has the timeout again (not
    uvicorn's 30 s keep-alive here) to send its next head: its head deadline, not the keep-alive, closes it."""
    with _connect(timed_server.url) as sock:
        for piece in (b"GET /health HTTP/1.1\r\n", b"Host: 127.0.0.1\r\n"):
            sock.sendall(piece)
            time.sleep(HEADER_TIMEOUT / 10)
        sock.sendall(b"\r\n")
        assert _read_response(sock).startswith(b"HTTP/1.1 200")
        elapsed = _closed_within(sock, PATIENCE)
        assert elapsed is not None and elapsed >= HEADER_TIMEOUT - 0.1
        closes.wait_for(sock, "lost")
        assert closes.of(sock) == ["open", "response", "timed out", "lost"]


def test_a_speech_stream_longer_than_the_header_timeout_is_not_cut(timed_server, closes):
    """An idle connection opened once the stream's head was answered is closed by its head deadline while the
    stream still runs (its response completes after that close), and still every frame of the stream comes: no
    deadline runs during a request."""
    body = {"model": "orator", "voice": "vivian", "input": "A long one.", "response_format": "pcm",
            "chunk_frames": 1, "min_frames": 100, "max_frames": 100, "seed": 1}
    received = 0
    with httpx.stream("POST", f"{timed_server.url}/v1/audio/speech", json=body, timeout=PATIENCE) as r:
        assert r.status_code == 200
        with _connect(timed_server.url) as idle:
            assert _closed_within(idle, PATIENCE) is not None  # the body is read only after this close
            closes.wait_for(idle, "lost")
            idle_port = idle.getsockname()[1]
        for part in r.iter_raw():
            received += len(part)
    assert received == 100 * 1920 * 2  # every frame of 1920 16-bit samples came
    assert [what for what, port in closes.events if port == idle_port] == ["open", "timed out", "lost"]
    stream = [(what, port) for what, port in closes.events if port != idle_port]
    assert [what for what, _ in stream][:2] == ["open", "response"] and ("timed out", stream[0][1]) not in stream
    assert closes.events.index(("timed out", idle_port)) < closes.events.index(stream[1])


def test_connections_beyond_the_cap_are_closed_at_once_and_health_answers_again(capped_server, closes):
    """With 8 connections open (the cap), a ninth is refused as it is accepted, not by its head deadline; one
    held closed, /health is served; the header timeout frees the rest."""
    held = [_connect(capped_server.url) for _ in range(8)]
    try:
        for sock in held:
            closes.wait_for(sock, "open")
        with _connect(capped_server.url) as extra:
            assert _closed_within(extra, PATIENCE) is not None
            closes.wait_for(extra, "lost")
            assert closes.of(extra) == ["refused", "lost"]
        gone = held.pop()
        port = gone.getsockname()[1]
        gone.close()
        closes.wait_for(port, "lost")
        assert httpx.get(f"{capped_server.url}/health", timeout=PATIENCE).status_code == 200
        assert all(closes.of(sock) == ["open"] for sock in held), closes.events  # served in the place of the one gone
        for sock in held:  # the header timeout frees them
            assert _closed_within(sock, PATIENCE) is not None
            closes.wait_for(sock, "lost")
            assert closes.of(sock) == ["open", "timed out", "lost"]
        assert httpx.get(f"{capped_server.url}/health", timeout=PATIENCE).status_code == 200
    finally:
        for sock in held:
            sock.close()


def test_beyond_limit_concurrency_a_request_answers_503(limited_server, closes):
    """limit_concurrency 4: a request on a fourth open connection is served, one on a fifth answers 503."""
    held = [_connect(limited_server.url) for _ in range(4)]
    try:
        for sock in held:
            closes.wait_for(sock, "open")
        assert httpx.get(f"{limited_server.url}/health", timeout=PATIENCE).status_code == 503
        gone = held.pop()
        port = gone.getsockname()[1]
        gone.close()
        closes.wait_for(port, "lost")
        assert httpx.get(f"{limited_server.url}/health", timeout=PATIENCE).status_code == 200
    finally:
        for sock in held:
            sock.close()
