"""Rules: whole words (Unicode boundaries), case, regular expressions with groups, and refusal of bad input."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.core.pronunciation.rule import MAX_PATTERN_CHARS, MAX_REPLACEMENT_CHARS
from engine.errors import OratorError, PronunciationError
from engine.pronunciation import Lexicon, Rule


def said(rule: Rule, text: str, voice: str | None = None) -> str:
    return Lexicon((rule,)).apply(text, voice)


@pytest.mark.parametrize(("text", "expected"), [
    ("e.g. this", "for example this"),
    ("(e.g., this)", "(for example, this)"),
    ("See E.G. here", "See for example here"),
    ("Tee.g. no", "Tee.g. no"),  # inside a longer word: not the word
    ("e.g.e.g. twice", "for examplefor example twice"),  # ends in punctuation: what follows may touch it
])
def test_whole_word_with_punctuation_at_its_end(text, expected):
    assert said(Rule("e.g.", "for example"), text) == expected


@pytest.mark.parametrize(("text", "expected"), [
    ("a cat sat", "a kitty sat"),
    ("concatenate", "concatenate"),
    ("cats", "cats"),
    ("cat.", "kitty."),
    ("«cat»", "«kitty»"),
    ("café cat", "café kitty"),
    ("cat\u0301", "cat\u0301"),  # a combining accent makes it another word
    ("écat", "écat"),  # a non-ASCII letter before it too
    ("猫cat", "猫cat"),  # a CJK letter is a word character
    ("cat_x", "cat_x"),
    ("2cat", "2cat"),
])
def test_whole_word_boundaries_are_unicode(text, expected):
    assert said(Rule("cat", "kitty"), text) == expected


def test_whole_word_in_a_script_without_ascii():
    assert said(Rule("Straße", "Strasse"), "Die Straße, bitte.") == "Die Strasse, bitte."
    assert said(Rule("ΑΒΓ", "alpha beta gamma"), "το ΑΒΓ.") == "το alpha beta gamma."


def test_case_sensitivity():
    assert said(Rule("NASA", "nasa", case_sensitive=True), "NASA and Nasa") == "nasa and Nasa"
    assert said(Rule("NASA", "nasa"), "NASA and Nasa") == "nasa and nasa"
    assert said(Rule("élan", "verve"), "ÉLAN!") == "verve!"


def test_whole_word_replacement_is_literal():
    """A whole word's replacement is said as written: a backslash or group syntax is no group reference."""
    assert said(Rule("x", r"\1 \g<0>"), "x") == r"\1 \g<0>"


def test_regex_groups_in_the_replacement():
    rule = Rule(r"(\d+)\s?km\b", r"\1 kilometres", regex=True)
    assert said(rule, "5km, then 10 km.") == "5 kilometres, then 10 kilometres."
    named = Rule(r"(?P<h>\d{1,2}):(?P<m>\d\d)", r"\g<h> hours \g<m>", regex=True)
    assert said(named, "At 9:30.") == "At 9 hours 30."


def test_a_verbose_pattern_with_a_comment():
    assert said(Rule("(?x) (\\d+) \\s* kg  # weights", r"\1 kilograms", regex=True), "It is 5 kg.") == \
        "It is 5 kilograms."


def test_regex_case_flag():
    assert said(Rule("abc", "x", regex=True), "ABC abc") == "x x"
    assert said(Rule("abc", "x", regex=True, case_sensitive=True), "ABC abc") == "ABC x"


def test_patterns_and_text_meet_in_composed_form():
    decomposed = "cafe\u0301"
    assert Rule(decomposed, "coffee").pattern == "café"
    assert said(Rule(decomposed, "coffee"), "un café.") == "un coffee."
    assert said(Rule("café", "coffee"), f"un {decomposed}.") == "un coffee."
    assert said(Rule("cafe", "coffee"), f"un {decomposed}.") == f"un {decomposed}."  # "café" is another word
    assert said(Rule("zzz", "y"), f"un {decomposed}.") == f"un {decomposed}."  # unchanged: exactly as written


@pytest.mark.parametrize(("spec", "field", "words"), [
    (dict(pattern="", replacement="x"), "pattern", "empty"),
    (dict(pattern="   ", replacement="x"), "pattern", "empty"),
    (dict(pattern=None, replacement="x"), "pattern", "must be text"),
    (dict(pattern="a", replacement=3), "replacement", "must be text"),
    (dict(pattern="a" * (MAX_PATTERN_CHARS + 1), replacement="x"), "pattern", "at most"),
    (dict(pattern="a", replacement="x" * (MAX_REPLACEMENT_CHARS + 1)), "replacement", "at most"),
    (dict(pattern="a\x00b", replacement="x"), "pattern", "control character"),
    (dict(pattern="a", replacement="x\ny"), "replacement", "control character"),
    (dict(pattern="a\ud800", replacement="x"), "pattern", "surrogate"),
    (dict(pattern="(", replacement="x", regex=True), "pattern", "not a valid regular expression"),
    (dict(pattern="[z-a]", replacement="x", regex=True), "pattern", "not a valid regular expression"),
    (dict(pattern="a", replacement=r"\1", regex=True), "replacement", "cannot be used"),
    (dict(pattern="(a)", replacement=r"\g<nope>", regex=True), "replacement", "cannot be used"),
    (dict(pattern="a", replacement="\\", regex=True), "replacement", "cannot be used"),
    (dict(pattern="(?x) (a) # a comment", replacement=r"\2", regex=True), "replacement", "cannot be used"),
    (dict(pattern="x*", replacement="y", regex=True), "pattern", "matches empty text"),
    (dict(pattern="a{5000}", replacement="y", regex=True), "pattern", "at most 1000"),
    (dict(pattern="(?:(?:a{60000}){60000}){60000}", replacement="", regex=True), "pattern", "at most 1000"),
    (dict(pattern="(?:a{1000}){1000}", replacement="", regex=True), "pattern", "multiply"),
    (dict(pattern="(?:\\\\{900}){900}", replacement="", regex=True), "pattern", "multiply"),
    (dict(pattern="a", replacement="b", regex="yes"), "regex", "true or false"),
    (dict(pattern="a", replacement="b", case_sensitive=1), "case_sensitive", "true or false"),
    (dict(pattern="a", replacement="b", enabled=None), "enabled", "true or false"),
    (dict(pattern="a", replacement="b", voice=5), "voice", "name or none"),
    (dict(pattern="a", replacement="b", voice="x" * 81), "voice", "at most"),
])
def test_bad_rules_are_refused_with_the_field_at_fault(spec, field, words):
    with pytest.raises(PronunciationError) as info:
        Rule(**spec)
    assert info.value.field == field
    assert words in str(info.value)
    assert isinstance(info.value, OratorError) and isinstance(info.value, ValueError)


def test_an_empty_replacement_and_a_blank_voice_are_allowed():
    rule = Rule("um", "", voice="  ")
    assert rule.voice is None
    assert said(rule, "so um yes") == "so  yes"


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=MAX_PATTERN_CHARS), st.text(max_size=40), st.booleans(), st.booleans())
def test_making_a_rule_never_fails_but_with_a_pronunciation_error(pattern, replacement, is_regex, case):
    """Whatever a user types (or a file holds), a rule is made or refused with a PronunciationError."""
    try:
        Rule(pattern, replacement, regex=is_regex, case_sensitive=case)
    except PronunciationError:
        pass
