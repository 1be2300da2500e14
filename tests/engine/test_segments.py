"""Speech segments (``split_segments``): sentences merged up to the target, never across a paragraph break,
section labels with their headings, spans exact; the streaming ``Segmenter`` gives the same segments however the
text arrives; real documents plan into segments within the limits."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.core.text.segments import (
    DEFAULT_MAX_CHARS,
    DEFAULT_TARGET_CHARS,
    Segmenter,
    _is_label,
    check_target_chars,
    iter_segments,
    split_segments,
    split_sentences,
)
from engine.documents import load_document
from tests.engine.documents.helpers import DATA


def check_plan(text: str, max_chars: int = DEFAULT_MAX_CHARS, target_chars: int = DEFAULT_TARGET_CHARS):
    """The segments of ``text``, after checking what a plan promises: each segment is a run of consecutive
    sentences (its span from the first one's start to the last one's end, its text that span of ``text``), in
    order, without overlap, at most ``max_chars`` long; runs join only within a line (or after a label); and
    the merge is greedy: a segment that the next sentence could have joined did take it."""
    sentences = split_sentences(text, max_chars)
    segments = split_segments(text, max_chars, target_chars)
    if target_chars == 0:
        assert segments == sentences
        return [seg.text for seg in segments]
    at = 0
    runs = []
    for seg in segments:
        assert text[seg.start:seg.end] == seg.text and seg.text == seg.text.strip()
        assert len(seg.text) <= max_chars
        run = []
        while at < len(sentences) and sentences[at].end <= seg.end:
            run.append(sentences[at])
            at += 1
        assert run and run[0].start == seg.start and run[-1].end == seg.end, "a segment is a run of sentences"
        for a, b in zip(run, run[1:], strict=False):
            assert _is_label(a.text) or "\n" not in text[a.end:b.start], "merged across a line break"
        runs.append(run)
    assert at == len(sentences), "every sentence is in a segment"
    for run, nxt in zip(runs, runs[1:], strict=False):
        first, last, following = run[0], run[-1], nxt[0]
        if _is_label(last.text):
            assert following.end - first.start > max_chars, "a label goes with the sentence after it"
        elif last.end - first.start < target_chars and "\n" not in text[last.end:following.start]:
            assert following.end - first.start > target_chars, "a sentence that fits the segment joins it"
    return [seg.text for seg in segments]


def test_short_sentences_are_one_generation():
    assert check_plan("Quick! Close the door!") == ["Quick! Close the door!"]
    text = "Good morning. The weather is fine today! Shall we go?"
    assert check_plan(text) == [text]


def test_sentences_merge_up_to_the_target_and_no_further():
    sentence = "This sentence is about forty characters. "
    text = sentence * 12
    pieces = check_plan(text, target_chars=100)
    assert all(p == (sentence * 2).strip() for p in pieces)  # two fit in 100, three would not
    assert len(check_plan(text, target_chars=0)) == 12


def test_line_breaks_are_never_crossed():
    text = "A heading\n\nFirst line.\nSecond line.\n   \n\nLast paragraph. It ends."
    assert check_plan(text) == ["A heading", "First line.", "Second line.", "Last paragraph. It ends."]
    assert check_plan("A sentence that runs\non over a line break. Then another.") == [
        "A sentence that runs\non over a line break. Then another."]  # a line break inside a sentence is no break


@pytest.mark.parametrize("label", ["6.1.", "IV.", "3)", "(a)", "12.", "§ 4.", "A.2."])
def test_a_section_label_goes_with_its_heading_across_the_break(label):
    text = f"The end of a section.\n\n{label}\n\nInstalling Debian\n\nThe installer runs."
    assert check_plan(text) == ["The end of a section.", f"{label}\n\nInstalling Debian", "The installer runs."]
    assert check_plan(f"{label} Installing Debian\n\nText.", target_chars=20) == [f"{label} Installing Debian",
                                                                                    "Text."]


def test_an_overlong_sentence_is_still_cut_at_clause_marks():
    clause = "this clause goes on for a while, "
    pieces = check_plan("Short one. " + clause * 20 + "end. Short again.", max_chars=100, target_chars=80)
    assert pieces[0].startswith("Short one. this clause")  # the cut pieces merge like sentences
    assert all(len(p) <= 100 for p in pieces)
    assert pieces[-1].endswith("Short again.")


def test_segments_come_out_as_soon_as_they_are_final():
    segmenter = Segmenter(start=100, target_chars=40)
    assert segmenter.feed("One sentence here. Two. ") == []  # more may join
    out = segmenter.feed("A third sentence, long enough to stand alone. More text comes")
    # the first two cannot take the third; the third is as long as the target, so nothing can join it
    assert [(s.start, s.text) for s in out] == [(100, "One sentence here. Two."),
                                                (124, "A third sentence, long enough to stand alone.")]
    assert segmenter.feed(" here.") == []
    out = segmenter.feed("\nNext line")  # the line break closes the line's last segment
    assert [s.text for s in out] == ["More text comes here."]
    assert [s.text for s in segmenter.finish()] == ["Next line"]


def test_merging_keeps_memory_bounded():
    segmenter = Segmenter()
    out = []
    for _ in range(2000):
        out += segmenter.feed("Word after word. ")
    assert len(segmenter._text) < 5000 and len(out) > 100


def test_a_label_with_more_space_after_it_than_a_segment_holds_is_final_at_once():
    segmenter = Segmenter()
    out = segmenter.feed("6.1.")
    for _ in range(4):
        out += segmenter.feed(" " * 100)
    assert [s.text for s in out] == ["6.1."]  # no sentence after it could join it now
    assert [s.text for s in segmenter.feed("Heading text") + segmenter.finish()] == ["Heading text"]


@pytest.mark.parametrize("bad", [-1, 5, 19, DEFAULT_MAX_CHARS + 1, 10**9, 2.5, "200", True])
def test_a_target_that_is_no_number_of_characters_is_refused(bad):
    with pytest.raises(ValueError, match="segment target"):
        check_target_chars(bad)
    with pytest.raises(ValueError, match="segment target"):
        split_segments("Hello there.", target_chars=bad)


_ALPHABET = st.sampled_from(list("abcXYZ 中文かな\n\t.!?…。！？；,、，:;\"'”’)」』")
                            + ["Dr.", "e.g.", " J. ", "6.1. ", "\n\n", "IV. ", "x" * 30, "Word word. "])


@settings(max_examples=300, deadline=None)
@given(pieces=st.lists(_ALPHABET, max_size=150), max_chars=st.integers(min_value=20, max_value=80),
       target=st.integers(min_value=0, max_value=80))
def test_any_text_plans_into_runs_of_sentences_within_the_limits(pieces, max_chars, target):
    target = 0 if target < 20 else min(target, max_chars)
    check_plan("".join(pieces), max_chars, target)


@settings(max_examples=100, deadline=None)
@given(text=st.text(max_size=400))
def test_any_unicode_text_plans_within_the_limits(text):
    check_plan(text, 40, 30)


@settings(max_examples=300, deadline=None)
@given(pieces=st.lists(_ALPHABET, max_size=150), cuts=st.lists(st.integers(min_value=0, max_value=2000), max_size=12),
       start=st.integers(min_value=0, max_value=10**6), target=st.integers(min_value=20, max_value=80))
def test_text_fed_in_any_pieces_gives_the_whole_texts_segments(pieces, cuts, start, target):
    text = "".join(pieces)
    bounds = sorted({min(c, len(text)) for c in cuts} | {0, len(text)})
    fed = [text[a:b] for a, b in zip(bounds, bounds[1:], strict=False)] + [""]
    got = list(iter_segments(fed, start=start, max_chars=80, target_chars=target))
    whole = split_segments(text, 80, target)
    assert [(s.start - start, s.end - start, s.text) for s in got] == [(s.start, s.end, s.text) for s in whole]


REAL = ["debian-reference-ch08.en.html", "debian-handbook-sect.apt-get.html", "maint-guide-pages-1-16.pdf",
        "zstd-README.md"]


@pytest.mark.parametrize("name", REAL)
def test_real_documents_plan_into_fewer_longer_segments(name):
    text = load_document(DATA / name).text
    segments = check_plan(text)
    sentences = split_sentences(text)
    # technical documents are mostly paragraphs of one or two sentences, which stay apart: 12-20 % fewer
    assert len(segments) < 0.9 * len(sentences)
    assert not [s for s in segments if _is_label(s)]
    assert _median(map(len, segments)) > 1.1 * _median(len(s.text) for s in sentences)


def _median(values) -> int:
    values = sorted(values)
    return values[len(values) // 2]
