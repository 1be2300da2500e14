"""``/v1/models`` and ``/v1/models/{id}``: the one model, created when the server started."""

from __future__ import annotations

import time

import httpx
import openai
import pytest
from openai import OpenAI


@pytest.fixture(scope="module")
def fresh_server(start_server, tiny_engine):
    before = int(time.time())
    live = start_server(tiny_engine("custom_voice"))
    live.started_at = (before, int(time.time()))
    return live


def test_models_list_and_retrieve_the_one_model_created_at_start(fresh_server):
    client = OpenAI(base_url=f"{fresh_server.url}/v1", api_key="unused", max_retries=0)
    listed = client.models.list().data
    retrieved = client.models.retrieve("orator")
    low, high = fresh_server.started_at
    assert [m.id for m in listed] == ["orator"] and retrieved.id == "orator"
    assert isinstance(retrieved.created, int) and low <= retrieved.created <= high
    assert listed[0].created == retrieved.created and retrieved.model_dump()["model_type"] == "custom_voice"
    assert retrieved.model_dump()["display_name"] == "CustomVoice 0.6B"  # what the web page's header shows
    with pytest.raises(openai.NotFoundError):
        client.models.retrieve("gpt-4o")
    missing = httpx.get(f"{fresh_server.url}/v1/models/nothing")
    assert missing.status_code == 404 and missing.json()["error"]["code"] == "model_not_found"
