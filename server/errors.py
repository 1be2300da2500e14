"""Every failure as an OpenAI-style JSON error: ``{"error": {"message", "type", "param", "code"}}``.

``APIError`` is what the endpoints raise; ``install_error_handlers`` also rewrites FastAPI's own
404/405/422 answers, engine errors and unexpected exceptions into the same shape. Every message goes out through
``error_body``, which shortens one longer than ``MAX_MESSAGE_CHARS`` (a message may quote what the client sent:
a megabyte of it must not come back). ``UnexpectedErrors``, the
innermost middleware, answers an unexpected exception with that 500 and keeps the connection alive.
"""

from __future__ import annotations

import json
import logging

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from engine.errors import CheckpointError, OratorError, TextError, UnsupportedError, VoiceError

log = logging.getLogger("orator.server")

MAX_MESSAGE_CHARS = 1000
_KEPT_HEAD, _KEPT_TAIL = 600, 300  # a long message keeps its start (what failed) and its end (what to do)
_TYPES = {400: "invalid_request_error", 401: "authentication_error", 403: "permission_error", 404: "not_found_error",
          405: "invalid_request_error", 409: "invalid_request_error", 413: "invalid_request_error",
          421: "invalid_request_error", 422: "invalid_request_error", 429: "rate_limit_error", 503: "server_error"}


class APIError(Exception):
    def __init__(self, status: int, message: str, param: str | None = None, code: str | None = None,
                 headers: dict[str, str] | None = None):
        super().__init__(message)
        self.status, self.message, self.param, self.code = status, message, param, code
        self.headers = headers


def shortened(message: str) -> str:
    """``message``, or its start and end around a note of what was cut when it is longer than ``MAX_MESSAGE_CHARS``."""
    if len(message) <= MAX_MESSAGE_CHARS:
        return message
    return f"{message[:_KEPT_HEAD]} […{len(message) - _KEPT_HEAD - _KEPT_TAIL} characters…] {message[-_KEPT_TAIL:]}"


def error_body(status: int, message: str, param: str | None = None, code: str | None = None) -> dict:
    message, param = shortened(message), None if param is None else shortened(param)
    return {"error": {"message": message, "type": _TYPES.get(status, "server_error"), "param": param,
                      "code": code}}


def error_response(status: int, message: str, param: str | None = None, code: str | None = None,
                   headers: dict[str, str] | None = None) -> JSONResponse:
    return JSONResponse(error_body(status, message, param, code), status_code=status, headers=headers)


def engine_error(e: OratorError, param: str | None = None) -> APIError:
    """An engine error as the API error a client should see."""
    if isinstance(e, CheckpointError):
        return APIError(500, f"the model cannot be used: {e}", code="model_error")
    codes = {VoiceError: ("voice", "invalid_voice"), TextError: ("input", "invalid_input"),
             UnsupportedError: (param, "unsupported")}
    default_param, code = next((v for k, v in codes.items() if isinstance(e, k)), (param, "invalid_request"))
    return APIError(400, str(e), param=param or default_param, code=code)


def install_error_handlers(app: FastAPI) -> None:
    @app.exception_handler(APIError)
    async def _api_error(_: Request, e: APIError):
        return error_response(e.status, e.message, e.param, e.code, e.headers)

    @app.exception_handler(OratorError)
    async def _engine_error(_: Request, e: OratorError):
        err = engine_error(e)
        return error_response(err.status, err.message, err.param, err.code)

    @app.exception_handler(StarletteHTTPException)
    async def _http_error(request: Request, e: StarletteHTTPException):
        messages = {404: f"no such endpoint: {request.method} {request.url.path}",
                    405: f"method {request.method} is not allowed on {request.url.path}"}
        message = messages.get(e.status_code) if e.detail in (None, "Not Found", "Method Not Allowed") else None
        return error_response(e.status_code, message or str(e.detail), code=getattr(e, "code", f"http_{e.status_code}"),
                              headers=getattr(e, "headers", None))

    @app.exception_handler(RequestValidationError)
    async def _validation_error(_: Request, e: RequestValidationError):
        first = e.errors()[0] if e.errors() else {}
        where = [str(p) for p in first.get("loc", ()) if p not in ("body", "query", "path", "form")]
        param = ".".join(where) or None
        message = first.get("msg", "invalid request")
        if first.get("type") == "json_invalid":
            message, param = "the request body is not valid JSON", None
        elif param:
            message = f"{param}: {message}"
        return error_response(400, message, param, code="invalid_value")

    @app.exception_handler(Exception)  # what escapes the middleware outside UnexpectedErrors (the request guard)
    async def _unexpected(_: Request, e: Exception):
        log.exception("unexpected error")
        return error_response(500, f"internal error: {type(e).__name__}", code="internal_error")


class UnexpectedErrors:
    """Pure ASGI middleware: an exception that escapes the app before its response has started answers the JSON
    500, logged once, and is not re-raised: Starlette's ServerErrorMiddleware re-raises after its handler's
    response, and uvicorn then closes the client's keep-alive connection. After the response has started the
    exception still propagates (the response is cut, and the connection with it)."""

    def __init__(self, app):
        self.app = app

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        started = False

        async def send_watched(message) -> None:
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await self.app(scope, receive, send_watched)
        except Exception as e:
            if started:
                raise
            log.exception("unexpected error in %s %s", scope.get("method"), scope.get("path"))
            body = json.dumps(error_body(500, f"internal error: {type(e).__name__}", code="internal_error")).encode()
            await send({"type": "http.response.start", "status": 500, "headers": [
                (b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]})
            await send({"type": "http.response.body", "body": body})
