"""``split_segments``: sentence boundaries in English and CJK text, long-sentence cuts, exact spans."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.text import DEFAULT_MAX_CHARS, split_segments


def assert_exact_cover(text: str, max_chars: int = DEFAULT_MAX_CHARS) -> list[str]:
    """Check the span invariants and return the segment texts.

    Segments are in order and do not overlap; each is its own span of ``text``, stripped, non-empty
    and at most ``max_chars`` long; together they hold every non-whitespace character exactly once.
    """
    segments = split_segments(text, max_chars=max_chars)
    covered = [0] * len(text)
    previous_end = 0
    for seg in segments:
        assert previous_end <= seg.start < seg.end <= len(text)
        assert text[seg.start:seg.end] == seg.text
        assert seg.text == seg.text.strip() and len(seg.text) <= max_chars
        for i in range(seg.start, seg.end):
            covered[i] += 1
        previous_end = seg.end
    for i, ch in enumerate(text):
        if not ch.isspace():
            assert covered[i] == 1, f"character {i} ({ch!r}) covered {covered[i]} times"
    return [seg.text for seg in segments]


@pytest.mark.parametrize(("text", "expected"), [
    ("Good morning. The weather is fine today! Shall we go?",
     ["Good morning.", "The weather is fine today!", "Shall we go?"]),
    ("Dr. Smith met Mrs. Jones at St. Paul's. They talked.",
     ["Dr. Smith met Mrs. Jones at St. Paul's.", "They talked."]),
    ("J. R. R. Tolkien wrote it. I read it.", ["J. R. R. Tolkien wrote it.", "I read it."]),
    ("Bring fruit, e.g. apples. Pay 3.50 dollars. Done.", ["Bring fruit, e.g. apples.", "Pay 3.50 dollars.", "Done."]),
    ('He said "Stop." Then he left.', ['He said "Stop."', "Then he left."]),
    ("“Really?” she asked. ‘Yes.’ He nodded.", ["“Really?” she asked.", "‘Yes.’", "He nodded."]),
    ("(It was late.) We slept.", ["(It was late.)", "We slept."]),
    ("Wait... Really? Yes… of course.", ["Wait...", "Really?", "Yes… of course."]),
    ("Version 2.0 is out! Get it now.", ["Version 2.0 is out!", "Get it now."]),
])
def test_english_sentences(text, expected):
    assert assert_exact_cover(text) == expected


@pytest.mark.parametrize(("text", "expected"), [
    ("今天天气很好。我们去公园吧！你想去吗？", ["今天天气很好。", "我们去公园吧！", "你想去吗？"]),
    ("他说：“走吧。”我们就走了。", ["他说：“走吧。”", "我们就走了。"]),
    ("先做这个；再做那个。", ["先做这个；", "再做那个。"]),
    ("東京は晴れです。明日は雨でしょう！「本当？」と聞いた。",
     ["東京は晴れです。", "明日は雨でしょう！", "「本当？」", "と聞いた。"]),
    ("Hello there. 你好。How are you? 元気です。", ["Hello there.", "你好。", "How are you?", "元気です。"]),
])
def test_cjk_and_mixed_sentences_without_spaces(text, expected):
    assert assert_exact_cover(text) == expected


def test_paragraphs_split_at_blank_lines_and_keep_single_line_breaks():
    text = "A heading\n\nFirst line\nsecond line\n   \n\nLast paragraph without a full stop"
    assert assert_exact_cover(text) == ["A heading", "First line\nsecond line", "Last paragraph without a full stop"]


def test_long_sentence_without_punctuation_is_cut_at_spaces():
    words = [f"word{i}" for i in range(800)]
    text = " ".join(words)  # about 5000 characters, no punctuation
    assert len(text) > 5000
    pieces = assert_exact_cover(text, max_chars=200)
    assert len(pieces) > 5000 // 200
    assert " ".join(pieces) == text  # every cut falls on a space: no word is broken
    assert all(len(p) > 150 for p in pieces[:-1])  # cuts are near the limit, not at every space


def test_long_sentence_is_cut_after_clause_marks_first():
    clause = "this clause goes on for a while, "
    text = clause * 20 + "end."
    pieces = assert_exact_cover(text, max_chars=100)
    assert all(p.endswith(",") for p in pieces[:-1])


def test_unbroken_run_is_cut_at_the_limit():
    text = "x" * 450
    assert assert_exact_cover(text, max_chars=200) == ["x" * 200, "x" * 200, "x" * 50]


@pytest.mark.parametrize("text", ["", " ", "\n\n\t  \n", "\u3000 \u00a0"])
def test_whitespace_only_gives_no_segments(text):
    assert split_segments(text) == []


def test_max_chars_must_leave_room_for_a_clause():
    with pytest.raises(ValueError, match="max_chars"):
        split_segments("Hello.", max_chars=5)


_ALPHABET = st.sampled_from(list("abcXYZ 中文かな\n\t.!?…。！？；,、，:;\"'”’)」』") + ["Dr.", "e.g.", " J. "])


@settings(max_examples=300, deadline=None)
@given(pieces=st.lists(_ALPHABET, max_size=120), max_chars=st.integers(min_value=20, max_value=60))
def test_segments_cover_every_character_exactly_once(pieces, max_chars):
    assert_exact_cover("".join(pieces), max_chars=max_chars)


@settings(max_examples=100, deadline=None)
@given(text=st.text(max_size=400))
def test_any_unicode_text_is_covered(text):
    assert_exact_cover(text, max_chars=40)
