"""What the server gives away: the API key read from a file or the environment (not only the command line, which
other users can read), the API's description behind the key, no key in the access log, request ids nobody can
guess, pages no other site can frame, and error messages that do not echo a megabyte back."""

from __future__ import annotations

import logging
import re

import httpx
import pytest
from hypothesis import given
from hypothesis import strategies as st

from main import main
from server.errors import MAX_MESSAGE_CHARS, shortened
from server.settings import ServerSettings

KEY = "s3cret-key"


@pytest.fixture(scope="module")
def keyed(start_server, tiny_engine):
    return start_server(tiny_engine("custom_voice"), settings=ServerSettings(api_key=KEY))


def _served_key(monkeypatch, argv) -> tuple[int, str | None]:
    import uvicorn

    apps = []
    monkeypatch.setattr(uvicorn.Server, "run", lambda self: apps.append(self.config.app))
    code = main(["serve", "--model", "unused", *argv])
    return code, apps[0].state.settings.api_key if apps else None


def test_the_key_comes_from_a_file_the_environment_or_the_command_line(monkeypatch, tmp_path):
    library = ["--library", str(tmp_path / "voices")]
    key_file = tmp_path / "key"
    key_file.write_text(f"{KEY}\n", encoding="utf-8")
    monkeypatch.delenv("ORATOR_API_KEY", raising=False)
    assert _served_key(monkeypatch, library) == (3, None)
    assert _served_key(monkeypatch, [*library, "--api-key-file", str(key_file)]) == (3, KEY)
    monkeypatch.setenv("ORATOR_API_KEY", "from-the-environment")
    assert _served_key(monkeypatch, library) == (3, "from-the-environment")
    assert _served_key(monkeypatch, [*library, "--api-key-file", str(key_file)]) == (3, KEY)
    assert _served_key(monkeypatch, [*library, "--api-key", "given"]) == (3, "given")
    # a key from the environment is a key: listening beyond this machine is allowed with it
    assert _served_key(monkeypatch, [*library, "--host", "0.0.0.0"]) == (3, "from-the-environment")


@pytest.mark.parametrize(("content", "message"), [
    (None, "cannot read the API key file"), (b"", "empty API key"), (b"  \n\n", "empty API key"),
    (b"\xff\xfe", "not UTF-8"), (b"k" * 5000, "larger than"), ("ключ".encode(), "printable ASCII"),
    (b"bad\x01key", "printable ASCII")])
def test_a_key_file_that_gives_no_usable_key_stops_serve(monkeypatch, tmp_path, capsys, content, message):
    key_file = tmp_path / "key"
    if content is not None:
        key_file.write_bytes(content)
    monkeypatch.delenv("ORATOR_API_KEY", raising=False)
    assert _served_key(monkeypatch, ["--api-key-file", str(key_file)]) == (2, None)
    assert message in capsys.readouterr().err


def test_the_key_flags_exclude_each_other(capsys):
    with pytest.raises(SystemExit) as exited:
        main(["serve", "--model", "unused", "--api-key", "a", "--api-key-file", "b"])
    assert exited.value.code == 2 and "not allowed with" in capsys.readouterr().err


def test_the_api_description_needs_the_key_when_one_is_set(keyed, live_server):
    for path in ("/docs", "/openapi.json"):
        refused = httpx.get(f"{keyed.url}{path}")
        assert refused.status_code == 401 and refused.json()["error"]["code"] == "invalid_api_key"
        assert httpx.get(f"{keyed.url}{path}", headers={"Authorization": f"Bearer {KEY}"}).status_code == 200
        assert httpx.get(f"{live_server.url}{path}").status_code == 200  # no key set: open, as the rest is
    assert httpx.get(f"{keyed.url}/health").status_code == 200 and httpx.get(f"{keyed.url}/ready").status_code == 200


def test_a_key_in_the_query_never_reaches_the_access_log(keyed):
    """uvicorn logs each request's path with its query; a key put there (the server takes none from a query, but
    clients do send them) is redacted, whatever else the query holds."""
    records: list[logging.LogRecord] = []
    handler = logging.Handler()
    handler.emit = records.append
    access = logging.getLogger("uvicorn.access")
    level = access.level
    access.addHandler(handler)
    access.setLevel(logging.INFO)
    try:
        httpx.get(f"{keyed.url}/v1/models?api_key={KEY}&voice=x")
        httpx.get(f"{keyed.url}/health?x=1&access_token={KEY}", headers={"Authorization": f"Bearer {KEY}"})
        httpx.get(f"{keyed.url}/v1/models?API%5FKEY={KEY}")
    finally:
        access.removeHandler(handler)
        access.setLevel(level)
    lines = [record.getMessage() for record in records]
    assert len(lines) == 3 and not any(KEY in line for line in lines)
    assert "/v1/models?api_key=[redacted]&voice=x" in lines[0] and "access_token=[redacted]" in lines[1]


def test_request_ids_cannot_be_guessed(live_server):
    body = {"model": "orator", "voice": "vivian", "input": "Hi.", "response_format": "pcm", "max_frames": 1}
    ids = [httpx.post(f"{live_server.url}/v1/audio/speech", json=body, timeout=60).headers["x-request-id"]
           for _ in range(2)]
    assert ids[0] != ids[1] and all(re.fullmatch(r"speech-[A-Za-z0-9_-]{16}", i) for i in ids)  # 96 random bits
    for guess in ("speech-1", "speech-2", "speech-0"):
        assert httpx.get(f"{live_server.url}/v1/audio/speech/{guess}").status_code == 404
    assert httpx.get(f"{live_server.url}/v1/audio/speech/{ids[0]}").json()["state"] == "done"


@pytest.mark.parametrize("path", ["/", "/web/app.js", "/docs", "/health", "/no-such-page"])
def test_no_other_site_can_frame_the_pages(live_server, path):
    headers = httpx.get(f"{live_server.url}{path}").headers
    assert headers["x-frame-options"] == "DENY"
    assert headers["content-security-policy"] == "frame-ancestors 'none'"


def test_an_error_does_not_echo_a_huge_field_back(live_server):
    huge = "x" * 1_000_000
    answers = [
        httpx.get(f"{live_server.url}/v1/audio/speech/{'y' * 6000}"),
        httpx.post(f"{live_server.url}/v1/audio/speech", json={"model": "orator", "input": "Hi.", "voice": huge}),
        httpx.post(f"{live_server.url}/v1/audio/voices", json={"name": "Big", "description": "calm",
                                                                 "language": huge}),
    ]
    for answer in answers:
        assert 400 <= answer.status_code < 500 and len(answer.content) < 2 * MAX_MESSAGE_CHARS
        assert answer.json()["error"]["message"]


@given(st.text(max_size=3000))
def test_a_shortened_message_keeps_its_start_and_end_within_the_limit(message):
    short = shortened(message)
    assert len(short) <= MAX_MESSAGE_CHARS
    if len(message) <= MAX_MESSAGE_CHARS:
        assert short == message
    else:
        assert message.startswith(short[:600]) and message.endswith(short[-300:])
