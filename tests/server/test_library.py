"""The server's voice library (server/voice_library.py): the engine library's errors as API errors, with the statuses
and codes a client sees and no file paths; ``--max-voices`` reaching it. (The library itself, its listing and its
name rules: tests/engine/test_library.py.)"""

from __future__ import annotations

import pytest

from engine import Voice
from server.errors import APIError
from server.voice_library import VoiceStore, checked_name


@pytest.fixture
def store(tmp_path):
    return VoiceStore(tmp_path / "voices", max_voices=2)


def refused(call, *args) -> APIError:
    with pytest.raises(APIError) as error:
        call(*args)
    return error.value


def test_each_library_error_has_its_status_and_code(store):
    store.save(Voice.preset("vivian"), "Anna")
    cases = [
        (checked_name, ("a/b",), 400, "invalid_name", "name"),
        (checked_name, ("语" * 80,), 400, "invalid_name", "name"),
        (store.save, (Voice.preset("ryan"), "ANNA"), 409, "voice_exists", "name"),
        (store.load, ("Nobody",), 404, "voice_not_found", "voice"),
        (store.delete, ("Nobody",), 404, "voice_not_found", "name"),
    ]
    for call, args, status, code, param in cases:
        error = refused(call, *args)
        assert (error.status, error.code, error.param) == (status, code, param), args
    store.save(Voice.preset("ryan"), "Bert")
    full = refused(store.save, Voice.preset("eric"), "Carl")
    assert (full.status, full.code) == (507, "library_full") and "at most 2" in full.message
    assert store.names() == ["Anna", "Bert"]


def test_an_unreadable_voice_is_a_500_without_paths_and_can_be_deleted(store):
    (store.folder / "Broken.voice").write_bytes(b"\x10\x00\x00\x00\x00\x00\x00\x00{not json at all}")
    entry = store.entries()[0]
    assert entry.name == "Broken" and not entry.readable
    error = refused(store.load, "broken")
    assert (error.status, error.code) == (500, "voice_file_error")
    assert "Broken" in error.message and "Delete" in error.message and str(store.folder) not in error.message
    assert store.delete("Broken") == "Broken" and store.names() == []


def test_max_voices_reaches_the_server(monkeypatch):
    import uvicorn

    import server.app
    from main import main

    made = {}
    monkeypatch.setattr(server.app, "create_app", lambda provider, library, settings, **kw: made.update(s=settings))
    monkeypatch.setattr(uvicorn.Server, "run", lambda self, *args, **kw: setattr(self, "started", True))
    assert main(["serve", "--model", "unused", "--max-voices", "5"]) == 0
    assert made["s"].max_voices == 5
