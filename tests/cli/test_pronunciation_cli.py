"""``say`` and ``export`` with pronunciation rules: ``--pronunciation FILE``, the studio's file by default,
``--no-pronunciation``; a bad file is one clear line before any model loads."""

from __future__ import annotations

import pytest
import soundfile as sf

import main
from engine.pronunciation import Lexicon, Rule, save_lexicon

RULES = Lexicon((Rule("apples", "pears"),))


def run(capsys, command: str, *args: str) -> tuple[int, str, str]:
    code = main.main([command, *args])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


@pytest.fixture
def data_dir(tmp_path, monkeypatch):
    folder = tmp_path / "data"
    monkeypatch.setenv("ORATOR_DATA_DIR", str(folder))
    return folder


def said(capsys, tmp_path, model, text: str, *flags: str):
    out = tmp_path / f"say{len(list(tmp_path.glob('say*.wav')))}.wav"
    code, _, err = run(capsys, "say", text, "--model", str(model), "--voice", "vivian", "--seed", "3",
                       "--max-frames", "4", "--device", "cpu", "--out", str(out), *flags)
    assert code == 0, err
    return sf.read(out, dtype="float32")[0]


def test_say_speaks_with_the_file_given_the_studios_or_none(capsys, tmp_path, data_dir, tiny_model_dir):
    model = tiny_model_dir("custom_voice")
    rules = tmp_path / "rules.json"
    save_lexicon(RULES, rules)
    pears = said(capsys, tmp_path, model, "Two pears.", "--no-pronunciation")
    apples = said(capsys, tmp_path, model, "Two apples.", "--no-pronunciation")
    assert pears.shape != apples.shape or (pears != apples).any()
    assert (said(capsys, tmp_path, model, "Two apples.", "--pronunciation", str(rules)) == pears).all()
    assert (said(capsys, tmp_path, model, "Two apples.") == apples).all()  # no studio file: the shipped rules
    save_lexicon(RULES, data_dir / "pronunciation.json")
    assert (said(capsys, tmp_path, model, "Two apples.") == pears).all()  # the studio's file


@pytest.mark.parametrize("command", ["say", "export"])
def test_a_bad_rules_file_is_one_line_before_the_model_loads(capsys, tmp_path, data_dir, command):
    bad = tmp_path / "bad.json"
    bad.write_text("{not json", encoding="utf-8")
    book = tmp_path / "book.txt"
    book.write_text("Hello.", encoding="utf-8")
    first = "Hello." if command == "say" else str(book)
    code, _, err = run(capsys, command, first, "--model", str(tmp_path / "no-model"), "--voice", "vivian",
                       "--pronunciation", str(bad))
    assert code == 2
    [line] = err.strip().splitlines()
    assert f"orator {command}: error: " in line and "bad.json is not valid JSON" in line


@pytest.mark.parametrize("command", ["say", "export"])
def test_a_rules_file_nested_100000_deep_is_one_line_not_a_traceback(capsys, tmp_path, data_dir, command):
    data_dir.mkdir(parents=True)
    (data_dir / "pronunciation.json").write_text("[" * 100_000 + "]" * 100_000, encoding="utf-8")  # the studio's
    book = tmp_path / "book.txt"
    book.write_text("Hello.", encoding="utf-8")
    first = "Hello." if command == "say" else str(book)
    code, _, err = run(capsys, command, first, "--model", str(tmp_path / "no-model"), "--voice", "vivian")
    assert code == 2
    [line] = err.strip().splitlines()
    assert "pronunciation.json is not valid JSON: the document is nested 100000 levels deep; at most 64" in line


def test_export_says_the_rules_and_subtitles_the_text(capsys, tmp_path, data_dir, tiny_model_dir):
    model = tiny_model_dir("custom_voice")
    rules = tmp_path / "rules.json"
    save_lexicon(RULES, rules)
    for name, text in (("ruled", "Two apples."), ("plain", "Two pears.")):
        (tmp_path / f"{name}.txt").write_text(text, encoding="utf-8")
    common = ["--model", str(model), "--voice", "vivian", "--seed", "2", "--max-frames", "3", "--device", "cpu",
              "--no-cache", "--subtitles", "srt", "--format", "wav"]
    assert run(capsys, "export", str(tmp_path / "ruled.txt"), *common, "--pronunciation", str(rules))[0] == 0
    assert run(capsys, "export", str(tmp_path / "plain.txt"), *common)[0] == 0
    ruled, plain = (sf.read(tmp_path / f"{name}.wav", dtype="float32")[0] for name in ("ruled", "plain"))
    assert ruled.shape == plain.shape and (ruled == plain).all()
    assert "Two apples." in (tmp_path / "ruled.srt").read_text(encoding="utf-8")


def test_both_flags_at_once_are_refused(capsys):
    with pytest.raises(SystemExit) as caught:
        main.main(["say", "Hi.", "--model", "m", "--pronunciation", "f.json", "--no-pronunciation"])
    assert caught.value.code == 2
    assert "not allowed with argument" in capsys.readouterr().err
