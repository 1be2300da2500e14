"""Pronunciation rules through the engine: what is spoken changes, the spans do not, on every path."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engine import Sampling, TextError, Voice
from engine.core.text.segments import Segment
from engine.pronunciation import Lexicon, Rule, default_lexicon

VOICE = Voice.preset("vivian", "english")
WRITTEN = "Fruit, e.g. apples.\nNothing else."  # two lines: two segments
SAID = "Fruit, for example apples.\nNothing else."


def test_plan_keeps_the_written_spans_and_says_the_rules(tiny_engine):
    eng = tiny_engine("custom_voice")
    plan = eng.plan(WRITTEN, VOICE, pronunciation=default_lexicon())
    assert [(s.start, s.end, s.text) for s in plan.segments] == [(0, 19, "Fruit, e.g. apples."),
                                                                 (20, 33, "Nothing else.")]
    assert [s.speech for s in plan.segments] == ["Fruit, for example apples.", "Nothing else."]
    assert [s.speech for s in eng.plan(WRITTEN, VOICE).segments] == ["Fruit, e.g. apples.", "Nothing else."]


def test_codes_are_those_of_the_text_the_rules_say(tiny_engine):
    eng = tiny_engine("custom_voice")
    sampling = Sampling(seed=3)
    ruled = eng.generate_codes(WRITTEN, VOICE, sampling, max_frames=6, pronunciation=default_lexicon())
    said = eng.generate_codes(SAID, VOICE, sampling, max_frames=6)
    written = eng.generate_codes(WRITTEN, VOICE, sampling, max_frames=6)
    np.testing.assert_array_equal(ruled, said)
    assert ruled.shape == written.shape and (ruled != written).any()


def test_stream_chunks_carry_the_written_spans(tiny_engine):
    eng = tiny_engine("custom_voice")
    chunks = list(eng.stream(WRITTEN, VOICE, sampling=Sampling(seed=1), max_frames=4,
                             pronunciation=default_lexicon()))
    assert sorted({(c.segment, c.span) for c in chunks}) == [(0, (0, 19)), (1, (20, 33))]


def test_segments_given_already_cut_get_the_rules_too(tiny_engine):
    eng = tiny_engine("custom_voice")
    segments = [Segment(100, 119, "Fruit, e.g. apples.")]
    plan = eng.plan(segments, VOICE, pronunciation=default_lexicon())
    assert plan.segments[0].speech == "Fruit, for example apples." and plan.segments[0].start == 100


def test_a_voice_scoped_rule_follows_the_voice_name(tiny_engine):
    eng = tiny_engine("custom_voice")
    lexicon = Lexicon((Rule("apples", "pears", voice="Vivian"),))
    assert eng.plan("apples.", VOICE, pronunciation=lexicon).segments[0].speech == "pears."
    assert eng.plan("apples.", Voice.preset("ryan", "english"), pronunciation=lexicon).segments[0].speech == "apples."


def test_frame_budget_follows_the_spoken_text(tiny_engine):
    eng = tiny_engine("custom_voice")
    lexicon = Lexicon((Rule("x", "a much longer thing to say"),))
    plan = eng.plan("x.", VOICE, pronunciation=lexicon)
    assert plan.frame_budget(plan.segments[0]) == eng.plan("a much longer thing to say.", VOICE).frame_budget(
        plan.segments[0])


def test_check_checks_what_is_said(tiny_engine):
    """A replacement can make a sentence too long for the model's prompt: the check sees it before any work."""
    eng = tiny_engine("custom_voice")
    grow = Lexicon((Rule("(.)", r"\1𠀀𠀁", regex=True),))  # three times as long, in rare characters
    text = "ab " * 90
    eng.check(text, VOICE)
    with pytest.raises(TextError, match="too long"):
        eng.check(text, VOICE, pronunciation=grow)


def test_the_batched_path_says_the_same(plan_engine):
    eng = plan_engine("exact")  # two frame loops agreeing sample for sample: exactness is the point
    sampling = Sampling(seed=5)
    single = list(eng.stream(WRITTEN, VOICE, sampling=sampling, max_frames=5, pronunciation=default_lexicon()))
    many = eng.batched(slots=2, warmup=False)
    batched = list(many.stream(WRITTEN, VOICE, sampling=sampling, max_frames=5, pronunciation=default_lexicon()))
    plain = list(many.stream(WRITTEN, VOICE, sampling=sampling, max_frames=5))
    audio = lambda chunks: np.concatenate([c.samples for c in chunks])  # noqa: E731
    np.testing.assert_allclose(audio(batched), audio(single), atol=1e-5)
    assert [c.span for c in batched] == [c.span for c in single]
    assert audio(plain).shape != audio(batched).shape or not np.allclose(audio(plain), audio(batched))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=st.lists(st.sampled_from(list("ab .!?\n,") + ["e.g.", "vs.", "café", "cafe\u0301"]), min_size=1,
                     max_size=60).map("".join).filter(str.strip),
       patterns=st.lists(st.sampled_from(["a", "b", "e.g.", "café", "a b", "."]), max_size=4),
       replacement=st.sampled_from(["", "x", "a much longer thing", "."]))
def test_plan_spans_always_index_the_written_text(tiny_engine, text, patterns, replacement):
    eng = tiny_engine("custom_voice")
    lexicon = Lexicon(tuple(Rule(p, replacement) for p in patterns) + default_lexicon().rules)
    plan = eng.plan(text, VOICE, pronunciation=lexicon)
    assert [(s.start, s.end, s.text) for s in plan.segments] == [
        (s.start, s.end, s.text) for s in eng.plan(text, VOICE).segments]
    for seg in plan.segments:
        assert text[seg.start:seg.end] == seg.text and seg.speech.strip()
