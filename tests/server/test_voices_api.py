"""The voice library API: upload clones, add designed and preset voices, list, speak, delete, survive restarts;
voices the model cannot use refused at creation, unreadable files, the cap, file work off the event loop, and
error messages without temporary paths or the library's names."""

from __future__ import annotations

import io
import json
import re
import tempfile
import threading

import httpx
import numpy as np
import pytest
import soundfile as sf

from engine import Voice, load_voice, save_voice
from server.settings import ServerSettings
from tests.server.helpers import SAMPLES_PER_FRAME, engine_pcm, pcm_close


def reference_wav(seconds: float = 2.0, rate: int = 16000) -> bytes:
    t = np.arange(int(seconds * rate)) / rate
    rng = np.random.default_rng(0)
    voiced = 0.3 * np.sin(2 * np.pi * 150 * t) * (1 + 0.5 * np.sin(2 * np.pi * 3 * t))
    samples = voiced + 0.02 * rng.standard_normal(t.size)
    buffer = io.BytesIO()
    sf.write(buffer, samples.astype(np.float32), rate, format="WAV")
    return buffer.getvalue()


def upload(url: str, name: str, data: bytes, **fields) -> httpx.Response:
    return httpx.post(f"{url}/v1/audio/voices", data={"name": name, **fields},
                      files={"audio_sample": ("ref.wav", data, "audio/wav")}, timeout=120)


def speak(url: str, voice, **fields) -> httpx.Response:
    body = {"model": "orator", "input": "Hello.", "voice": voice, "response_format": "pcm", "max_frames": 2,
            "seed": 4, **fields}
    return httpx.post(f"{url}/v1/audio/speech", json=body, timeout=120)


def library_names(url: str) -> dict[str, dict]:
    data = httpx.get(f"{url}/v1/audio/voices").json()["data"]
    return {v["id"]: v for v in data if v["source"] == "library"}


def test_clone_upload_on_a_non_base_model_is_kept_unencoded_and_said_so(live_server):
    r = upload(live_server.url, "Alice", reference_wav(), transcript="hello there")
    assert r.status_code == 200, r.text
    answer = r.json()
    assert answer["kind"] == "clone" and answer["encoded"] is False and "Base" in answer["note"]
    stored = load_voice(live_server.library / "Alice.voice")
    assert stored.ref_audio is not None and stored.ref_text == "hello there" and stored.speaker_embedding is None
    refused = speak(live_server.url, "Alice")
    assert refused.status_code == 400 and "Base" in refused.json()["error"]["message"]


def test_preset_voice_in_the_library_speaks_by_name_and_by_id(live_server):
    r = httpx.post(f"{live_server.url}/v1/audio/voices", json={"name": "Narrator", "speaker": "ryan"})
    assert r.status_code == 200 and r.json()["kind"] == "preset"
    expected = engine_pcm(live_server.engine, "Hello.", "ryan", seed=4, max_frames=2)
    for voice in ("Narrator", "narrator", {"id": "Narrator"}):
        answer = speak(live_server.url, voice)
        assert answer.status_code == 200 and pcm_close(answer.content, expected)
    assert library_names(live_server.url)["Narrator"]["summary"] == "ryan"


def test_voices_the_model_cannot_use_are_refused_at_creation_and_not_stored(live_server):
    """A CustomVoice server: a designed voice, or a preset speaker the model does not have, could never be
    spoken; they answer 400 instead of being stored and failing at every use."""
    cases = [({"name": "Calm", "description": "a calm low voice"}, "description", "VoiceDesign"),
             ({"name": "Nobody", "speaker": "nobody"}, "speaker", "unknown speaker")]
    for body, param, message in cases:
        r = httpx.post(f"{live_server.url}/v1/audio/voices", data=body)
        assert r.status_code == 400 and r.json()["error"]["param"] == param, r.text
        assert message in r.json()["error"]["message"]
        assert not (live_server.library / f"{body['name']}.voice").exists()
        assert body["name"] not in library_names(live_server.url)


def test_duplicate_and_bad_names_are_refused_and_nothing_leaves_the_folder(live_server, tmp_path):
    assert httpx.post(f"{live_server.url}/v1/audio/voices", json={"name": "Dup", "speaker": "ryan"}).status_code == 200
    again = httpx.post(f"{live_server.url}/v1/audio/voices", json={"name": "Dup", "speaker": "eric"})
    assert again.status_code == 409
    for bad in ("../escape", ".hidden", "a/b", "a\\b", "x" * 81, "   ", "语" * 80, "😀" * 80, "evil\u202eexe",
                "two\u2028lines", "del\x7f"):
        r = httpx.post(f"{live_server.url}/v1/audio/voices", json={"name": bad, "speaker": "ryan"})
        assert r.status_code == 400 and r.json()["error"]["param"] == "name", bad
        assert r.json()["error"]["code"] == "invalid_name", bad
    assert httpx.post(f"{live_server.url}/v1/audio/voices", json={"name": "Café", "speaker": "ryan"}).status_code == 200
    twin = httpx.post(f"{live_server.url}/v1/audio/voices", json={"name": "CAFE\u0301", "speaker": "ryan"})
    assert twin.status_code == 409 and twin.json()["error"]["code"] == "voice_exists"
    assert not (live_server.library.parent / "escape.voice").exists()
    assert all(p.parent == live_server.library for p in live_server.library.rglob("*.voice"))


@pytest.mark.parametrize("data, status", [
    (b"this is not audio at all", 400),
    (None, 400),  # a clip of 0.5 s: too short to clone
    (b"\0" * (21 * 1024 * 1024), 413),
])
def test_bad_or_huge_uploads_are_refused_and_the_server_stays_healthy(live_server, data, status):
    if data is None:
        data = reference_wav(seconds=0.5)
    r = upload(live_server.url, "Broken", data)
    assert r.status_code == status and r.json()["error"]["message"]
    assert "Broken" not in library_names(live_server.url)
    assert httpx.get(f"{live_server.url}/health").json()["status"] == "ok"


def test_a_flac_bomb_and_a_1_hz_wav_are_refused_with_why(live_server):
    """An 8-channel FLAC of constant subframes (45 KB, 184 MB decoded) is refused from its header, a 104-byte WAV
    at 1 Hz (30 s of "speech") for its rate: 400s naming the upload, nothing stored."""
    bomb = io.BytesIO()
    block = np.full((1 << 16, 8), 0.5, dtype=np.float32)
    with sf.SoundFile(bomb, "w", 48000, 8, subtype="PCM_16", format="FLAC") as f:
        for _ in range(48000 * 120 // len(block)):
            f.write(block)
    slow = io.BytesIO()
    sf.write(slow, (np.arange(30) * 1000).astype(np.int16), 8000, format="WAV", subtype="PCM_16")
    slow = slow.getvalue()[:24] + (1).to_bytes(4, "little") + slow.getvalue()[28:]
    assert len(bomb.getvalue()) < 100_000 and len(slow) == 104
    for data, message in ((bomb.getvalue(), r"ref\.wav \(48000 Hz, 8 ch\) lasts 11\d\.\d s; the limit is 60 s"),
                          (slow, r"ref\.wav \(1 Hz, 1 ch\) has a sample rate of 1 Hz; a recording between 8000")):
        r = upload(live_server.url, "Bomb", data)
        assert r.status_code == 400 and r.json()["error"]["param"] == "audio_sample", r.text
        assert re.search(message, r.json()["error"]["message"]), r.text
    assert "Bomb" not in library_names(live_server.url)


def test_fields_of_the_wrong_type_and_deep_bodies_are_400s_naming_them(live_server):
    url = f"{live_server.url}/v1/audio/voices"
    for body, param, message in (({"name": ["x"], "speaker": "ryan"}, "name", "name must be a string, not an array"),
                                 ({"name": "X", "speaker": {"a": 1}}, "speaker", "speaker must be a string"),
                                 ({"name": "X", "speaker": "ryan", "language": 5}, "language", "not a number")):
        r = httpx.post(url, json=body)
        assert r.status_code == 400 and r.json()["error"]["param"] == param, r.text
        assert message in r.json()["error"]["message"]
    deep = b'{"name": "X", "speaker": ' + b"[" * 100_000 + b"]" * 100_000 + b"}"
    r = httpx.post(url, content=deep, headers={"content-type": "application/json"})
    assert r.status_code == 400 and "nested 100001 levels deep" in r.json()["error"]["message"], r.text
    assert not {"X", "['x']"} & set(library_names(live_server.url))
    for field in ("language", "name"):
        r = httpx.post(url, json={"name": "X", "speaker": "ryan", field: "CON." + "x" * 1_000_000})
        assert r.status_code == 400 and len(r.text) < 1000, r.text[:300]


def test_a_voice_file_nested_100000_deep_is_listed_unreadable_not_a_500(live_server):
    save_voice(Voice.preset("ryan"), live_server.library / "Fine.voice")
    deep = live_server.library / "Deep.voice"
    save_voice(Voice.preset("ryan"), deep)
    data = deep.read_bytes()
    size = int.from_bytes(data[:8], "little")
    header = json.loads(data[8:8 + size])
    header["__metadata__"]["meta"] = "[" * 100_000 + "]" * 100_000
    new = json.dumps(header).encode()
    deep.write_bytes(len(new).to_bytes(8, "little") + new + data[8 + size:])
    r = httpx.get(f"{live_server.url}/v1/audio/voices")
    assert r.status_code == 200, r.text
    listed = library_names(live_server.url)
    assert listed["Fine"]["readable"] and not listed["Deep"]["readable"]
    assert "nested 100000 levels deep" in listed["Deep"]["error"]
    assert speak(live_server.url, "Fine").status_code == 200
    refused = speak(live_server.url, "Deep")
    # as any unreadable library file: the server's own storage, said so (test_an_unreadable_voice_file_is_...)
    assert refused.json()["error"]["code"] == "voice_file_error" and "nested 100000" in refused.text


def test_missing_fields_are_refused(live_server):
    r = httpx.post(f"{live_server.url}/v1/audio/voices", json={"name": "Nothing"})
    assert r.status_code == 400 and r.json()["error"]["code"] == "missing_voice_source"
    r = httpx.post(f"{live_server.url}/v1/audio/voices", content=b"{nope", headers={"content-type": "application/json"})
    assert r.status_code == 400


def test_delete_removes_the_file(live_server):
    httpx.post(f"{live_server.url}/v1/audio/voices", json={"name": "Temp", "speaker": "eric"})
    assert (live_server.library / "Temp.voice").exists()
    r = httpx.delete(f"{live_server.url}/v1/audio/voices/Temp")
    assert r.status_code == 200 and r.json()["deleted"] is True
    assert not (live_server.library / "Temp.voice").exists()
    assert httpx.delete(f"{live_server.url}/v1/audio/voices/Temp").status_code == 404


def test_library_survives_a_restart_and_is_the_studio_folder_format(start_server, tiny_engine, tmp_path):
    first = start_server(tiny_engine("custom_voice"), library=tmp_path)
    httpx.post(f"{first.url}/v1/audio/voices", json={"name": "Keeper", "speaker": "vivian"})
    first.stop()
    save_voice(Voice.preset("serena").with_(name="FromStudio"), tmp_path / "FromStudio.voice")  # as the studio writes
    second = start_server(tiny_engine("custom_voice"), library=tmp_path)
    assert {"Keeper", "FromStudio"} <= set(library_names(second.url))
    assert speak(second.url, "FromStudio").status_code == 200


def test_clone_on_a_base_model_is_encoded_and_speaks(start_server, tiny_engine):
    live = start_server(tiny_engine("base"))
    r = upload(live.url, "Bob", reference_wav(), transcript="hello there", language="english")
    assert r.status_code == 200, r.text
    assert r.json()["encoded"] is True and r.json()["note"] is None
    stored = load_voice(live.library / "Bob.voice")
    assert stored.speaker_embedding is not None and stored.ref_codes is not None
    answer = speak(live.url, {"id": "Bob"})
    assert answer.status_code == 200 and len(answer.content) == 2 * 2 * SAMPLES_PER_FRAME
    assert speak(live.url, "vivian").status_code == 400  # presets need a CustomVoice model
    preset = httpx.post(f"{live.url}/v1/audio/voices", json={"name": "Preset", "speaker": "vivian"})
    assert preset.status_code == 400 and "CustomVoice" in preset.json()["error"]["message"]


def test_voice_design_model_speaks_the_instructions_as_the_voice(start_server, tiny_engine):
    live = start_server(tiny_engine("voice_design"))
    assert speak(live.url, "any-name", instructions="a bright, fast young voice").status_code == 200
    created = httpx.post(f"{live.url}/v1/audio/voices", json={"name": "Calm", "description": "a calm low voice"})
    assert created.status_code == 200 and created.json()["kind"] == "design"
    assert speak(live.url, "Calm").status_code == 200
    refused = speak(live.url, "any-name")
    assert refused.status_code == 400 and refused.json()["error"]["param"] == "voice"


def test_an_unreadable_voice_file_is_listed_used_with_a_clear_error_and_deletable(start_server, tiny_engine, tmp_path):
    live = start_server(tiny_engine("custom_voice"), library=tmp_path / "voices")
    (live.library / "Broken.voice").write_bytes(b"garbage, as after a disk fault")
    listed = library_names(live.url)["Broken"]
    assert listed["readable"] is False and "not a readable voice file" in listed["error"]
    assert str(tmp_path) not in listed["error"]
    taken = httpx.post(f"{live.url}/v1/audio/voices", json={"name": "broken", "speaker": "ryan"})
    assert taken.status_code == 409
    used = speak(live.url, "Broken")
    error = used.json()["error"]
    assert used.status_code == 500 and error["code"] == "voice_file_error" and "Broken" in error["message"]
    assert str(tmp_path) not in error["message"]
    assert httpx.delete(f"{live.url}/v1/audio/voices/Broken").status_code == 200
    assert "Broken" not in library_names(live.url)


def test_the_library_is_capped_at_max_voices(start_server, tiny_engine, tmp_path):
    live = start_server(tiny_engine("custom_voice"), library=tmp_path / "voices", settings=ServerSettings(max_voices=1))
    assert httpx.post(f"{live.url}/v1/audio/voices", json={"name": "One", "speaker": "ryan"}).status_code == 200
    full = httpx.post(f"{live.url}/v1/audio/voices", json={"name": "Two", "speaker": "ryan"})
    assert full.status_code == 507 and full.json()["error"]["code"] == "library_full"
    assert set(library_names(live.url)) == {"One"}


def test_a_slow_listing_does_not_stall_the_server(start_server, tiny_engine, tmp_path):
    """The library's file work runs in a worker thread: while a listing is held inside the library's file work,
    /health is answered, and only then is the listing let go."""
    live = start_server(tiny_engine("custom_voice"), library=tmp_path / "voices")
    store = live.app.state.store
    real = store.entries
    entered, release = threading.Event(), threading.Event()

    def held():
        entered.set()
        assert release.wait(60)
        return real()

    store.entries = held
    listing = {}
    thread = threading.Thread(target=lambda: listing.setdefault("r", httpx.get(f"{live.url}/v1/audio/voices",
                                                                               timeout=90)))
    thread.start()
    try:
        assert entered.wait(30)
        for _ in range(3):  # a loop blocked by the listing would answer none of these before release
            assert httpx.get(f"{live.url}/health", timeout=30).status_code == 200
        assert thread.is_alive() and "r" not in listing
    finally:
        release.set()
        thread.join()
    assert listing["r"].status_code == 200


def test_error_messages_name_no_temporary_file_nor_the_library(start_server, tiny_engine, tmp_path):
    live = start_server(tiny_engine("custom_voice"), library=tmp_path / "voices")
    secret = httpx.post(f"{live.url}/v1/audio/voices", json={"name": "Secret Agent", "speaker": "ryan"})
    assert secret.status_code == 200
    for data in (b"this is not audio at all", reference_wav(seconds=0.5)):
        message = upload(live.url, "Broken", data).json()["error"]["message"]
        assert "ref.wav" in message, message
        assert tempfile.gettempdir() not in message and not re.search(r"\btmp\w{6,}", message), message
    unknown = speak(live.url, "nobody")
    assert unknown.status_code == 400 and "Secret Agent" not in unknown.json()["error"]["message"]
