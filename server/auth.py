"""Request guards, as plain ASGI middleware (so streamed responses still see client disconnects).

The optional API key: when configured, every ``/v1`` request needs ``Authorization: Bearer <key>``;
the web page and ``/health`` stay open so a browser can load the page, which then asks for the key.
The body limit: a request whose declared ``Content-Length`` exceeds the upload limit answers 413
before its body is read.
"""

from __future__ import annotations

import hmac
import json

from server.errors import error_body

PROTECTED_PREFIX = "/v1/"


class RequestGuard:
    def __init__(self, app, api_key: str | None, max_body_bytes: int):
        self.app, self.api_key, self.max_body_bytes = app, api_key, max_body_bytes

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", [])}
        if self.api_key and scope["path"].startswith(PROTECTED_PREFIX) and not self._has_key(headers):
            return await _reply(send, 401, "a valid API key is required (Authorization: Bearer <key>)",
                                "invalid_api_key", {"www-authenticate": "Bearer"})
        length = headers.get("content-length", "")
        if length.isdigit() and int(length) > self.max_body_bytes:
            return await _reply(send, 413, f"the request body has {int(length)} bytes; the limit is "
                                           f"{self.max_body_bytes}", "request_too_large", {})
        return await self.app(scope, receive, send)

    def _has_key(self, headers: dict[str, str]) -> bool:
        scheme, _, token = headers.get("authorization", "").partition(" ")
        return scheme.lower() == "bearer" and hmac.compare_digest(token.strip().encode(), self.api_key.encode())


async def _reply(send, status: int, message: str, code: str, extra_headers: dict[str, str]) -> None:
    body = json.dumps(error_body(status, message, code=code)).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    headers += [(k.encode(), v.encode()) for k, v in extra_headers.items()]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})
