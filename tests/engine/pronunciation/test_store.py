"""The lexicon file: round trip, atomic writes, and clear refusals of every kind of bad file."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.pronunciation import (
    Lexicon,
    LexiconFileError,
    Rule,
    default_lexicon,
    default_lexicon_path,
    lexicon_from_text,
    lexicon_or_default,
    lexicon_to_text,
    load_lexicon,
    save_lexicon,
)
from engine.pronunciation.store import MAX_FILE_BYTES, VERSION


def _lexicon() -> Lexicon:
    return Lexicon((Rule("e.g.", "for example"), Rule(r"(\d+)km", r"\1 kilometres", regex=True, case_sensitive=True),
                    Rule("tomato", "tomahto", voice="Ann", enabled=False), Rule("Ζ", "zeta «\\»")))


def test_round_trip(tmp_path):
    path = tmp_path / "sub" / "pronunciation.json"
    save_lexicon(_lexicon(), path)
    assert load_lexicon(path) == _lexicon()
    document = json.loads(path.read_text(encoding="utf-8"))
    assert document["format"] == "orator-pronunciation" and document["version"] == VERSION
    assert document["rules"][2] == {"pattern": "tomato", "replacement": "tomahto", "regex": False,
                                    "case_sensitive": False, "voice": "Ann", "enabled": False}
    assert [p.name for p in path.parent.iterdir()] == ["pronunciation.json"]  # no temporary file left


def test_an_empty_lexicon_round_trips(tmp_path):
    save_lexicon(Lexicon(), tmp_path / "p.json")
    assert load_lexicon(tmp_path / "p.json").rules == ()


def _document(**changes) -> str:
    document = {"format": "orator-pronunciation", "version": 1, "rules": [{"pattern": "a", "replacement": "b"}]}
    document.update(changes)
    return json.dumps(document)


@pytest.mark.parametrize(("text", "words"), [
    ("", "not valid JSON"),
    ("{", "not valid JSON"),
    ("[]", "not an Orator pronunciation file"),
    ('{"rules": []}', "not an Orator pronunciation file"),
    (_document(version="1"), "no valid version"),
    (_document(version=True), "no valid version"),
    (_document(version=0), "no valid version"),
    (_document(version=2), "newer Orator"),
    (_document(rules={}), "no list of rules"),
    (_document(rules=["a"]), "rule 1 of the lexicon is not an object"),
    (_document(rules=[{"pattern": "a"}]), "needs a pattern and a replacement"),
    (_document(rules=[{"pattern": "a", "replacement": "b", "colour": 1}]), "unknown fields: colour"),
    (_document(rules=[{"pattern": "a", "replacement": "b"}, {"pattern": "(", "replacement": "", "regex": True}]),
     "rule 2: the pattern is not a valid regular expression"),
    (_document(rules=[{"pattern": "a", "replacement": "b"}] * 1001), "at most 1000 rules"),
])
def test_bad_documents_are_refused_clearly(text, words):
    with pytest.raises(LexiconFileError, match=words):
        lexicon_from_text(text)


def test_bad_files_name_themselves(tmp_path):
    missing = tmp_path / "missing.json"
    with pytest.raises(LexiconFileError, match="cannot read the pronunciation file .*missing.json"):
        load_lexicon(missing)
    binary = tmp_path / "binary.json"
    binary.write_bytes(b"\xff\xfe\x00garbage")
    with pytest.raises(LexiconFileError, match="binary.json is not UTF-8"):
        load_lexicon(binary)
    huge = tmp_path / "huge.json"
    huge.write_bytes(b" " * (MAX_FILE_BYTES + 1))
    with pytest.raises(LexiconFileError, match="larger than"):
        load_lexicon(huge)
    folder = tmp_path / "folder.json"
    folder.mkdir()
    with pytest.raises(LexiconFileError, match="cannot read the pronunciation file .*folder.json"):
        load_lexicon(folder)
    bad_rule = tmp_path / "bad.json"
    bad_rule.write_text(_document(rules=[{"pattern": "", "replacement": "x"}]), encoding="utf-8")
    with pytest.raises(LexiconFileError) as info:
        load_lexicon(bad_rule)
    assert "bad.json" in str(info.value) and info.value.index == 0 and info.value.field == "pattern"


def test_lexicon_or_default(tmp_path, monkeypatch):
    monkeypatch.setenv("ORATOR_DATA_DIR", str(tmp_path / "data"))
    assert default_lexicon_path() == tmp_path / "data" / "pronunciation.json"
    assert lexicon_or_default() == default_lexicon()  # no studio file yet: the shipped rules
    save_lexicon(_lexicon(), default_lexicon_path())
    assert lexicon_or_default() == _lexicon()  # the studio's file
    other = tmp_path / "other.json"
    save_lexicon(Lexicon(), other)
    assert lexicon_or_default(other) == Lexicon()  # a file given wins
    with pytest.raises(LexiconFileError):
        lexicon_or_default(tmp_path / "nope.json")


@settings(max_examples=200, deadline=None)
@given(st.recursive(st.none() | st.booleans() | st.integers() | st.text(max_size=20),
                    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=10), inner,
                                                                                  max_size=4), max_leaves=20))
def test_any_json_is_a_lexicon_or_a_file_error(value):
    for document in (value, {"format": "orator-pronunciation", "version": 1, "rules": value}):
        try:
            lexicon = lexicon_from_text(json.dumps(document))
        except LexiconFileError:
            continue
        assert lexicon_from_text(lexicon_to_text(lexicon)) == lexicon
