"""``DisconnectAwareStream``: Starlette's ``StreamingResponse`` watching for the client's disconnect with one
plain asyncio task.

uvicorn speaks ASGI 2.3, where a disconnect shows up only as an ``http.disconnect`` message from ``receive``,
so a streamed response has to listen for it beside streaming: Starlette does so in an anyio task group (a
second task, cancel scopes and exception groups) for every response. Here the response streams in the
request's own task while one small task awaits ``receive``; on a disconnect it cancels the streaming, whose
body iterator then unwinds (``server.speech`` frees the stream's slot in its ``finally``). With the voice
listing cached (``server.library``), this took the server's CPU per speech request from 0.72-0.79 to
0.55-0.57 ms on the 2-core CPU machine (an instant stand-in engine, 500 sequential requests, three runs
each). With a stand-in pacing 64 streams as the loop does, the requests' arrivals at the engine spread over
20-36 ms either way on that machine; what it changes under the real engine is for the GPU benchmark to show.
"""

from __future__ import annotations

import asyncio

from starlette.responses import StreamingResponse


class DisconnectAwareStream(StreamingResponse):
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
