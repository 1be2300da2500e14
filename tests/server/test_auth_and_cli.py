"""The API key guard, ``python main.py serve``'s refusal to listen openly without one, and what it runs on."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import openai
import pytest
from openai import OpenAI

from main import main
from server.settings import MAX_WS_MESSAGE_BYTES, ServerSettings

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def keyed_server(start_server, tiny_engine):
    return start_server(tiny_engine("custom_voice"), settings=ServerSettings(api_key="s3cret"))


def test_v1_needs_the_bearer_key(keyed_server):
    r = httpx.get(f"{keyed_server.url}/v1/models")
    assert r.status_code == 401 and r.json()["error"]["type"] == "authentication_error"
    wrong = OpenAI(base_url=f"{keyed_server.url}/v1", api_key="guess", max_retries=0)
    with pytest.raises(openai.AuthenticationError):
        wrong.models.list()
    right = OpenAI(base_url=f"{keyed_server.url}/v1", api_key="s3cret", max_retries=0)
    assert right.models.list().data[0].id == "orator"


def test_page_and_health_stay_open_for_the_browser(keyed_server):
    assert httpx.get(f"{keyed_server.url}/health").status_code == 200
    page = httpx.get(f"{keyed_server.url}/")
    assert page.status_code == 200 and "Orator" in page.text
    assert httpx.get(f"{keyed_server.url}/web/app.js").status_code == 200


@pytest.mark.parametrize("host", ["0.0.0.0", "192.168.1.20", "::"])
def test_serve_refuses_an_open_host_without_a_key(host, capsys):
    assert main(["serve", "--model", "unused", "--host", host]) == 2
    assert "--api-key" in capsys.readouterr().err


def test_serve_hands_every_connection_limit_to_uvicorn(monkeypatch, tmp_path):
    import uvicorn

    from server.connections import ConnectionLimits

    configs = []
    monkeypatch.setattr(uvicorn.Server, "run", lambda self: configs.append(self.config))
    assert main(["serve", "--model", "unused", "--library", str(tmp_path), "--port", "8123", "--header-timeout",
                 "3.5", "--keep-alive", "2", "--max-connections", "100", "--limit-concurrency", "90"]) == 3
    config = configs[0]
    assert (config.host, config.port, config.timeout_keep_alive) == ("127.0.0.1", 8123, 2)
    assert config.limit_concurrency == 91  # uvicorn refuses at its limit: 90 are served, the 91st answers 503
    assert issubclass(config.http, ConnectionLimits)
    assert (config.http.header_timeout_s, config.http.max_connections) == (3.5, 100)
    assert config.ws_max_size == MAX_WS_MESSAGE_BYTES and not config.ws_per_message_deflate


def test_serve_hands_the_live_text_limits_to_the_app(monkeypatch, tmp_path):
    import uvicorn

    apps = []
    monkeypatch.setattr(uvicorn.Server, "run", lambda self: apps.append(self.config.app))
    main(["serve", "--model", "unused", "--library", str(tmp_path), "--live-text-timeout", "4.5",
          "--max-live-chars", "500"])
    settings = apps[0].state.settings
    assert (settings.live_text_timeout_s, settings.max_live_chars) == (4.5, 500)


def test_serve_insecure_warns_that_anyone_on_the_network_can_use_it(monkeypatch, tmp_path, capsys):
    import uvicorn

    monkeypatch.setattr(uvicorn.Server, "run", lambda self: None)
    main(["serve", "--model", "unused", "--library", str(tmp_path), "--host", "0.0.0.0", "--insecure"])
    assert "anyone who can reach this machine on the network can use the server" in capsys.readouterr().err
    main(["serve", "--model", "unused", "--library", str(tmp_path), "--insecure"])  # loopback: nothing to warn of
    main(["serve", "--model", "unused", "--library", str(tmp_path), "--host", "0.0.0.0", "--api-key", "k"])
    assert "WARNING" not in capsys.readouterr().err


@pytest.mark.parametrize("flags", [["--header-timeout", "0"], ["--keep-alive", "-1"], ["--max-connections", "0"],
                                   ["--max-connections", "10", "--limit-concurrency", "20"],
                                   ["--live-text-timeout", "0"], ["--max-live-chars", "0"]])
def test_serve_refuses_a_limit_out_of_range(flags, capsys):
    assert main(["serve", "--model", "unused", *flags]) == 2
    assert "serve:" in capsys.readouterr().err


def test_serve_decoder_dtype_and_precision_default_to_the_plan_and_reach_the_engine(monkeypatch, capsys):
    """``--decoder-dtype``: the plan's unless one is asked for, other names refused by the parser, and the choice
    handed to ``Engine.from_pretrained`` as a torch dtype; ``--precision`` fast or exact, handed on as it is."""
    import torch

    from engine import Engine
    from main import build_parser
    from server.engine_loading import load_engine

    parser = build_parser()
    assert parser.parse_args(["serve", "--model", "m"]).decoder_dtype is None
    assert parser.parse_args(["serve", "--model", "m"]).precision is None
    assert parser.parse_args(["serve", "--model", "m", "--decoder-dtype", "bfloat16"]).decoder_dtype == "bfloat16"
    assert parser.parse_args(["serve", "--model", "m", "--precision", "exact"]).precision == "exact"
    for wrong in (["--decoder-dtype", "int8"], ["--precision", "small"]):
        with pytest.raises(SystemExit):
            parser.parse_args(["serve", "--model", "m", *wrong])
        assert wrong[0] in capsys.readouterr().err
    seen = []
    monkeypatch.setattr(Engine, "from_pretrained", lambda model, **kw: seen.append(kw))
    load_engine("m", "cpu", None, "bfloat16")
    load_engine("m", "cpu", "float32", "float32", "exact")
    assert seen == [{"device": "cpu", "dtype": None, "decoder_dtype": torch.bfloat16, "precision": None},
                    {"device": "cpu", "dtype": torch.float32, "decoder_dtype": torch.float32, "precision": "exact"}]


def test_serve_command_starts_uvicorn_with_the_model(tiny_model_dir, tmp_path):
    port = _free_port()
    command = [sys.executable, "main.py", "serve", "--model", str(tiny_model_dir("custom_voice")), "--port",
               str(port), "--device", "cpu", "--library", str(tmp_path / "voices")]
    process = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and process.poll() is None:
            try:
                if httpx.get(f"http://127.0.0.1:{port}/health", timeout=1).json()["model_loaded"]:
                    break
            except httpx.TransportError:
                pass
            time.sleep(0.2)
        models = httpx.get(f"http://127.0.0.1:{port}/v1/models").json()["data"]
        assert models[0]["model_type"] == "custom_voice"
        assert (tmp_path / "voices").is_dir()
    finally:
        process.terminate()
        process.wait(30)


def test_serve_runs_on_httptools_and_uvloop():
    """``serve`` leaves uvicorn's HTTP parser and event loop on "auto"; the server extra installs httptools and
    uvloop, which "auto" then picks instead of h11 and asyncio: the event loop, which shares a GIL with the
    engine's loop thread, spends less time on each request and chunk."""
    import uvicorn
    import uvloop
    from uvicorn.protocols.http.auto import AutoHTTPProtocol
    from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

    assert AutoHTTPProtocol is HttpToolsProtocol
    loop = uvicorn.Config(app=None).get_loop_factory()()
    try:
        assert isinstance(loop, uvloop.Loop)
    finally:
        loop.close()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]
