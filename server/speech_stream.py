"""``/v1/audio/speech/stream``: live text in, speech out, over a WebSocket.

Client to server, JSON text messages: first ``{"type": "session.config", ...}`` with the fields of a
``/v1/audio/speech`` body but ``input`` (``server.speech.SpeechSettings``, checked the same way), then any number
of ``{"type": "input.text.delta", "delta": "..."}``, then ``{"type": "input.done"}``.
Server to client: the audio as binary messages in the chosen ``response_format``, each as soon as its chunk is
made; JSON text messages ``{"type": "speech.queue", "position"}`` while the session waits for a slot,
``{"type": "segment.started", "segment", "start"}`` (a segment's first audio follows; ``start`` is its character
offset in the text sent), ``{"type": "speech.done", "usage", "timing"}`` and
``{"type": "error", "error": {"message", "type", "param", "code"}}``; after ``speech.done`` or an error the server
closes the socket (1000 when done, 1008 for the client's mistake, 1013 busy or loading, 1011 a failure of the
server's own).

The text is spoken as it arrives (``Engine.stream_live`` on one engine; whole segments on the batched loop:
``engine.core.live_speech``). A session holds its generation slot from its start to its end, waiting text included,
so a session that sends nothing for ``live_text_timeout_s`` is ended, and its text in all is bounded by
``max_live_chars`` (a delta by ``max_input_chars``); a client that goes away cancels its generation at once.
The API key, Host and Origin checks are ``server.auth``'s.
"""

from __future__ import annotations

import asyncio
import json
import logging
from typing import Literal

from fastapi import APIRouter, WebSocket, WebSocketDisconnect
from pydantic import ConfigDict, ValidationError
from starlette.concurrency import run_in_threadpool

from engine import LiveText, OratorError
from server.errors import APIError, engine_error, error_body
from server.formats import check_format
from server.scheduler import Queued, QueueFull, Ticket
from server.settings import check_model
from server.speech import Output, SpeechSettings, speech_job, stream_error

log = logging.getLogger("orator.server")
router = APIRouter()
SUBPROTOCOL = "orator.v1"  # offered beside ``bearer.<KEY>`` by a browser, which cannot send the key as a header
_CLOSE_CODES = {408: 1008, 429: 1013, 503: 1013}


class SessionConfig(SpeechSettings):
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)  # a misspelt setting is an error, not ignored

    type: Literal["session.config"]


class SessionError(Exception):
    """What ends a session with an ``error`` message: an ``APIError``'s status, message, param and code."""

    def __init__(self, error: APIError):
        super().__init__(error.message)
        self.error = error


def _bad(message: str, code: str, param: str | None = None, status: int = 400) -> SessionError:
    return SessionError(APIError(status, message, param=param, code=code))


@router.websocket("/v1/audio/speech/stream")
async def speech_stream(ws: WebSocket):
    offered = ws.scope.get("subprotocols", [])
    await ws.accept(subprotocol=SUBPROTOCOL if SUBPROTOCOL in offered else None)
    await _Session(ws).run()


class _Session:
    def __init__(self, ws: WebSocket):
        self.ws, self.state = ws, ws.app.state
        self.settings = self.state.settings
        self.live = LiveText()
        self.ticket: Ticket | None = None
        self.text: list[str] = []

    async def run(self) -> None:
        receiver = sender = None
        try:
            config = await self._config()
            self.ticket = await self._submit(config)
            receiver = asyncio.create_task(self._receive_text())
            sender = asyncio.create_task(self._send_speech(config))
            done, _ = await asyncio.wait({receiver, sender}, return_when=asyncio.FIRST_COMPLETED)
            if sender in done:
                sender.result()  # its error, if any, ends the session below
                await self._close(1000)
                return
            receiver.result()  # the client's mistake raises; a client gone returns
        except SessionError as e:
            await self._fail(e.error)
        except _Gone:
            pass
        except Exception as e:  # a generation that failed, a limit reached
            error = stream_error(e, self.ticket) if self.ticket is not None else APIError(
                500, f"the session failed ({type(e).__name__})", code="session_failed")
            if self.ticket is None:
                log.exception("live session failed")
            await self._fail(error)
        finally:
            self.live.abort()
            if self.ticket is not None:
                self.ticket.cancel()  # frees its slot or its place in line now
            for task in (receiver, sender):
                if task is not None and not task.done():
                    task.cancel()
                elif task is not None and not task.cancelled():
                    task.exception()  # seen: the other side ended the session first (a client gone after the end)

    # ---- the client's messages --------------------------------------------------------------------
    async def _message(self, timeout: float | None) -> dict:
        """The next JSON message; ``_Gone`` once the client is."""
        try:
            message = await asyncio.wait_for(self.ws.receive(), timeout)
        except asyncio.TimeoutError:
            raise _bad(f"no message for {timeout:g} s while the text is open; send input.text.delta or input.done",
                       "text_timeout", status=408) from None
        if message["type"] == "websocket.disconnect":
            raise _Gone
        if message.get("text") is None:
            raise _bad("binary messages are not part of this protocol: send JSON text messages", "invalid_message")
        try:
            payload = json.loads(message["text"])
        except (ValueError, RecursionError):  # RecursionError: arrays nested thousands deep
            raise _bad("a message is not JSON", "invalid_json") from None
        if not isinstance(payload, dict) or not isinstance(payload.get("type"), str):
            raise _bad('a message must be a JSON object with a "type"', "invalid_message", "type")
        return payload

    async def _config(self) -> SessionConfig:
        payload = await self._message(self.settings.live_text_timeout_s)
        if payload["type"] != "session.config":
            raise _bad(f"the first message must be session.config, not {payload['type'][:64]!r}", "config_required",
                       "type")
        try:
            return SessionConfig.model_validate(payload)
        except ValidationError as e:
            first = e.errors()[0]
            param = ".".join(str(p) for p in first["loc"]) or None
            raise _bad(f"session.config: {param}: {first['msg']}", "invalid_value", param) from None

    async def _submit(self, config: SessionConfig) -> Ticket:
        try:
            engine = self.state.engine_or_503()
            check_model(config.model, self.settings)
            check_format(config.response_format)
            name = config.voice if isinstance(config.voice, str) else config.voice.id
            args = (config, self.live, engine, self.state.store, self.settings)
            if self.state.store.find(name.strip()) is not None:  # a library voice's file is read off the event loop
                job = await run_in_threadpool(speech_job, *args)
            else:
                job = speech_job(*args)
            return self.state.scheduler.submit(job)
        except APIError as e:
            raise SessionError(e) from None
        except OratorError as e:
            raise SessionError(engine_error(e)) from None
        except QueueFull as e:
            raise _bad(f"the server is busy ({e}); retry shortly", "queue_full", status=429) from None

    async def _receive_text(self) -> None:
        """Deltas into the live text until ``input.done``; then only a disconnect (which cancels) is expected."""
        limit, room = self.settings.max_input_chars, self.settings.max_live_chars
        while not self.live.closed:
            payload = await self._message(self.settings.live_text_timeout_s)
            kind = payload["type"]
            if kind == "input.done":
                self.live.close()
            elif kind == "input.text.delta":
                delta = payload.get("delta")
                if not isinstance(delta, str):
                    raise _bad("input.text.delta needs a string delta", "invalid_message", "delta")
                if len(delta) > limit:
                    raise _bad(f"a delta has {len(delta)} characters; the limit is {limit}", "input_too_long",
                               "delta")
                room -= max(1, len(delta))  # an empty delta counts: a flood of them is bounded too
                if room < 0:
                    raise _bad(f"the session's text passed the limit of {self.settings.max_live_chars} characters",
                               "input_too_long", "delta")
                try:
                    self.live.append(delta)
                except OratorError as e:
                    raise SessionError(engine_error(e, "delta")) from None
                self.text.append(delta)
            elif kind == "session.config":
                raise _bad("session.config comes once, first", "unexpected_message", "type")
            else:
                raise _bad(f"unknown message type {kind[:64]!r}", "invalid_message", "type")
        while True:
            payload = await self._message(None)
            raise _bad(f"{payload['type'][:64]!r} after input.done: the session's text is closed",
                       "unexpected_message", "type")

    # ---- the server's messages --------------------------------------------------------------------
    async def _send_speech(self, config: SessionConfig) -> None:
        ticket, output, segment = self.ticket, Output(config), None
        async for event in ticket.events():
            if isinstance(event, Queued):
                await self._send({"type": "speech.queue", "position": event.position})
                continue
            if event.n_frames and event.segment != segment:
                segment = event.segment
                await self._send({"type": "segment.started", "segment": segment, "start": event.span[0]})
            data = output.add(event)
            if data:
                await self._send(data)
        if ticket.state != "done":
            raise _Gone  # cancelled: the client went away
        data = output.finish()
        if data:
            await self._send(data)
        engine = self.state.engine
        tokens = len(engine.tokenizer.encode("".join(self.text))) if self.text else 0
        usage = {"input_tokens": tokens, "output_tokens": ticket.frames, "total_tokens": tokens + ticket.frames}
        timing = {"time_to_first_audio": ticket.status()["time_to_first_audio"],
                  "audio_seconds": round(ticket.audio_seconds, 4)}
        await self._send({"type": "speech.done", "id": ticket.id, "usage": usage, "timing": timing})

    async def _send(self, message: dict | bytes) -> None:
        send = self.ws.send_bytes(message) if isinstance(message, bytes) else self.ws.send_text(json.dumps(message))
        try:
            await asyncio.wait_for(send, self.settings.send_timeout_s)
        except asyncio.TimeoutError:
            log.warning("a live session took no data for %g s; closing it", self.settings.send_timeout_s)
            raise _Gone from None
        except (OSError, RuntimeError, WebSocketDisconnect):  # the socket closed under us
            raise _Gone from None

    async def _fail(self, error: APIError) -> None:
        try:
            await self.ws.send_text(json.dumps({"type": "error", **error_body(error.status, error.message,
                                                                               error.param, error.code)}))
        except (OSError, RuntimeError, WebSocketDisconnect):
            return
        await self._close(_CLOSE_CODES.get(error.status, 1008 if error.status < 500 else 1011))

    async def _close(self, code: int) -> None:
        try:
            await self.ws.close(code)
        except (OSError, RuntimeError, WebSocketDisconnect):
            pass


class _Gone(Exception):
    """The client closed the socket (or stopped reading): nothing more is sent."""
