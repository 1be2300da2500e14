"""Lexicons: order, voice scope, bounded effect (time, growth, emptiness), and what the engine's plans get."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engine.core.pronunciation.lexicon import APPLY_BUDGET_S, MAX_RULES, RULE_TIMEOUT_S
from engine.core.text.segments import Segment, split_segments
from engine.errors import PronunciationError
from engine.pronunciation import Lexicon, Rule, default_lexicon, max_spoken_chars, pronounce


def test_rules_apply_in_order_each_to_what_the_previous_left():
    lexicon = Lexicon((Rule("Dr.", "Doctor"), Rule("Doctor Who", "the Doctor")))
    assert lexicon.apply("Dr. Who came.") == "the Doctor came."
    reversed_order = Lexicon(tuple(reversed(lexicon.rules)))
    assert reversed_order.apply("Dr. Who came.") == "Doctor Who came."


def test_voice_scope_matches_names_as_the_library_does():
    lexicon = Lexicon((Rule("tomato", "tomahto", voice="Old Tom"), Rule("data", "dahta")))
    assert lexicon.apply("tomato data", "old  tom") == "tomahto dahta"
    assert lexicon.apply("tomato data", "OLD TOM") == "tomahto dahta"
    assert lexicon.apply("tomato data", "Ann") == "tomato dahta"
    assert lexicon.apply("tomato data", None) == "tomato dahta"


def test_disabled_rules_do_nothing():
    assert Lexicon((Rule("e.g.", "for example", enabled=False),)).apply("e.g. x") == "e.g. x"


def test_shipped_defaults():
    lexicon = default_lexicon()
    assert lexicon.apply("Fruit, e.g. apples, pears etc., i.e. food; cats vs. dogs.") == \
        "Fruit, for example apples, pears et cetera, that is food; cats versus dogs."
    assert all(not rule.regex and not rule.case_sensitive and rule.voice is None for rule in lexicon.rules)


def test_a_rule_that_grows_the_text_too_much_is_skipped():
    doubling = Rule("a", "aa", regex=True)
    lexicon = Lexicon((doubling,) * 20)
    text = "a " * 50  # 100 characters: at most 500 may be said
    explained = lexicon.explain(text)
    assert len(explained.spoken) <= max_spoken_chars(len(text))
    assert explained.skipped and all("too long" in why for _, why in explained.skipped)
    assert explained.spoken.count("a") == 50 * 8  # the three doublings that fit (450 characters), the rest skipped
    assert len(explained.skipped) == 17


def test_group_references_cannot_blow_up_the_length():
    rule = Rule("(.)", "\\1" * 100, regex=True)
    text = "x" * 300
    explained = Lexicon((rule,)).explain(text)
    assert explained.spoken == text and explained.skipped


def test_a_sentence_the_rules_empty_is_said_as_written():
    explained = Lexicon((Rule("hm", ""),)).explain("hm")
    assert explained.spoken == "hm"
    assert explained.skipped[-1][0] == -1


def test_a_catastrophic_pattern_times_out_and_is_skipped():
    rule = Rule(r"(?:a+){10}b", "x", regex=True)
    lexicon = Lexicon((rule, Rule("z", "zed")))
    explained = lexicon.explain("a" * 300 + " z")
    assert explained.spoken == "a" * 300 + " zed"  # the rule after it still applies
    assert explained.skipped == ((0, "its search took too long"),)


def test_the_time_of_all_searches_is_bounded(monkeypatch):
    """The regular expressions share one budget: the time limits their searches are given add up to at most
    ``APPLY_BUDGET_S``, none over ``RULE_TIMEOUT_S``; whole words are never timed, so time cannot change them."""
    limits = []
    substitute = Rule.substitute

    def recorded(rule, text, timeout):
        limits.append((rule.regex, timeout))
        return substitute(rule, text, timeout)

    monkeypatch.setattr(Rule, "substitute", recorded)
    rule = Rule(r"(?:a+){10}b", "x", regex=True)
    lexicon = Lexicon((rule,) * 30 + (Rule("z", "zed"),))
    explained = lexicon.explain("a" * 300 + " z")
    timed = [timeout for is_regex, timeout in limits if is_regex]
    assert 0 < len(timed) < 30 and all(0 < timeout <= RULE_TIMEOUT_S for timeout in timed)
    assert sum(timed) <= APPLY_BUDGET_S
    assert limits[-1] == (False, None)  # the whole word, searched without a limit
    assert len(explained.skipped) == 30 and all(index < 30 for index, _ in explained.skipped)
    assert any("no time left" in why for _, why in explained.skipped)
    assert explained.spoken == "a" * 300 + " zed"


def test_lexicon_limits_and_types():
    with pytest.raises(PronunciationError, match="at most"):
        Lexicon((Rule("a", "b"),) * (MAX_RULES + 1))
    with pytest.raises(PronunciationError, match="not a Rule"):
        Lexicon(({"pattern": "a"},))
    with pytest.raises(PronunciationError, match="must be a list"):
        Lexicon(5)
    with pytest.raises(PronunciationError) as info:
        Lexicon.from_specs([{"pattern": "a", "replacement": "b"}, {"pattern": "", "replacement": "b"}])
    assert info.value.index == 1 and info.value.field == "pattern" and "rule 2" in str(info.value)


def test_pronounce_keeps_spans_and_written_text():
    text = "See e.g. this.  And vs. that! Plain."
    segments = split_segments(text, target_chars=0)  # one sentence a segment
    spoken = pronounce(segments, default_lexicon(), None)
    assert [(s.start, s.end, s.text) for s in spoken] == [(s.start, s.end, s.text) for s in segments]
    assert [s.speech for s in spoken] == ["See for example this.", "And versus that!", "Plain."]
    assert spoken[2] is segments[2] and spoken[2].spoken is None  # unchanged segments are the same objects
    assert pronounce(segments, None, None) is segments


def test_pronounce_refuses_what_is_not_a_lexicon():
    with pytest.raises(TypeError, match="Lexicon"):
        pronounce([Segment(0, 1, "a")], [Rule("a", "b")], None)


_rule_specs = st.fixed_dictionaries({
    "pattern": st.text(min_size=1, max_size=12),
    "replacement": st.text(max_size=12),
    "regex": st.booleans(),
    "case_sensitive": st.booleans(),
    "voice": st.one_of(st.none(), st.sampled_from(["Ann", "ann", "Tom"])),
})


def _lexicon(specs) -> Lexicon:
    rules = []
    for spec in specs:
        try:
            rules.append(Rule(**spec))
        except PronunciationError:
            pass
    return Lexicon(tuple(rules))


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(_rule_specs, max_size=6), st.text(max_size=300), st.one_of(st.none(), st.text(max_size=10)))
def test_apply_never_raises_and_stays_bounded(specs, text, voice):
    lexicon = _lexicon(specs)
    explained = lexicon.explain(text, voice)
    assert isinstance(explained.spoken, str)
    assert len(explained.spoken) <= max_spoken_chars(len(text))
    if text.strip():
        assert explained.spoken.strip()


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(_rule_specs, max_size=5), st.text(alphabet=st.sampled_from("ab .!?\n,e.g"), min_size=1,
                                                    max_size=400))
def test_spans_of_pronounced_segments_index_the_original_text(specs, text):
    segments = split_segments(text)
    for seg in pronounce(segments, _lexicon(specs), None):
        assert text[seg.start:seg.end] == seg.text
