"""``DisconnectAwareStream``: Starlette's ``StreamingResponse`` watching for the client's disconnect with one
plain asyncio task, and starting only when its body has a first part.

uvicorn speaks ASGI 2.3, where a disconnect shows up only as an ``http.disconnect`` message from ``receive``,
so a streamed response has to listen for it beside streaming: Starlette does so in an anyio task group (a
second task, cancel scopes and exception groups) for every response. Here the response streams in the
request's own task while one small task awaits ``receive``; on a disconnect it cancels the streaming, whose
body iterator then unwinds (``server.speech`` frees the stream's slot in its ``finally``). With the voice
listing cached (``server.library``), this took the server's CPU per speech request from 0.72-0.79 to
0.55-0.57 ms on the 2-core CPU machine (an instant stand-in engine, 500 sequential requests, three runs
each). With a stand-in pacing 64 streams as the loop does, the requests' arrivals at the engine spread over
20-36 ms either way on that machine; on an H200 (0.6B, 128 streams, four client processes) they spread over
71-95 ms, against 139-193 ms in the fourteenth session (with a decoder change between), most of it the handlers
on the event loop (docs/benchmarks.md, sixteenth session).

The status line and headers go out with the body's first part, not before: a burst of requests is taken in
without a write to each client meanwhile (on the 2-core CPU machine, writing the headers was ~40% of the event
loop's time per speech request), and a body that fails before its first part (a request the engine refuses)
raises out of the response, so the client gets the app's JSON error with its real status instead of a 200
and a cut stream. A body with something to tell at once (a request waiting in line: its ``X-Queue-Position``)
yields an empty first part.
"""

from __future__ import annotations

import asyncio
import logging

from starlette.responses import StreamingResponse

log = logging.getLogger("orator.server")


class StreamAborted(Exception):
    """Raised by a body iterator whose response has started and cannot go on: the response ends without its last
    part, so the server closes the connection and the client sees a cut stream instead of a complete one."""


class DisconnectAwareStream(StreamingResponse):
    async def stream_response(self, send) -> None:
        parts = aiter(self.body_iterator)
        first = await anext(parts, None)  # an error here propagates before any response has started
        await send({"type": "http.response.start", "status": self.status_code, "headers": self.raw_headers})
        try:
            if first is not None:
                await send({"type": "http.response.body", "body": self._encoded(first), "more_body": True})
                async for part in parts:
                    await send({"type": "http.response.body", "body": self._encoded(part), "more_body": True})
        except StreamAborted as e:
            log.warning("%s; closing the connection", e)
            return
        await send({"type": "http.response.body", "body": b"", "more_body": False})

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
