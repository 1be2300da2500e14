"""What Ray Serve's replicas tell each other: their state for every ``/health``, the status of their requests, and
each one's id on its responses.

Ray Serve's proxy sends ``/health`` to any one replica, and no replica sees the others, so each replica reports
its state (id, process, node, model status, queue, requests served) every ``REPORT_PERIOD_S`` to one small
``ReplicaRegistry`` actor per application, and ``/health`` answers with every report. A report older than
``STALE_AFTER_S`` is dropped: its replica died or hangs (Ray replaces it; the new one reports under its own id).
The registry is detached (a Serve application outlives the command that deployed it) and holds no CPU.
The registry also relays status lookups: the proxy may send ``GET /v1/audio/speech/{id}`` to a replica other than
the one whose id it is (ids name their replica: ``speech-<replica>-N``); that replica asks the registry
(``ask``), which hands the question to the owner, waiting on ``questions``, and returns its answer
(``answer``) within ``ASK_TIMEOUT_S``, else a 404.
``ReplicaHeader`` marks every HTTP response with ``X-Orator-Replica``, so a client can tell which replica served it,
and moves the app's ``X-Request-Id`` to ``X-Orator-Request-Id``: Ray's proxy adds its own ``X-Request-Id`` to every
response (the id in Ray's logs), and a response must not carry two.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import os
import re
import time

import ray

log = logging.getLogger("orator.server")
REPLICA_HEADER = "x-orator-replica"
REQUEST_ID_HEADER = "x-orator-request-id"  # the speech request's id, for ``GET /v1/audio/speech/{id}``
REPORT_PERIOD_S = 1.0
STALE_AFTER_S = 5.0  # several missed reports: a replica under load still reports once a second
REGISTRY_NAMESPACE = "orator"
ASK_TIMEOUT_S = 5.0  # a status lookup relayed to a replica that does not answer (dead, or busy) gives up
POLL_S = 10.0  # a replica waiting for questions asks again this often (its registry may have been restarted)


@ray.remote(num_cpus=0)
class ReplicaRegistry:
    """The latest report of each replica of one application, and the status lookups relayed between them."""

    def __init__(self):
        self._reports: dict[str, tuple[float, dict]] = {}
        self._questions: dict[str, asyncio.Queue] = {}  # by replica: (question id, request id) for it to answer
        self._answers: dict[int, asyncio.Future] = {}
        self._ids = itertools.count()

    def report(self, replica: str, state: dict) -> None:
        self._reports[replica] = (time.monotonic(), state)

    def forget(self, replica: str) -> None:
        self._reports.pop(replica, None)
        self._questions.pop(replica, None)

    def replicas(self) -> list[dict]:
        now = time.monotonic()
        for replica in [r for r, (at, _) in self._reports.items() if now - at > STALE_AFTER_S]:
            del self._reports[replica]
            self._questions.pop(replica, None)
        return sorted(({**state, "report_age_s": round(now - at, 2)} for at, state in self._reports.values()),
                      key=lambda state: state["replica"])

    async def ask(self, replica: str, request_id: str) -> dict | None:
        """The status ``replica`` gives for ``request_id``; None if it does not know it or does not answer."""
        if replica not in self._reports:  # no such replica alive
            return None
        question = next(self._ids)
        self._answers[question] = asyncio.get_running_loop().create_future()
        self._questions.setdefault(replica, asyncio.Queue()).put_nowait((question, request_id))
        try:
            return await asyncio.wait_for(self._answers[question], ASK_TIMEOUT_S)
        except TimeoutError:
            return None
        finally:
            del self._answers[question]

    async def questions(self, replica: str) -> list[tuple[int, str]]:
        """The lookups waiting for ``replica``, as soon as there is one (or none after ``POLL_S``)."""
        queue = self._questions.setdefault(replica, asyncio.Queue())
        try:
            first = await asyncio.wait_for(queue.get(), POLL_S)
        except TimeoutError:
            return []
        waiting = [first]
        while not queue.empty():
            waiting.append(queue.get_nowait())
        return waiting

    def answer(self, question: int, status: dict | None) -> None:
        future = self._answers.get(question)
        if future is not None and not future.done():
            future.set_result(status)


def registry_name(app_name: str) -> str:
    return f"replicas:{app_name}"


def registry(app_name: str):
    """The application's registry, created by whichever replica asks first."""
    return ReplicaRegistry.options(name=registry_name(app_name), namespace=REGISTRY_NAMESPACE, lifetime="detached",
                                   get_if_exists=True).remote()


def remove_registry(app_name: str) -> None:
    """End the application's registry (when the application is deleted); nothing if there is none."""
    try:
        ray.kill(ray.get_actor(registry_name(app_name), namespace=REGISTRY_NAMESPACE))
    except ValueError:
        pass


class ReplicaReporter:
    """One replica's side: its state, sent to the registry while the replica runs."""

    def __init__(self, app_name: str, replica: str):
        self.replica, self.registry = replica, registry(app_name)
        self.pid, self.node = os.getpid(), ray.util.get_node_ip_address()
        self.served = 0  # HTTP responses started
        self.app = None  # the replica's FastAPI app, once built
        self._tasks: list[asyncio.Task] = []

    def state(self) -> dict:
        app = self.app
        status = "loading"
        if app is not None and app.state.engine is not None:
            status = "ok"
        elif app is not None and app.state.load_error:
            status = "failed"
        state = {"replica": self.replica, "pid": self.pid, "node": self.node, "status": status,
                 "served": self.served}
        if app is not None and app.state.scheduler is not None:
            state["queue"] = app.state.scheduler.status()
        return state

    def start(self) -> None:
        loop = asyncio.get_running_loop()
        self._tasks = [loop.create_task(self._report_forever()), loop.create_task(self._answer_forever())]

    async def stop(self) -> None:
        for task in self._tasks:
            task.cancel()
        try:
            await self.registry.forget.remote(self.replica)
        except ray.exceptions.RayError:  # the registry is gone with the application
            pass

    async def health(self) -> dict:
        """What ``/health`` adds: this replica's id and every live replica's report (its own as it is now)."""
        own = {**self.state(), "report_age_s": 0.0}
        try:
            reports = await asyncio.wait_for(self.registry.replicas.remote(), timeout=5)
        except (ray.exceptions.RayError, TimeoutError) as e:  # the answering replica's own state stays true
            return {"replica": self.replica, "replicas": [own], "replicas_error": str(e).splitlines()[0]}
        others = [r for r in reports if r["replica"] != self.replica]
        return {"replica": self.replica, "replicas": sorted([own, *others], key=lambda r: r["replica"])}

    async def status_elsewhere(self, request_id: str) -> dict | None:
        """The status of a request another replica served (its id names it), through the registry; else None."""
        owner = _REQUEST_ID.fullmatch(request_id)
        if owner is None or owner["replica"] == self.replica:
            return None
        try:
            return await self.registry.ask.remote(owner["replica"], request_id)
        except ray.exceptions.RayError:
            return None

    async def _answer_forever(self) -> None:
        from server.speech import request_status

        while True:
            try:
                for question, request_id in await self.registry.questions.remote(self.replica):
                    scheduler = self.app.state.scheduler if self.app is not None else None
                    self.registry.answer.remote(question, request_status(scheduler, request_id))
            except ray.exceptions.RayError as e:  # a registry restarting: ask again after a pause
                log.warning("replica %s cannot take status lookups: %s", self.replica, str(e).splitlines()[0])
                await asyncio.sleep(REPORT_PERIOD_S)

    async def _report_forever(self) -> None:
        while True:
            try:
                await self.registry.report.remote(self.replica, self.state())
            except ray.exceptions.RayError as e:  # a registry restarting: the next report goes through
                log.warning("replica %s cannot report its state: %s", self.replica, str(e).splitlines()[0])
            await asyncio.sleep(REPORT_PERIOD_S)


_REQUEST_ID = re.compile(r"speech-(?P<replica>[A-Za-z0-9]+)-[A-Za-z0-9_-]+")  # the rest: Scheduler's token


class ReplicaHeader:
    """ASGI middleware: ``X-Orator-Replica`` on every HTTP response, counted in the replica's ``served``."""

    def __init__(self, app, reporter: ReplicaReporter):
        self.app, self.reporter = app, reporter
        self.header = (REPLICA_HEADER.encode(), reporter.replica.encode())

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)

        async def marked(message):
            if message["type"] == "http.response.start":
                self.reporter.served += 1
                headers = [(REQUEST_ID_HEADER.encode(), value) if name.lower() == b"x-request-id" else (name, value)
                           for name, value in message.get("headers", [])]
                message = {**message, "headers": [*headers, self.header]}
            await send(message)

        return await self.app(scope, receive, marked)
