"""No web page can write to the keyless loopback server: cross-site writes answer 403 and a foreign Host 421,
while the server's own page, clients without an Origin, and keyed requests keep working."""

from __future__ import annotations

import json

import httpx
import pytest

from server.auth import HostPolicy, host_name
from server.settings import ServerSettings
from tests.server.test_voices_api import reference_wav

EVIL = "http://evil.example"


@pytest.fixture(scope="module")
def open_server(start_server, tiny_engine):
    return start_server(tiny_engine("custom_voice"))


@pytest.fixture(scope="module")
def keyed_loopback_server(start_server, tiny_engine):
    return start_server(tiny_engine("custom_voice"), settings=ServerSettings(api_key="k3y"))


def _library(url: str, headers: dict | None = None) -> set[str]:
    r = httpx.get(f"{url}/v1/audio/voices", headers=headers or {})
    assert r.status_code == 200, r.text
    return {v["id"] for v in r.json()["data"] if v["source"] == "library"}


def _simple_requests(url: str, name: str) -> dict[str, dict]:
    """The voice-creating requests a web page can send to any site without a CORS preflight."""
    voices = f"{url}/v1/audio/voices"
    return {
        "form": {"url": voices, "data": {"name": name, "speaker": "vivian"}},
        "multipart": {"url": voices, "data": {"name": name, "transcript": "hi"},
                      "files": {"audio_sample": ("ref.wav", reference_wav(1.5), "audio/wav")}},
        "text/plain json": {"url": voices, "content": json.dumps({"name": name, "speaker": "vivian"}),
                            "headers": {"content-type": "text/plain"}},
    }


@pytest.mark.parametrize("kind", ["form", "multipart", "text/plain json"])
def test_a_foreign_origin_cannot_create_a_voice_but_the_same_request_without_one_can(open_server, kind):
    url = open_server.url
    name = f"Cross{kind.split()[0].replace('/', '')}"
    request = _simple_requests(url, name)[kind]
    headers = {**request.pop("headers", {}), "origin": EVIL}
    refused = httpx.post(**request, headers=headers, timeout=60)
    assert refused.status_code == 403, refused.text
    assert refused.json()["error"]["code"] == "cross_site_request"
    assert name not in _library(url)
    request = _simple_requests(url, name)[kind]
    allowed = httpx.post(**request, timeout=60)  # what curl or the openai client sends: no Origin
    assert allowed.status_code == 200, allowed.text
    assert name in _library(url)


@pytest.mark.parametrize("fetch_site", ["cross-site", "same-site"])
def test_a_write_the_browser_marks_cross_site_is_refused(open_server, fetch_site):
    url = open_server.url
    name = f"Marked{fetch_site.split('-')[0]}"
    r = httpx.post(f"{url}/v1/audio/voices", json={"name": name, "speaker": "vivian"},
                   headers={"sec-fetch-site": fetch_site})
    assert r.status_code == 403 and name not in _library(url)


def test_a_foreign_origin_cannot_delete_a_voice_nor_speak(open_server):
    url = open_server.url
    assert httpx.post(f"{url}/v1/audio/voices", json={"name": "Keep", "speaker": "vivian"}).status_code == 200
    assert httpx.delete(f"{url}/v1/audio/voices/Keep", headers={"origin": EVIL}).status_code == 403
    assert httpx.delete(f"{url}/v1/audio/voices/Keep", headers={"origin": "null"}).status_code == 403
    assert "Keep" in _library(url)
    speech = {"model": "orator", "voice": "vivian", "input": "Hi.", "response_format": "pcm", "max_frames": 1}
    assert httpx.post(f"{url}/v1/audio/speech", json=speech, headers={"origin": EVIL}).status_code == 403


def test_the_servers_own_page_origin_may_write(open_server):
    """What the page's fetch sends: its own origin and ``Sec-Fetch-Site: same-origin``, by any loopback name."""
    url = open_server.url
    port = url.rsplit(":", 1)[1]
    for i, host in enumerate((f"127.0.0.1:{port}", f"localhost:{port}", f"[::1]:{port}")):
        headers = {"host": host, "origin": f"http://{host}", "sec-fetch-site": "same-origin"}
        r = httpx.post(f"{url}/v1/audio/voices", json={"name": f"Own{i}", "speaker": "vivian"}, headers=headers)
        assert r.status_code == 200, (host, r.text)
        assert httpx.delete(f"{url}/v1/audio/voices/Own{i}", headers=headers).status_code == 200
    other_port = {"host": f"127.0.0.1:{port}", "origin": "http://127.0.0.1:3000"}  # another local site
    assert httpx.post(f"{url}/v1/audio/voices", json={"name": "Other", "speaker": "vivian"},
                      headers=other_port).status_code == 403


@pytest.mark.parametrize("host", ["evil.example", "evil.example:{port}", "127.0.0.1.nip.io:{port}",
                                  "localhost.evil.example", "127.evil.example", "[::2]:{port}", "localhost:x"])
def test_a_foreign_host_is_refused_reads_included(open_server, host):
    """A DNS-rebinding page reaches 127.0.0.1 under its own name: it can neither list nor delete voices."""
    url = open_server.url
    host = host.format(port=url.rsplit(":", 1)[1])
    assert httpx.post(f"{url}/v1/audio/voices", json={"name": "Target", "speaker": "vivian"}).status_code in (200, 409)
    listed = httpx.get(f"{url}/v1/audio/voices", headers={"host": host})
    assert listed.status_code == 421 and listed.json()["error"]["code"] == "invalid_host"
    assert httpx.delete(f"{url}/v1/audio/voices/Target", headers={"host": host}).status_code == 421
    assert httpx.get(f"{url}/", headers={"host": host}).status_code == 421
    assert "Target" in _library(url)


def test_with_the_key_any_origin_may_write_but_the_host_is_still_checked_on_loopback(keyed_loopback_server):
    url = keyed_loopback_server.url
    key = {"authorization": "Bearer k3y"}
    r = httpx.post(f"{url}/v1/audio/voices", json={"name": "Keyed", "speaker": "vivian"},
                   headers={**key, "origin": EVIL, "sec-fetch-site": "cross-site"})
    assert r.status_code == 200, r.text
    assert "Keyed" in _library(url, key)
    assert httpx.get(f"{url}/v1/audio/voices", headers={**key, "host": "evil.example"}).status_code == 421


def test_host_names_parse():
    assert host_name("LocalHost:8000") == "localhost"
    assert host_name("[::1]:8000") == "::1" and host_name("[::1]") == "::1"
    for bad in ("[::1", "[evil]:80", "[::1]x", "a:b", ":80", "", "[::1]:"):
        assert host_name(bad) is None, bad


def test_which_hosts_a_server_answers_to():
    loopback = HostPolicy(ServerSettings())
    assert all(loopback.allows(h) for h in ("localhost", "127.0.0.1:8000", "[::1]:1", None))
    assert not any(loopback.allows(h) for h in ("192.168.1.20", "evil.example", "127.0.0.2"))
    named = HostPolicy(ServerSettings(host="192.168.1.20", allowed_hosts=("Studio.lan",)))
    assert all(named.allows(h) for h in ("192.168.1.20:8000", "studio.lan:8000", "localhost"))
    assert not named.allows("evil.example")
    everywhere = HostPolicy(ServerSettings(host="0.0.0.0"))  # --insecure: any address, but no DNS name
    assert all(everywhere.allows(h) for h in ("10.0.0.5:8000", "[fe80::1]:8000", "localhost"))
    assert not everywhere.allows("evil.example:8000")
    keyed = HostPolicy(ServerSettings(host="::", api_key="k"))
    assert keyed.allows("evil.example") and keyed.allows("anything.lan:8000")
