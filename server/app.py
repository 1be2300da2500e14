"""FastAPI wiring: ``create_app(engine_provider, library_dir, settings)``.

``engine_provider`` is called once at startup in a worker thread (loading a model takes a while;
``/health`` says ``loading`` meanwhile, with how far it got, and the API answers 503).
``/health`` is liveness: 200 whenever the process answers, its body saying how far the startup is and whether the
server is ready. ``/ready`` is readiness: 200 once the model is loaded and warmed up, 503 before that, after a
failed load, and while the scheduler is stalled (every slot ``stall_s`` without a frame while requests wait).
``make_backend(engine, progress)`` turns the engine into the scheduler's ``StreamBackend``, telling
``progress(done, total, what)`` how far its warm-up is (minutes for ``--batch`` on a GPU the first time); the
default runs ``Engine.stream`` one request at a time. ``load_first=True`` makes the app's startup itself wait for
the load and fail when it fails: a Ray Serve replica (``server.ray_serve``) is then only routed to once its model
is loaded and warmed up. ``request_id_prefix`` starts every speech request's id (a replica's names the replica:
ids stay unique behind one proxy).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from contextlib import asynccontextmanager
from pathlib import Path

from fastapi import FastAPI
from fastapi.responses import FileResponse, JSONResponse
from fastapi.staticfiles import StaticFiles

from engine import Engine
from engine.core.config import model_title
from engine.core.runtime import settle_heap
from server import speech, voices
from server import speech_stream as live
from server.auth import RequestGuard
from server.errors import APIError, UnexpectedErrors, install_error_handlers
from server.formats import supported_formats
from server.scheduler import EngineBackend, Scheduler, StreamBackend, StreamLimits, WarmupProgress
from server.settings import ServerSettings
from server.voice_library import VoiceStore

log = logging.getLogger("orator.server")
WEB_DIR = Path(__file__).parent / "web"


def create_app(engine_provider: Callable[[], Engine], library_dir, settings: ServerSettings | None = None,
               make_backend: Callable[[Engine, WarmupProgress], StreamBackend] = EngineBackend,
               load_first: bool = False, request_id_prefix: str = "speech-") -> FastAPI:
    settings = settings or ServerSettings()

    @asynccontextmanager
    async def lifespan(app: FastAPI):
        load = asyncio.create_task(_load(app, engine_provider, make_backend, settings, request_id_prefix))
        if load_first:
            await load
            if app.state.load_error:
                raise RuntimeError(f"cannot load the model: {app.state.load_error}")
        try:
            yield
        finally:
            load.cancel()
            if app.state.scheduler is not None:
                app.state.scheduler.shutdown()

    app = FastAPI(title="Orator speech server", lifespan=lifespan, docs_url="/docs", redoc_url=None)
    app.state.settings = settings
    app.state.store = VoiceStore(library_dir, max_voices=settings.max_voices)
    app.state.engine = None
    app.state.scheduler = None
    app.state.load_error = None
    app.state.loading = Loading()
    app.state.health_extra = None  # an async callable whose dict /health adds (a Ray replica: every replica)
    app.state.status_elsewhere = None  # async (request id) -> status or None, for ids this server does not hold
    app.state.engine_or_503 = lambda: _engine_or_503(app)
    install_error_handlers(app)
    app.include_router(speech.router)
    app.include_router(live.router)
    app.include_router(voices.router)

    @app.get("/health")
    async def health():
        state = "ok" if app.state.engine else ("failed" if app.state.load_error else "loading")
        answer = {"status": state, "model_loaded": app.state.engine is not None, "ready": _readiness(app)[0]}
        if app.state.scheduler is not None:
            answer["queue"] = app.state.scheduler.status()
        if app.state.load_error:
            answer["error"] = app.state.load_error
        elif app.state.engine is None:
            answer["loading"] = app.state.loading.status()
        if app.state.health_extra is not None:
            answer.update(await app.state.health_extra())
        return answer

    @app.get("/ready")
    async def ready():
        is_ready, answer = _readiness(app)
        if app.state.scheduler is not None:
            answer["queue"] = app.state.scheduler.status()
        return JSONResponse(answer, status_code=200 if is_ready else 503,
                            headers=None if is_ready else {"Retry-After": "5"})

    started = int(time.time())  # a model's ``created``: when this server started serving it

    def describe_model() -> dict:
        engine = _engine_or_503(app)
        return {"id": settings.model_name, "object": "model", "owned_by": "orator", "created": started,
                "model_type": engine.model_type, "model_size": engine.model_size,
                "display_name": model_title(engine.model_type, engine.model_size), "speakers": engine.speakers,
                "languages": engine.languages, "response_formats": list(supported_formats()),
                "sample_rate": engine.sample_rate}

    @app.get("/v1/models")
    async def models():
        return {"object": "list", "data": [describe_model()]}

    @app.get("/v1/models/{model_id}")
    async def model(model_id: str):
        if model_id != settings.model_name:
            raise APIError(404, f"no model {model_id!r}; this server serves {settings.model_name!r}",
                           param="model", code="model_not_found")
        return describe_model()

    @app.get("/", include_in_schema=False)
    async def index():
        return FileResponse(WEB_DIR / "index.html")

    app.mount("/web", StaticFiles(directory=WEB_DIR), name="web")
    app.add_middleware(UnexpectedErrors)  # added first: the innermost, inside the guard
    app.add_middleware(RequestGuard, settings=settings)
    return app


class Loading:
    """How far the startup is: its stage, and the warm-up's pieces done of all (``WarmupProgress``)."""

    def __init__(self):
        self.started = time.perf_counter()
        self.stage, self.done, self.total = "loading the model", 0, 0

    def warming_up(self, done: int, total: int, what: str) -> None:
        self.stage, self.done, self.total = f"warming up: {what}", done, total
        log.info("warm-up %d/%d: %s (%.0f s since start)", done, total, what, time.perf_counter() - self.started)

    def status(self) -> dict:
        return {"stage": self.stage, "done": self.done, "total": self.total,
                "elapsed_s": round(time.perf_counter() - self.started, 1)}


async def _load(app: FastAPI, engine_provider, make_backend, settings: ServerSettings, id_prefix: str) -> None:
    loading: Loading = app.state.loading
    try:
        engine = await asyncio.to_thread(engine_provider)
        # captures graphs: keep /health answering
        backend = await asyncio.to_thread(make_backend, engine, loading.warming_up)
        loading.stage = "collecting garbage"
        await asyncio.to_thread(settle_heap)  # a full garbage collection over all that would stall every stream
        app.state.scheduler = Scheduler(backend, settings.max_queue,
                                        limits=StreamLimits(settings.max_audio_s, settings.max_unread_audio_s),
                                        id_prefix=id_prefix, stall_s=settings.stall_s)
        app.state.engine = engine
        log.info("model loaded: %s %s", engine.model_type, engine.model_size)
    except Exception as e:  # reported by /health; the API answers 503
        log.exception("cannot load the model")
        app.state.load_error = f"{type(e).__name__}: {e}"


def _readiness(app: FastAPI) -> tuple[bool, dict]:
    """Whether the server can serve a request now, and why not: what ``/ready`` answers."""
    if app.state.load_error:
        return False, {"status": "failed", "reason": f"the model failed to load: {app.state.load_error}"}
    if app.state.engine is None:
        return False, {"status": "loading", "reason": "the model is loading", "loading": app.state.loading.status()}
    stalled = app.state.scheduler.stalled()
    if stalled is not None:
        return False, {"status": "stalled", "reason": f"no generation slot has produced audio for {stalled:.0f} s "
                                                      "while requests wait", "stalled_s": round(stalled, 1)}
    return True, {"status": "ready"}


def _engine_or_503(app: FastAPI) -> Engine:
    if app.state.engine is None:
        reason = app.state.load_error or "the model is still loading"
        raise APIError(503, f"speech is unavailable: {reason}", code="model_unavailable",
                       headers={"Retry-After": "5"})
    return app.state.engine
