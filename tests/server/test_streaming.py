"""``DisconnectAwareStream`` (server/streaming.py) at the ASGI level: a finished stream ends its response and its
watcher; the response starts with the body's first part, and a body that fails before it sends nothing; a client's
disconnect stops the body where it is (its ``finally`` runs) and leaves the request's task as it was; a
cancellation from outside still cancels. (Through a live server: tests/server/test_concurrency.py.)"""

from __future__ import annotations

import asyncio

import pytest

from server.streaming import DisconnectAwareStream


class Client:
    """The ASGI ``receive`` and ``send`` of one request; ``leave()`` makes ``receive`` answer a disconnect."""

    def __init__(self):
        self.sent: list[dict] = []
        self._gone = asyncio.Event()

    async def receive(self) -> dict:
        await self._gone.wait()
        return {"type": "http.disconnect"}

    async def send(self, message: dict) -> None:
        self.sent.append(message)

    def leave(self) -> None:
        self._gone.set()

    def bodies(self) -> list[bytes]:
        return [m["body"] for m in self.sent if m["type"] == "http.response.body"]


SCOPE = {"type": "http", "asgi": {"version": "3.0", "spec_version": "2.3"}}


def test_a_finished_stream_sends_every_chunk_then_ends_and_leaves_no_task_behind():
    async def main():
        client = Client()

        async def body():
            for part in (b"a", b"b", b"c"):
                await asyncio.sleep(0)
                yield part

        await DisconnectAwareStream(body(), media_type="audio/pcm")(SCOPE, client.receive, client.send)
        await asyncio.sleep(0)  # let the cancelled watcher finish
        others = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
        return client, others

    client, others = asyncio.run(main())
    assert client.sent[0]["type"] == "http.response.start" and client.sent[0]["status"] == 200
    assert client.bodies() == [b"a", b"b", b"c", b""] and client.sent[-1]["more_body"] is False
    assert others == []


def test_the_response_starts_with_the_bodys_first_part_and_an_empty_one_starts_it_at_once():
    async def main(first: bytes):
        client = Client()
        ready = asyncio.Event()

        async def body():
            if first:
                await ready.wait()  # the first audio is being made
            yield first
            await ready.wait()
            yield b"more"

        request = asyncio.ensure_future(DisconnectAwareStream(body())(SCOPE, client.receive, client.send))
        for _ in range(5):
            await asyncio.sleep(0)
        before = list(client.sent)
        ready.set()
        await request
        return before, client

    before, client = asyncio.run(main(b"audio"))
    assert before == []  # no status line or headers while nothing can be sent with them
    assert client.sent[0]["type"] == "http.response.start" and client.bodies() == [b"audio", b"more", b""]
    before, client = asyncio.run(main(b""))
    assert [m["type"] for m in before] == ["http.response.start", "http.response.body"]  # at once
    assert client.bodies() == [b"", b"more", b""]


def test_a_body_failing_before_its_first_part_raises_and_sends_nothing():
    """The error reaches the app's handlers, which answer it with its own status, as no response has begun."""

    class Refused(Exception):
        pass

    async def main():
        client = Client()

        async def body():
            await asyncio.sleep(0)
            raise Refused("the engine refused the text")
            yield b"never"

        with pytest.raises(Refused):
            await DisconnectAwareStream(body())(SCOPE, client.receive, client.send)
        await asyncio.sleep(0)
        return client, [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]

    client, others = asyncio.run(main())
    assert client.sent == [] and others == []


def test_a_disconnect_stops_the_body_which_cleans_up_and_the_request_task_carries_on():
    async def main():
        client = Client()
        cleaned = asyncio.Event()

        async def body():
            try:
                yield b"first"
                client.leave()  # the client goes away while the next chunk is being made
                await asyncio.sleep(3600)
                yield b"never"
            finally:
                cleaned.set()

        await asyncio.wait_for(DisconnectAwareStream(body())(SCOPE, client.receive, client.send), timeout=5)
        task = asyncio.current_task()
        still_cancelling = task.cancelling() if hasattr(task, "cancelling") else 0
        await asyncio.sleep(0)  # the request's task is not cancelled afterwards
        return client, cleaned.is_set(), still_cancelling

    client, cleaned, still_cancelling = asyncio.run(main())
    assert client.bodies() == [b"first"]  # no end of body: the connection is gone
    assert cleaned and still_cancelling == 0


def test_a_cancellation_from_outside_is_not_swallowed():
    async def main():
        client = Client()
        started = asyncio.Event()

        async def body():
            started.set()
            await asyncio.sleep(3600)
            yield b"never"

        request = asyncio.ensure_future(DisconnectAwareStream(body())(SCOPE, client.receive, client.send))
        await started.wait()
        request.cancel()  # the server shutting down
        with pytest.raises(asyncio.CancelledError):
            await request

    asyncio.run(main())
