"""An unexpected error answers the JSON 500 on a connection that stays open."""

from __future__ import annotations

import httpx
import pytest
from fastapi import Request


@pytest.fixture(scope="module")
def failing_server(start_server, tiny_engine):
    live = start_server(tiny_engine("custom_voice"))

    async def boom():
        raise RuntimeError("a bug")

    async def client_port(request: Request):
        return {"port": request.scope["client"][1]}

    live.app.add_api_route("/test/boom", boom)
    live.app.add_api_route("/test/client-port", client_port)
    return live


def test_a_500_answers_json_and_keeps_the_connection(failing_server, caplog):
    with httpx.Client(base_url=failing_server.url, timeout=10) as client:
        before = client.get("/test/client-port").json()["port"]
        failed = client.get("/test/boom")
        after = client.get("/test/client-port").json()["port"]
    assert failed.status_code == 500
    assert failed.json()["error"] == {"message": "internal error: RuntimeError", "type": "server_error",
                                      "param": None, "code": "internal_error"}
    assert "close" not in failed.headers.get("connection", "")
    assert after == before  # the same socket served all three
    assert sum("RuntimeError: a bug" in (r.exc_text or "") for r in caplog.records) == 1  # one traceback
