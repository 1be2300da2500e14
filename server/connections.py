"""Connection limits for uvicorn: a deadline for each request head and a cap on open connections.

uvicorn arms its keep-alive timer only after a response and cancels it on any byte received, so on its own a
connection that never sends a request, or trickles one a byte every few seconds, is held forever; enough of
them exhaust the open-file limit and the server stops accepting anyone. ``protocol_class(settings)`` returns
uvicorn's HTTP protocol (httptools or h11) with ``ConnectionLimits`` mixed in: a connection has
``header_timeout_s`` from connecting, and from each response, to complete its next request head, else it is
closed; while a request is in progress (a long speech stream included) no deadline runs, nor after a WebSocket
handshake (a live-text session has its own timeouts). A connection beyond
``max_connections`` is closed as soon as it is accepted. ``uvicorn_config(app, settings)`` builds the
``uvicorn.Config`` with that protocol and uvicorn's own ``limit_concurrency`` and ``timeout_keep_alive``, and
WebSocket messages of at most ``server.settings.MAX_WS_MESSAGE_BYTES``, uncompressed (no deflate bomb).
"""

from __future__ import annotations

import asyncio
import logging
import time

import uvicorn

from server.settings import MAX_WS_MESSAGE_BYTES, ServerSettings

log = logging.getLogger("orator.server")
OPEN_FILES_RESERVE = 256  # descriptors kept for everything but client sockets (model files, libraries, pipes)


class ConnectionLimits:
    """Mixed in before uvicorn's ``HttpToolsProtocol`` or ``H11Protocol`` (their ``cycle`` is the request in hand)."""

    header_timeout_s: float = 10.0
    max_connections: int = 512
    _last_refusal_log = 0.0  # refusals are logged at most once a second: a flood must not flood the log

    def connection_made(self, transport: asyncio.Transport) -> None:
        self._head_deadline: asyncio.TimerHandle | None = None
        super().connection_made(transport)
        if len(self.connections) > self.max_connections:
            now = time.monotonic()
            if now - ConnectionLimits._last_refusal_log >= 1.0:
                ConnectionLimits._last_refusal_log = now
                log.warning("refusing a connection: %d are open, the limit is %d (--max-connections)",
                            len(self.connections) - 1, self.max_connections)
            transport.close()
            return
        self._arm_head_deadline()

    def data_received(self, data: bytes) -> None:
        cycle = self.cycle
        super().data_received(data)
        if self.cycle is not cycle:  # a new request's head is complete: the request runs without a deadline
            self._cancel_head_deadline()

    def handle_websocket_upgrade(self, *args) -> None:
        """The head is complete and the connection is a WebSocket's from now on, timed by its session's own limits
        (``server.speech_stream``): the head deadline must not close it."""
        self._cancel_head_deadline()
        super().handle_websocket_upgrade(*args)

    def on_response_complete(self) -> None:
        super().on_response_complete()
        if not self.transport.is_closing() and self._idle():  # a pipelined request may have started instead
            self._arm_head_deadline()

    def connection_lost(self, exc: Exception | None) -> None:
        self._cancel_head_deadline()
        super().connection_lost(exc)

    def _idle(self) -> bool:
        return self.cycle is None or self.cycle.response_complete

    def _arm_head_deadline(self) -> None:
        self._cancel_head_deadline()
        self._head_deadline = self.loop.call_later(self.header_timeout_s, self._head_timed_out)

    def _cancel_head_deadline(self) -> None:
        if self._head_deadline is not None:
            self._head_deadline.cancel()
            self._head_deadline = None

    def _head_timed_out(self) -> None:
        self._head_deadline = None
        if self._idle() and not self.transport.is_closing():
            self.transport.close()


def protocol_class(settings: ServerSettings, http: str = "auto") -> type[asyncio.Protocol]:
    """uvicorn's HTTP protocol ``http`` ("auto", "httptools" or "h11") with ``settings``' connection limits."""
    if http == "auto":
        from uvicorn.protocols.http.auto import AutoHTTPProtocol as base
    elif http == "httptools":
        from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol as base
    elif http == "h11":
        from uvicorn.protocols.http.h11_impl import H11Protocol as base
    else:
        raise ValueError(f"unknown HTTP protocol {http!r}: choose auto, httptools or h11")
    return type(f"Limited{base.__name__}", (ConnectionLimits, base),
                {"header_timeout_s": settings.header_timeout_s, "max_connections": settings.max_connections})


def uvicorn_config(app, settings: ServerSettings, http: str = "auto", **kwargs) -> uvicorn.Config:
    """The ``uvicorn.Config`` serving ``app`` on ``settings.host``/``port`` with every connection limit."""
    # uvicorn answers 503 once its count (the asking connection included) reaches its limit: one more lets
    # ``limit_concurrency`` connections be served, as the setting says
    return uvicorn.Config(app, host=settings.host, port=settings.port, http=protocol_class(settings, http),
                          limit_concurrency=settings.limit_concurrency + 1, timeout_keep_alive=settings.keep_alive_s,
                          ws_max_size=MAX_WS_MESSAGE_BYTES, ws_per_message_deflate=False, **kwargs)


def fit_open_file_limit(max_connections: int) -> int:
    """Raise this process's open-file limit (up to the hard limit) to hold ``max_connections`` sockets and the
    rest; the connections it can hold, lower than asked only when the hard limit is lower."""
    try:
        import resource
    except ImportError:  # not on Windows: its sockets are not bounded by a descriptor limit
        return max_connections
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    wanted = max_connections + OPEN_FILES_RESERVE
    if soft != resource.RLIM_INFINITY and soft < wanted:
        new_soft = wanted if hard == resource.RLIM_INFINITY else min(wanted, hard)
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (new_soft, hard))
            soft = new_soft
        except (ValueError, OSError):
            pass
    if soft != resource.RLIM_INFINITY and soft < wanted:
        fitted = max(1, soft - OPEN_FILES_RESERVE)
        log.warning("the open-file limit is %d: serving at most %d connections instead of %d", soft, fitted,
                    max_connections)
        return fitted
    return max_connections
