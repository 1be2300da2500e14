"""Request guards, as plain ASGI middleware (so streamed responses still see client disconnects).

The Host check (DNS rebinding): a request's ``Host`` must name this server: a loopback name (localhost,
127.0.0.1, [::1]), the ``--host`` it listens on or an ``--allow-host`` name, any port; listening on every
address (0.0.0.0, ::) without a key, any IP literal too; listening beyond loopback with a key, anything (the
key protects). Else 421. A rebinding page's requests carry its own domain name, which fails this.
The cross-site check: a state-changing request (POST, PUT, PATCH, DELETE) without a valid API key whose
``Sec-Fetch-Site`` is ``cross-site`` or ``same-site``, or whose ``Origin`` is not the ``Host`` it was sent to,
answers 403: browsers send form, multipart and text/plain bodies to any site without a CORS preflight, but a
key cannot be sent cross-site without one. Clients outside a browser send no ``Origin`` and pass.
The optional API key: when configured, every ``/v1`` request, ``/docs`` and ``/openapi.json`` need
``Authorization: Bearer <key>``; the web page, ``/health`` and ``/ready`` stay open so a browser can load the page,
which then asks for the key, and a supervisor can probe the server. A key sent in a URL's query (``?api_key=``, which
the server never accepts) is redacted from uvicorn's log lines.
Framing: every answer outside ``/v1`` (the page, its files, the docs) says it may not be framed
(``X-Frame-Options: DENY``, CSP ``frame-ancestors 'none'``), so no other site can overlay it (clickjacking).
WebSocket handshakes (``server.speech_stream``) get the same Host, key and Origin checks (see
``RequestGuard._websocket``). The body limit: a request whose declared ``Content-Length`` exceeds the upload limit
answers 413 before its body is read; a body without one (chunked) is counted as it is read, and reading past the limit
raises ``BodyTooLarge``, which answers the same 413, so no more than the limit is ever read or spooled.
"""

from __future__ import annotations

import hmac
import ipaddress
import json
import logging
import re
from urllib.parse import urlsplit

from starlette.exceptions import HTTPException as StarletteHTTPException

from server.errors import error_body
from server.settings import ServerSettings, is_loopback


class _RefusedHandshakes(logging.Filter):
    """uvicorn logs an error for every WebSocket handshake answered with an HTTP response (its
    ``websocket.http.response`` extension, how ``RequestGuard`` refuses one), as if the application had failed;
    refusals are not errors, and a flood of them must not flood the log."""

    def filter(self, record: logging.LogRecord) -> bool:
        return record.getMessage() != "ASGI callable returned without completing handshake."


class _RedactedKeys(logging.Filter):
    """Secrets a client put in a URL's query (``?api_key=...``, ``token=``) are replaced in uvicorn's access and
    WebSocket log lines: a log is read by more people than the key is meant for."""

    def filter(self, record: logging.LogRecord) -> bool:
        if isinstance(record.args, tuple) and any(isinstance(a, str) and "=" in a for a in record.args):
            record.args = tuple(redact_query(a) if isinstance(a, str) else a for a in record.args)
        return True


_SECRET_QUERY = re.compile(r"([?&;](?:[a-z0-9_%\-]*key|[a-z0-9_%\-]*token|password|secret)=)[^&;#\s]*", re.IGNORECASE)


def redact_query(text: str) -> str:
    """``text`` (a path with its query, a log argument) with the values of key-, token- and password-named query
    parameters replaced by ``[redacted]``."""
    return _SECRET_QUERY.sub(r"\1[redacted]", text)


logging.getLogger("uvicorn.error").addFilter(_RefusedHandshakes())
for _name in ("uvicorn.access", "uvicorn.error"):
    logging.getLogger(_name).addFilter(_RedactedKeys())
PROTECTED_PREFIX = "/v1/"
PROTECTED_PATHS = frozenset({"/docs", "/docs/oauth2-redirect", "/openapi.json", "/redoc"})
NOT_FRAMED = [(b"x-frame-options", b"DENY"), (b"content-security-policy", b"frame-ancestors 'none'")]
WRITE_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})
LOOPBACK_NAMES = frozenset({"localhost", "127.0.0.1", "::1"})
WILDCARD_HOSTS = frozenset({"0.0.0.0", "::", ""})


class HostPolicy:
    """Which ``Host`` names a server with ``settings`` answers to."""

    def __init__(self, settings: ServerSettings):
        listening = settings.host.lower().removeprefix("[").removesuffix("]")
        self.any_host = bool(settings.api_key) and not is_loopback(listening)
        self.any_ip = listening in WILDCARD_HOSTS
        self.names = LOOPBACK_NAMES | {name.lower() for name in settings.allowed_hosts}
        if listening not in WILDCARD_HOSTS:
            self.names |= {listening}

    def allows(self, host: str | None) -> bool:
        if self.any_host or host is None:  # no Host at all: an HTTP/1.0 client, never a browser
            return True
        name = host_name(host)
        if name is None:
            return False
        return name in self.names or (self.any_ip and _is_ip(name))


def host_name(host: str) -> str | None:
    """The lowercased name of a ``Host`` value (``name``, ``name:port``, ``[v6]`` or ``[v6]:port``); None if
    malformed."""
    host = host.strip().lower()
    if host.startswith("["):
        name, bracket, port = host[1:].partition("]")
        if not bracket or not _is_ip(name) or (port and not (port[0] == ":" and port[1:].isdigit())):
            return None
        return name
    name, colon, port = host.partition(":")
    if not name or (colon and not port.isdigit()):
        return None
    return name


def cross_site(method: str, headers: dict[str, str]) -> str | None:
    """Why a request is a cross-site write (``headers`` by lowercase name), or None if it is not."""
    if method not in WRITE_METHODS:
        return None
    fetch_site = headers.get("sec-fetch-site", "").lower()
    if fetch_site in ("cross-site", "same-site"):
        return f"the browser marks it {fetch_site}"
    origin = headers.get("origin")
    if origin is None:
        return None
    host = headers.get("host", "")
    parts = urlsplit(origin) if origin != "null" else None
    if parts is None or not host or parts.netloc.lower() != host.strip().lower():
        return f"it comes from the web page of origin {origin!r}, not this server's"
    return None


class RequestGuard:
    def __init__(self, app, settings: ServerSettings):
        self.app, self.api_key, self.max_body_bytes = app, settings.api_key, settings.max_upload_bytes
        self.hosts = HostPolicy(settings)

    async def __call__(self, scope, receive, send):
        if scope["type"] == "websocket":
            return await self._websocket(scope, receive, send)
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", [])}
        if not self.hosts.allows(headers.get("host")):
            return await _reply(send, 421, f"this server does not answer to the host {headers['host']!r}; use "
                                           "http://localhost or an address it listens on (--host, --allow-host)",
                                "invalid_host", {})
        if not scope["path"].startswith(PROTECTED_PREFIX):
            send = _not_framed(send)
        keyed = bool(self.api_key) and self._has_key(headers)
        if self.api_key and _protected(scope["path"]) and not keyed:
            return await _reply(send, 401, "a valid API key is required (Authorization: Bearer <key>)",
                                "invalid_api_key", {"www-authenticate": "Bearer"})
        reason = None if keyed else cross_site(scope["method"], headers)
        if reason:
            return await _reply(send, 403, f"cross-site {scope['method']} refused: {reason}; send it from this "
                                           "server's own page, without an Origin, or with the API key",
                                "cross_site_request", {})
        length = headers.get("content-length", "")
        if length.isdigit() and int(length) > self.max_body_bytes:
            return await _reply(send, 413, f"the request body has {int(length)} bytes; the limit is "
                                           f"{self.max_body_bytes}", "request_too_large", {})
        return await self.app(scope, _counted(receive, self.max_body_bytes), send)

    async def _websocket(self, scope, receive, send):
        """The same checks for a WebSocket handshake, refused as the same HTTP errors: the Host; the key, from the
        ``Authorization`` header or, as a browser cannot set headers here, a ``bearer.<KEY>`` subprotocol; and the
        Origin, which browsers send on every handshake and no CORS preflight guards, so a keyless one from another
        origin is refused whatever its method."""
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", [])}
        if not self.hosts.allows(headers.get("host")):
            return await _reply(send, 421, f"this server does not answer to the host {headers['host']!r}",
                                "invalid_host", {}, "websocket.")
        keyed = bool(self.api_key) and (self._has_key(headers) or any(
            self._is_key(p.removeprefix("bearer.")) for p in scope.get("subprotocols", []) if p.startswith("bearer.")))
        if self.api_key and _protected(scope["path"]) and not keyed:
            return await _reply(send, 401, "a valid API key is required (Authorization: Bearer <key>, or the "
                                           "subprotocol bearer.<key>)", "invalid_api_key",
                                {"www-authenticate": "Bearer"}, "websocket.")
        reason = None if keyed else cross_site("POST", headers)
        if reason:
            return await _reply(send, 403, f"cross-site WebSocket refused: {reason}; open it from this server's own "
                                           "page, without an Origin, or with the API key", "cross_site_request", {},
                                "websocket.")
        return await self.app(scope, receive, send)

    def _has_key(self, headers: dict[str, str]) -> bool:
        scheme, _, token = headers.get("authorization", "").partition(" ")
        return scheme.lower() == "bearer" and self._is_key(token.strip())

    def _is_key(self, token: str) -> bool:
        return hmac.compare_digest(token.encode(), self.api_key.encode())


def _protected(path: str) -> bool:
    """Whether ``path`` needs the key (when one is set): the API and its description."""
    return path.startswith(PROTECTED_PREFIX) or path.rstrip("/") in PROTECTED_PATHS


def _not_framed(send):
    """``send`` adding ``NOT_FRAMED``'s headers to the response."""

    async def sending(message) -> None:
        if message["type"] == "http.response.start":
            message = {**message, "headers": [*message.get("headers", ()), *NOT_FRAMED]}
        await send(message)

    return sending


def _is_ip(name: str) -> bool:
    try:
        ipaddress.ip_address(name)
    except ValueError:
        return False
    return True


class BodyTooLarge(StarletteHTTPException):
    """A request body read past the upload limit (one sent without a Content-Length)."""

    code = "request_too_large"

    def __init__(self, limit: int):
        super().__init__(413, f"the request body is larger than the limit of {limit} bytes")


def _counted(receive, limit: int):
    """``receive``, raising ``BodyTooLarge`` once the request's body passes ``limit`` bytes."""
    read = 0

    async def counted():
        nonlocal read
        message = await receive()
        if message["type"] == "http.request":
            read += len(message.get("body", b""))
            if read > limit:
                raise BodyTooLarge(limit)
        return message

    return counted


async def _reply(send, status: int, message: str, code: str, extra_headers: dict[str, str], prefix: str = "") -> None:
    """The JSON error answer; ``prefix`` "websocket." refuses a WebSocket handshake with it (the ASGI
    ``websocket.http.response`` extension)."""
    body = json.dumps(error_body(status, message, code=code)).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    headers += [(k.encode(), v.encode()) for k, v in extra_headers.items()]
    await send({"type": f"{prefix}http.response.start", "status": status, "headers": headers})
    await send({"type": f"{prefix}http.response.body", "body": body})
