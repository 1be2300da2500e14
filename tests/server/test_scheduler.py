"""The scheduler: FIFO admission, queue positions, the queue limit, cancellation and error hand-over."""

from __future__ import annotations

import asyncio
import threading

import numpy as np
import pytest

from engine import Chunk, Sampling, Voice
from server.scheduler import Queued, QueueFull, Scheduler, SpeechJob


class GatedBackend:
    """Yields ``n_chunks`` chunks per job; each job waits for its gate before starting."""

    def __init__(self, capacity: int = 1, n_chunks: int = 3, fail_on: str | None = None):
        self.capacity, self.n_chunks, self.fail_on = capacity, n_chunks, fail_on
        self.gates: dict[str, threading.Event] = {}
        self.started: list[str] = []
        self.stopped_by_cancel: list[str] = []

    def gate(self, text: str) -> threading.Event:
        return self.gates.setdefault(text, threading.Event())

    def run(self, job, cancel):
        self.started.append(job.text)
        self.gate(job.text).wait(10)
        if job.text == self.fail_on:
            raise RuntimeError("boom")
        try:
            for i in range(self.n_chunks):
                yield Chunk(np.full(1920, i, np.float32), 24000, i, 1, 0, (0, 1), 0.01 * i, i == self.n_chunks - 1)
                if job.text.startswith("slow"):
                    cancel.wait(0.05)
        finally:
            if cancel.is_set():
                self.stopped_by_cancel.append(job.text)


def job(text: str) -> SpeechJob:
    return SpeechJob(text, Voice.preset("vivian"), Sampling(seed=0))


async def collect(ticket):
    return [event async for event in ticket.events()]


def test_jobs_run_in_order_and_waiting_ones_see_their_position():
    async def scenario():
        backend = GatedBackend()
        scheduler = Scheduler(backend, max_queue=8)
        tickets = [scheduler.submit(job(name)) for name in ("a", "b", "c")]
        assert [t.position for t in tickets] == [0, 1, 2]
        tasks = [asyncio.create_task(collect(t)) for t in tickets]
        for name in ("a", "b", "c"):
            backend.gate(name).set()
        results = await asyncio.gather(*tasks)
        scheduler.shutdown()
        return backend, tickets, results

    backend, tickets, results = asyncio.run(scenario())
    assert backend.started == ["a", "b", "c"]
    assert [e.position for e in results[2] if isinstance(e, Queued)][:2] == [2, 1]
    for ticket, events in zip(tickets, results, strict=True):
        assert ticket.state == "done" and ticket.frames == 3
        assert [e.first_frame for e in events if isinstance(e, Chunk)] == [0, 1, 2]


def test_a_full_queue_refuses_new_jobs():
    async def scenario():
        backend = GatedBackend()
        scheduler = Scheduler(backend, max_queue=2)
        running = scheduler.submit(job("a"))
        waiting = [scheduler.submit(job("b")), scheduler.submit(job("c"))]
        with pytest.raises(QueueFull):
            scheduler.submit(job("d"))
        waiting[0].cancel()  # a freed place admits the next one
        scheduler.submit(job("e"))
        for name in ("a", "c", "e"):
            backend.gate(name).set()
        await collect(running)
        scheduler.shutdown()

    asyncio.run(scenario())


def test_cancelling_a_running_job_stops_it_and_frees_the_slot():
    async def scenario():
        backend = GatedBackend(n_chunks=200)
        scheduler = Scheduler(backend, max_queue=8)
        first, second = scheduler.submit(job("slow-a")), scheduler.submit(job("b"))
        backend.gate("slow-a").set()
        backend.gate("b").set()
        async for event in first.events():
            if isinstance(event, Chunk):
                first.cancel()
        events = await collect(second)
        scheduler.shutdown()
        return backend, first, second, events

    backend, first, second, events = asyncio.run(scenario())
    assert first.state == "cancelled" and first.frames < 200
    assert backend.stopped_by_cancel == ["slow-a"]
    assert second.state == "done" and len([e for e in events if isinstance(e, Chunk)]) == 200


def test_cancelling_a_waiting_job_removes_it_before_it_starts():
    async def scenario():
        backend = GatedBackend()
        scheduler = Scheduler(backend, max_queue=8)
        first, second, third = (scheduler.submit(job(n)) for n in ("a", "b", "c"))
        second.cancel()
        assert third.position == 1
        for name in ("a", "c"):
            backend.gate(name).set()
        await collect(first)
        await collect(third)
        assert all(isinstance(e, Queued) for e in await collect(second))
        scheduler.shutdown()
        return backend, second

    backend, second = asyncio.run(scenario())
    assert backend.started == ["a", "c"] and second.state == "cancelled"


def test_a_backend_error_reaches_the_request_and_the_next_job_still_runs():
    async def scenario():
        backend = GatedBackend(fail_on="a")
        scheduler = Scheduler(backend, max_queue=8)
        failing, next_one = scheduler.submit(job("a")), scheduler.submit(job("b"))
        backend.gate("a").set()
        backend.gate("b").set()
        with pytest.raises(RuntimeError, match="boom"):
            await collect(failing)
        events = await collect(next_one)
        scheduler.shutdown()
        return failing, next_one, events

    failing, next_one, events = asyncio.run(scenario())
    assert failing.state == "failed" and next_one.state == "done"
    assert len([e for e in events if isinstance(e, Chunk)]) == 3


def test_capacity_runs_that_many_jobs_at_once():
    async def scenario():
        backend = GatedBackend(capacity=3)
        scheduler = Scheduler(backend, max_queue=8)
        tickets = [scheduler.submit(job(str(i))) for i in range(5)]
        positions = [t.position for t in tickets]
        for i in range(5):
            backend.gate(str(i)).set()
        await asyncio.gather(*(collect(t) for t in tickets))
        scheduler.shutdown()
        return positions

    assert asyncio.run(scenario()) == [0, 0, 0, 1, 2]


def test_the_single_stream_backend_prepares_the_engine_before_any_request(tiny_engine):
    """``EngineBackend`` builds the engine's streamer (on a GPU: captures its graphs) when the server
    starts, so the first request does not pay for it."""
    from server.scheduler import EngineBackend

    engine = tiny_engine("custom_voice")
    engine._single = None
    EngineBackend(engine)
    assert engine._single is not None


def test_a_finished_ticket_keeps_its_status_but_not_its_voice():
    """The status endpoint remembers finished requests; their voices (a clone's reference audio: megabytes) are
    not kept with them."""
    import gc
    import weakref

    async def scenario():
        backend = GatedBackend()
        scheduler = Scheduler(backend, max_queue=8)
        audio = np.zeros(24000 * 60, np.float32)  # a 60 s clone's reference
        alive = weakref.ref(audio)
        ticket = scheduler.submit(SpeechJob("a", Voice("clone", ref_audio=audio), Sampling(seed=0)))
        del audio
        backend.gate("a").set()
        await collect(ticket)
        scheduler.shutdown()
        return scheduler, ticket, alive

    scheduler, ticket, alive = asyncio.run(scenario())
    gc.collect()
    assert scheduler.get(ticket.id) is ticket and ticket.status()["frames"] == 3
    assert alive() is None


class EndlessBackend:
    """Yields 1 s chunks until cancelled for a job called "endless"; three for any other."""

    capacity = 1

    def __init__(self):
        self.cancelled: list[str] = []

    def run(self, job, cancel):
        i = 0
        while job.text == "endless" or i < 3:
            if cancel.wait(0.002):
                self.cancelled.append(job.text)
                return
            yield Chunk(np.zeros(24000, np.float32), 24000, i * 12, 12, 0, (0, 1), 0.0, False)
            i += 1


@pytest.mark.parametrize("limit", ["max_audio_s", "max_unread_audio_s"])
def test_a_stream_past_a_limit_is_stopped_and_frees_its_slot(limit):
    """A stream past its audio limit, or whose reader left that much audio unread, is cancelled, its unread audio
    dropped and its reader told why; the next job runs."""
    from server.scheduler import LimitReached, StreamLimits

    async def scenario():
        backend = EndlessBackend()
        limits = StreamLimits(**{"max_audio_s": 1000.0, "max_unread_audio_s": 1000.0, limit: 5.0})
        scheduler = Scheduler(backend, max_queue=8, limits=limits)
        endless, next_one = scheduler.submit(job("endless")), scheduler.submit(job("b"))
        if limit == "max_audio_s":  # a reader that keeps up
            with pytest.raises(LimitReached) as caught:
                await collect(endless)
            events = await collect(next_one)
        else:  # a reader that reads nothing until the next job has run
            events = await collect(next_one)
            with pytest.raises(LimitReached) as caught:
                await collect(endless)
        scheduler.shutdown()
        return backend, endless, events, caught.value

    backend, endless, events, error = asyncio.run(scenario())
    assert error.code == {"max_audio_s": "audio_too_long", "max_unread_audio_s": "client_too_slow"}[limit]
    assert endless.state == "failed" and 5 < endless.audio_seconds < 10 and endless.unread_seconds == 0
    assert backend.cancelled == ["endless"] and len([e for e in events if isinstance(e, Chunk)]) == 3


class SilentBackend:
    """An async backend whose first job never yields anything (a request lost by an engine): only cancelling its
    task can end it."""

    capacity = 1

    async def run_async(self, job, cancel):
        if job.text == "lost":
            await asyncio.Event().wait()
        yield Chunk(np.zeros(1920, np.float32), 24000, 0, 1, 0, (0, 1), 0.0, True)


def test_cancelling_a_job_whose_backend_never_answers_frees_its_slot():
    async def scenario():
        scheduler = Scheduler(SilentBackend(), max_queue=8)
        lost, next_one = scheduler.submit(job("lost")), scheduler.submit(job("next"))
        await asyncio.sleep(0.05)
        assert lost.state == "running" and next_one.position == 1
        lost.cancel()
        events = await asyncio.wait_for(collect(next_one), 5)
        await asyncio.wait_for(collect(lost), 5)
        scheduler.shutdown()
        return lost, next_one, events

    lost, next_one, events = asyncio.run(scenario())
    assert lost.state == "cancelled" and next_one.state == "done"
    assert len([e for e in events if isinstance(e, Chunk)]) == 1


class CountingAsyncBackend:
    """An async backend of ``capacity`` slots: each job yields one chunk, and the streams it has open are counted."""

    def __init__(self, capacity: int = 1):
        self.capacity, self.open, self.opened = capacity, 0, 0

    async def run_async(self, job, cancel):
        self.open += 1
        self.opened += 1
        try:
            yield Chunk(np.zeros(1920, np.float32), 24000, 0, 1, 0, (0, 1), 0.0, True)
        finally:
            self.open -= 1


def test_cancelling_a_job_before_its_task_first_runs_frees_its_slot():
    """A slot handed to a waiting job starts a task; a client that leaves before that task first runs (a burst of
    live sessions closing together) cancels it unstarted, and its slot is still freed: the next job is served."""

    async def scenario():
        backend = CountingAsyncBackend()
        scheduler = Scheduler(backend, max_queue=8)
        gone = scheduler.submit(job("gone"))  # its task is created, not yet run
        gone.cancel()  # before the loop runs it
        next_one = scheduler.submit(job("next"))
        gone_events = await asyncio.wait_for(collect(gone), 5)
        events = await asyncio.wait_for(collect(next_one), 5)
        status = scheduler.status()
        scheduler.shutdown()
        return backend, gone, gone_events, next_one, events, status

    backend, gone, gone_events, next_one, events, status = asyncio.run(scenario())
    assert gone.state == "cancelled" and gone_events == []
    assert next_one.state == "done" and len([e for e in events if isinstance(e, Chunk)]) == 1
    assert status["running"] == 0 and status["waiting"] == 0
    assert backend.opened == 1 and backend.open == 0  # the cancelled job never opened a stream


def test_a_burst_of_waiting_jobs_cancelled_together_leaves_every_slot_free():
    """Many jobs in line, the running ones finishing as the rest are cancelled in one go (each cancel hands a freed
    slot to the next in line, whose task is then cancelled unstarted): no slot stays held."""

    async def scenario():
        backend = CountingAsyncBackend(capacity=4)
        scheduler = Scheduler(backend, max_queue=100)
        tickets = [scheduler.submit(job(str(i))) for i in range(68)]
        for ticket in reversed(tickets):  # the running ones last: their cancels start the next ones' tasks
            ticket.cancel()
        for ticket in tickets:
            await asyncio.wait_for(collect(ticket), 5)
        status_after = scheduler.status()
        fresh = scheduler.submit(job("fresh"))
        events = await asyncio.wait_for(collect(fresh), 5)
        scheduler.shutdown()
        return backend, tickets, status_after, fresh, events

    backend, tickets, status_after, fresh, events = asyncio.run(scenario())
    assert all(t.state == "cancelled" for t in tickets)
    assert status_after == {"capacity": 4, "running": 0, "waiting": 0, "max_queue": 100}
    assert fresh.state == "done" and len([e for e in events if isinstance(e, Chunk)]) == 1
    assert backend.open == 0


class FailingToStartBackend:
    """An async backend whose ``run_async`` itself raises for a job called "broken"."""

    capacity = 1

    def run_async(self, job, cancel):
        if job.text == "broken":
            raise RuntimeError("cannot start")
        return CountingAsyncBackend().run_async(job, cancel)


def test_a_backend_that_fails_to_start_a_stream_frees_its_slot():
    async def scenario():
        scheduler = Scheduler(FailingToStartBackend(), max_queue=8)
        broken, next_one = scheduler.submit(job("broken")), scheduler.submit(job("next"))
        with pytest.raises(RuntimeError, match="cannot start"):
            await asyncio.wait_for(collect(broken), 5)
        events = await asyncio.wait_for(collect(next_one), 5)
        scheduler.shutdown()
        return broken, next_one, events

    broken, next_one, events = asyncio.run(scenario())
    assert broken.state == "failed" and next_one.state == "done"
    assert len([e for e in events if isinstance(e, Chunk)]) == 1
