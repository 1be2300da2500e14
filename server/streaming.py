"""``DisconnectAwareStream``: the speech endpoint's streamed response. It watches for the client's disconnect
with one plain asyncio task, starts only when its body has a first part, and ends a failed stream visibly.

- Disconnects: uvicorn (ASGI 2.3) reports one only as an ``http.disconnect`` from ``receive``. Starlette listens
  for it in an anyio task group per response; one small task does the same here with less of the server's
  CPU per request. On a disconnect the streaming is cancelled and
  its body iterator unwinds (``server.speech`` frees the stream's slot in its ``finally``).
- The status line and headers go out with the body's first part: a burst of requests is taken in without a
  write to each client, and a body that fails before its first part (a request the engine refuses) raises out
  of the response, so the client gets the JSON error with its real status. A body with something to tell at
  once (a request waiting in line: its ``X-Queue-Position``) yields an empty first part.
- A body that fails after the start raises ``StreamAborted``: the response ends without its last part, so the
  connection closes and the client sees a cut stream, never one that looks complete.
- A client that takes no data for ``send_timeout_s`` is disconnected: one that stops reading must not hold its
  stream and the audio waiting for it.
"""

from __future__ import annotations

import asyncio
import logging

from starlette.responses import StreamingResponse

log = logging.getLogger("orator.server")
_timeout = getattr(asyncio, "timeout", None)  # Python 3.11+


class StreamAborted(Exception):
    """Raised by a body iterator whose response has started and cannot go on: the response ends without its last
    part, so the server closes the connection and the client sees a cut stream instead of a complete one."""


class DisconnectAwareStream(StreamingResponse):
    """``send_timeout_s``: a client that takes no data for this long (its socket's buffers full) is disconnected,
    so a client that stops reading does not hold its stream, and the audio waiting for it, for ever."""

    def __init__(self, content, *args, send_timeout_s: float | None = None, **kwargs):
        super().__init__(content, *args, **kwargs)
        self.send_timeout_s = send_timeout_s

    async def stream_response(self, send) -> None:
        parts = aiter(self.body_iterator)
        first = await anext(parts, None)  # an error here propagates before any response has started
        await send({"type": "http.response.start", "status": self.status_code, "headers": self.raw_headers})
        try:
            if first is not None:
                await self._send_part(send, first)
                async for part in parts:
                    await self._send_part(send, part)
        except StreamAborted as e:
            log.warning("%s; closing the connection", e)
            return
        except TimeoutError:
            log.warning("a client took no data for %g s; closing the connection", self.send_timeout_s)
            return
        await send({"type": "http.response.body", "body": b"", "more_body": False})

    async def _send_part(self, send, part: bytes | str) -> None:
        message = {"type": "http.response.body", "body": self._encoded(part), "more_body": True}
        if _timeout is None:  # Python 3.10
            await asyncio.wait_for(send(message), self.send_timeout_s)
            return
        async with _timeout(self.send_timeout_s):  # a timer, not a task per part as wait_for makes
            await send(message)

    def _encoded(self, part: bytes | str) -> bytes:
        return part.encode(self.charset) if isinstance(part, str) else part

    async def __call__(self, scope, receive, send) -> None:
        streaming = asyncio.current_task()
        disconnected = False

        async def watch() -> None:
            nonlocal disconnected
            while (await receive())["type"] != "http.disconnect":
                pass
            disconnected = True
            streaming.cancel()

        watcher = asyncio.get_running_loop().create_task(watch())
        try:
            await self.stream_response(send)
        except asyncio.CancelledError:
            if not disconnected:  # cancelled from outside (the server stopping): not ours to swallow
                raise
            if hasattr(streaming, "uncancel"):  # Python 3.11+: the task is no longer being cancelled
                streaming.uncancel()
        finally:
            watcher.cancel()
        if self.background is not None:
            await self.background()
