"""``"pronunciation": true``: the server's rules change what a request says, on both backends; the field is strict;
``python main.py serve --pronunciation FILE`` loads the rules, and a bad file stops it with the reason."""

from __future__ import annotations

import httpx
import pytest
import torch

from engine import Engine
from engine.pronunciation import Lexicon, Rule, save_lexicon
from main import main
from server.scheduler import backend_factory
from server.settings import ServerSettings
from tests.server.helpers import engine_pcm, pcm_close

LEXICON = Lexicon((Rule("apples", "pears"), Rule("Dr.", "Doctor", voice="ryan")))
FRAMES = 5


@pytest.fixture(scope="module")
def ruled_server(start_server, tiny_engine):
    return start_server(tiny_engine("custom_voice"), settings=ServerSettings(pronunciation=LEXICON))


@pytest.fixture(scope="module")
def ruled_batched_server(start_server, tiny_model_dir):
    engine = Engine.from_pretrained(tiny_model_dir("custom_voice"), dtype=torch.float64)
    return start_server(engine, settings=ServerSettings(pronunciation=LEXICON), make_backend=backend_factory(2))


def speak(server, text: str, voice: str = "vivian", **fields) -> httpx.Response:
    body = {"model": "orator", "voice": voice, "input": text, "response_format": "pcm", "seed": 4,
            "max_frames": FRAMES, **fields}
    return httpx.post(f"{server.url}/v1/audio/speech", json=body, timeout=120)


@pytest.mark.parametrize("server_name", ["ruled_server", "ruled_batched_server"])
def test_the_rules_apply_only_when_asked(server_name, request):
    server = request.getfixturevalue(server_name)
    asked = speak(server, "Two apples.", pronunciation=True)
    plain = speak(server, "Two apples.")
    assert asked.status_code == plain.status_code == 200
    assert pcm_close(asked.content, engine_pcm(server.engine, "Two pears.", "vivian", 4, FRAMES))
    assert pcm_close(plain.content, engine_pcm(server.engine, "Two apples.", "vivian", 4, FRAMES))
    assert not pcm_close(asked.content, plain.content)


def test_a_voice_scoped_rule_applies_to_its_voice_only(ruled_server):
    ryan = speak(ruled_server, "Dr. Who.", voice="ryan", pronunciation=True)
    vivian = speak(ruled_server, "Dr. Who.", pronunciation=True)
    assert pcm_close(ryan.content, engine_pcm(ruled_server.engine, "Doctor Who.", "ryan", 4, FRAMES))
    assert pcm_close(vivian.content, engine_pcm(ruled_server.engine, "Dr. Who.", "vivian", 4, FRAMES))


@pytest.mark.parametrize("value", ["yes", 1, 0, None, [], {"on": True}, "true"])
def test_the_field_takes_only_a_boolean(ruled_server, value):
    r = speak(ruled_server, "Hi.", pronunciation=value)
    assert r.status_code == 400 and r.json()["error"]["param"] == "pronunciation"


def test_asking_a_server_without_rules_is_refused(live_server):
    r = speak(live_server, "Hi.", pronunciation=True)
    assert r.status_code == 400 and r.json()["error"]["param"] == "pronunciation"
    assert "--no-pronunciation" in r.json()["error"]["message"]
    assert speak(live_server, "Hi.", pronunciation=False).status_code == 200


def test_a_rule_that_makes_the_input_too_long_is_refused_before_it_waits(start_server, tiny_engine):
    grow = Lexicon((Rule("(.)", r"\1𠀀𠀁", regex=True),))
    server = start_server(tiny_engine("custom_voice"), settings=ServerSettings(pronunciation=grow))
    text = "ab " * 90
    assert speak(server, text).status_code == 200
    refused = speak(server, text, pronunciation=True)
    assert refused.status_code == 400 and "too long" in refused.json()["error"]["message"]


def _served_settings(monkeypatch, argv) -> tuple[int, list]:
    import uvicorn

    apps = []
    monkeypatch.setattr(uvicorn.Server, "run", lambda self: apps.append(self.config.app))
    return main(argv), apps


def test_serve_loads_the_rules_it_is_given(monkeypatch, tmp_path):
    monkeypatch.setenv("ORATOR_DATA_DIR", str(tmp_path / "data"))
    path = tmp_path / "rules.json"
    save_lexicon(LEXICON, path)
    base = ["serve", "--model", "unused", "--library", str(tmp_path)]
    _, [app] = _served_settings(monkeypatch, [*base, "--pronunciation", str(path)])
    assert app.state.settings.pronunciation == LEXICON
    _, [app] = _served_settings(monkeypatch, [*base, "--no-pronunciation"])
    assert app.state.settings.pronunciation is None
    _, [app] = _served_settings(monkeypatch, base)  # no studio file in the data folder: the shipped rules
    from engine.pronunciation import default_lexicon

    assert app.state.settings.pronunciation == default_lexicon()


def test_serve_stops_on_a_bad_rules_file(monkeypatch, tmp_path, capsys):
    bad = tmp_path / "bad.json"
    bad.write_text('{"format": "orator-pronunciation", "version": 1, "rules": [{"pattern": "(", '
                   '"replacement": "", "regex": true}]}', encoding="utf-8")
    code, apps = _served_settings(monkeypatch, ["serve", "--model", "unused", "--pronunciation", str(bad)])
    assert code == 2 and apps == []
    err = capsys.readouterr().err
    assert "bad.json" in err and "rule 1" in err and "not a valid regular expression" in err



SLOW_RULES = tuple(Rule(f"(a|aa)+{end}", "x", regex=True) for end in "bcdef")  # each backtracks until its timeout
SLOW_TEXT = " ".join(["a" * 28 + "!"] * 130)  # 13 segments, each a quarter second of searches


def test_a_pathological_rule_does_not_block_the_server(start_server, tiny_engine):
    """A rule that makes every segment too long to speak, then rules whose searches backtrack until their timeout:
    the request is refused once the rules have run (seconds), and they run off the event loop, so ``/health``
    answers all the while (before, the loop was held for the whole pass)."""
    import threading

    grow = Rule("(.)", r"\1𠀀𠀁", regex=True)  # fast, and makes every segment too long to speak
    grown = "a𠀀𠀁"  # what the rules after it search, backtracking as SLOW_RULES do on the written text
    slow = tuple(Rule(f"({grown}|{grown}{grown})+{end}", "x", regex=True) for end in "bcdef")
    server = start_server(tiny_engine("custom_voice"), settings=ServerSettings(
        pronunciation=Lexicon((grow, *slow)), pronunciation_budget_s=60.0))
    answer, health_answers = [], 0

    def ask():
        answer.append(speak(server, SLOW_TEXT, pronunciation=True))

    asking = threading.Thread(target=ask)
    asking.start()
    while asking.is_alive():
        if httpx.get(f"{server.url}/health", timeout=60).status_code == 200 and asking.is_alive():
            health_answers += 1
    asking.join()
    assert answer[0].status_code == 400 and "too long" in answer[0].json()["error"]["message"]
    assert health_answers >= 3  # answered while the rules ran, not only once they had ended


def test_the_rules_stop_at_the_requests_budget(start_server, tiny_engine):
    """Each segment's searches are bounded by the lexicon, and all of a request's by ``pronunciation_budget_s``: a
    400 charged to that request; the same server still speaks with its rules where they match quickly."""
    server = start_server(tiny_engine("custom_voice"), settings=ServerSettings(
        pronunciation=Lexicon((*SLOW_RULES, Rule("apples", "pears"))), pronunciation_budget_s=1.0))
    refused = speak(server, SLOW_TEXT, pronunciation=True)
    assert refused.status_code == 400 and refused.json()["error"]["code"] == "pronunciation_too_slow"
    assert refused.json()["error"]["param"] == "pronunciation"
    spoken = speak(server, "Two apples.", pronunciation=True)
    assert spoken.status_code == 200
    assert pcm_close(spoken.content, engine_pcm(server.engine, "Two pears.", "vivian", 4, FRAMES))
