"""Live servers for the server tests: uvicorn on 127.0.0.1 (a free port) in a thread, on tiny checkpoints.

``live_server`` (session): the tiny CustomVoice engine and a library folder of its own.
``start_server(...)`` starts more (other settings, backends, models or HTTP parsers); all stop at session end.
"""

from __future__ import annotations

import socket
import threading
import time
from dataclasses import dataclass, replace
from pathlib import Path

import httpx
import pytest
import uvicorn

from server.app import create_app
from server.connections import uvicorn_config
from server.settings import ServerSettings


@dataclass
class LiveServer:
    url: str
    app: object
    library: Path
    engine: object
    server: uvicorn.Server
    thread: threading.Thread

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=10)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def serve(engine, library: Path, settings: ServerSettings | None = None, wait_for_model: bool = True,
          http: str = "auto", **create_kwargs) -> LiveServer:
    """A live server; returned once its model is loaded, or once it answers at all (``wait_for_model=False``).

    It runs with ``python main.py serve``'s protocol and limits (``server.connections.uvicorn_config``), on
    uvicorn's ``http`` parser ("auto": httptools; "h11").
    """
    settings = replace(settings or ServerSettings(), host="127.0.0.1", port=_free_port())
    app = create_app(lambda: engine, library, settings, **create_kwargs)
    server = uvicorn.Server(uvicorn_config(app, settings, http=http, log_level="warning", lifespan="on"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    url = f"http://127.0.0.1:{settings.port}"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"{url}/health", timeout=2).json().get("model_loaded") or not wait_for_model:
                return LiveServer(url, app, library, engine, server, thread)
        except httpx.TransportError:
            pass
        time.sleep(0.05)
    server.should_exit = True
    raise RuntimeError("the test server did not start")


@pytest.fixture(scope="session")
def start_server(tmp_path_factory):
    started: list[LiveServer] = []

    def start(engine, library: Path | None = None, settings: ServerSettings | None = None,
              **kwargs) -> LiveServer:
        live = serve(engine, library or tmp_path_factory.mktemp("library"), settings, **kwargs)
        started.append(live)
        return live

    yield start
    for live in started:
        live.stop()


@pytest.fixture(scope="session")
def live_server(start_server, tiny_engine) -> LiveServer:
    return start_server(tiny_engine("custom_voice"))


@pytest.fixture
def client(live_server):
    from openai import OpenAI

    return OpenAI(base_url=f"{live_server.url}/v1", api_key="unused", max_retries=0, timeout=120)
