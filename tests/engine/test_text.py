"""``split_segments``: sentence boundaries in English and CJK text, long-sentence cuts, exact spans; the
streaming ``Segmenter`` gives the same segments however the text arrives, and punctuation runs cost linear time."""

from __future__ import annotations

import multiprocessing
import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.core.text.segments import (
    DEFAULT_MAX_CHARS,
    Segmenter,
    _continues,
    _cut_point,
    iter_segments,
    split_segments,
    split_sentences,
)


def assert_exact_cover(text: str, max_chars: int = DEFAULT_MAX_CHARS, target_chars: int = 0) -> list[str]:
    """Check the span invariants and return the segment texts.

    Segments are in order and do not overlap; each is its own span of ``text``, stripped, non-empty
    and at most ``max_chars`` long; together they hold every non-whitespace character exactly once.
    """
    segments = split_segments(text, max_chars=max_chars, target_chars=target_chars)
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
    assert split_segments(text) == [] and split_sentences(text) == []


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


# ---- the streaming segmenter against the one-pass splitter it replaced ----------------------------------------
_OLD_END = re.compile(r"""(?:[.!?…]+["'”’)\]]*(?=\s|$))|(?:[。！？；]+[」』”’）)]*)|(?:\n\s*\n)""")


def reference_split(text: str, max_chars: int) -> list[tuple[int, int]]:
    """The splitter as it was before ``Segmenter``: one regex pass over the whole text (spans only)."""
    out: list[tuple[int, int]] = []

    def add(start: int, end: int) -> None:
        while start < end and text[start].isspace():
            start += 1
        while end > start and text[end - 1].isspace():
            end -= 1
        while end - start > max_chars:
            cut = _cut_point(text, start, start + max_chars)
            add(start, cut)
            start = cut
            while start < end and text[start].isspace():
                start += 1
        if end > start:
            out.append((start, end))

    pos = 0
    for m in _OLD_END.finditer(text):
        if not _continues(text, m):
            add(pos, m.end())
            pos = m.end()
    add(pos, len(text))
    return out


def spans(segments) -> list[tuple[int, int]]:
    return [(seg.start, seg.end) for seg in segments]


_DOC = st.lists(_ALPHABET | st.sampled_from(["...", "\n\n", "   ", "x" * 30, ". a", "!!! ", "……"]), max_size=150)


@settings(max_examples=300, deadline=None)
@given(pieces=_DOC, max_chars=st.integers(min_value=20, max_value=60))
def test_split_segments_equals_the_one_pass_reference(pieces, max_chars):
    text = "".join(pieces)
    assert spans(split_sentences(text, max_chars)) == reference_split(text, max_chars)


@settings(max_examples=300, deadline=None)
@given(pieces=_DOC, cuts=st.lists(st.integers(min_value=0, max_value=2000), max_size=12),
       start=st.integers(min_value=0, max_value=10**6), max_chars=st.integers(min_value=20, max_value=60))
def test_text_fed_in_any_pieces_gives_the_same_segments(pieces, cuts, start, max_chars):
    """However the text is cut into pieces (empty ones too), the segments are those of the whole text, offset by
    ``start``, and each comes out as soon as it is final: never later than the piece that decides it."""
    text = "".join(pieces)
    bounds = sorted({min(c, len(text)) for c in cuts} | {0, len(text)})
    fed = [text[a:b] for a, b in zip(bounds, bounds[1:], strict=False)] + [""]
    got = list(iter_segments(fed, start=start, max_chars=max_chars, target_chars=0))
    assert [(s.start - start, s.end - start) for s in got] == reference_split(text, max_chars)
    assert all(s.text == text[s.start - start:s.end - start] for s in got)


def test_segments_come_out_before_the_text_ends():
    segmenter = Segmenter(start=100, target_chars=0)
    first = segmenter.feed("One sentence here. Another one follows")
    assert [(s.start, s.text) for s in first] == [(100, "One sentence here.")]
    assert segmenter.feed(" soon") == []  # still undecided: the sentence has not ended
    assert [s.text for s in segmenter.finish()] == ["Another one follows soon"]


def test_a_long_sentence_is_cut_while_it_is_still_arriving():
    segmenter = Segmenter(max_chars=50)
    out = []
    for _ in range(100):
        out += segmenter.feed("word " * 10)
    assert len(out) >= 95 and all(len(s.text) <= 50 for s in out)  # no wait for a sentence end that never comes
    assert len(segmenter._text) < 5000  # memory stays bounded by the sentence in hand, not the text


def _rejoined(split, text: str) -> str:
    return "".join(s.text for s in split(text))


@pytest.mark.parametrize("run", ["." * 200_000 + "1", "!" * 200_000, "…" * 200_000 + "x", ".!?" * 70_000])
def test_long_punctuation_runs_take_linear_time(run):
    """Dot leaders of a contents page: the old pattern backtracked through the run from every dot, hours on these
    runs where a linear scan takes milliseconds. Each split runs in a child process that is ended if it has not
    finished within a minute: a hang guard with room for any busy machine, not a measure of speed."""
    with multiprocessing.get_context("fork").Pool(1) as pool:
        for split in (split_segments, split_sentences):
            assert pool.apply_async(_rejoined, (split, run)).get(timeout=60) == run


# ---- where a long sentence is cut -----------------------------------------------------------------------------
DOCUMENTS = Path(__file__).resolve().parents[1] / "data" / "documents"
# What ends a piece at a clause mark, or what starts the next at a conjunction
# (``engine.core.text.segments._cut_point``'s rule, written out here from the punctuation a reader pauses at).
_ENDS_AT_CLAUSE = re.compile(r"""(?:[,;:]|--|[—–…])["'”’)\]]*$""")
_CONJUNCTIONS = {"and", "but", "or", "nor", "yet", "which", "that", "because", "although", "though", "while",
                 "whereas", "unless", "until", "when", "where", "whether", "who", "whom", "whose", "since", "if"}


def _cuts(text: str) -> list[tuple[str, str]]:
    """(piece before, piece after) for every cut of a sentence too long for one segment in ``text``'s
    passages, as export reads them (``book_from_text``)."""
    from engine.production.book_structure import book_from_text

    cuts = []
    for chapter in book_from_text(text, "book").chapters:
        for passage in chapter.passages:
            pieces = split_sentences(passage.text)
            for before, after in zip(pieces, pieces[1:], strict=False):
                if _same_sentence(passage.text, before, after):
                    cuts.append((before.text, after.text))
    return cuts


def _same_sentence(text: str, before, after) -> bool:
    return len(split_sentences(text[before.start:after.end], max_chars=10**9)) == 1


def test_a_novels_long_sentences_are_cut_where_a_reader_breathes():
    """Pride and Prejudice, chapters 1-12 (Project Gutenberg's text): its sentences over 300 characters were cut at
    the last space, inside a phrase ("…Mr. Morris immediately; that he is to take" / "possession before
    Michaelmas"); now at a clause mark, else before a conjunction."""
    cuts = _cuts((DOCUMENTS / "pride-and-prejudice-ch1-12.txt").read_text(encoding="utf-8"))
    assert len(cuts) >= 20
    at_clause = [c for c in cuts if _ENDS_AT_CLAUSE.search(c[0])]
    before_conjunction = [c for c in cuts if c not in at_clause and c[1].split()[0] in _CONJUNCTIONS]
    assert len(at_clause) >= 0.9 * len(cuts), [c for c in cuts if c not in at_clause][:5]
    assert len(at_clause) + len(before_conjunction) == len(cuts)
    assert any(b.endswith("Mr. Morris immediately;") and a.startswith("that he is to take possession")
               for b, a in cuts)


@pytest.mark.parametrize(("sentence", "first_piece_ends"), [
    ("a" * 150 + " went on and on, and then the rest " + "b " * 80, "on,"),
    ("a" * 150 + " went on — and on " + "b " * 80, "—"),
    ("a" * 150 + " went on -- on " + "b " * 80, "--"),
    ("a" * 150 + " went on--on " + "b " * 80, "--"),
    ("a" * 150 + " went on – on " + "b " * 80, "–"),
])
def test_dashes_are_clause_marks(sentence, first_piece_ends):
    first = split_sentences(sentence)[0].text
    assert first.endswith(first_piece_ends), first[-30:]


def test_a_long_sentence_without_clause_marks_is_cut_before_a_conjunction():
    sentence = " ".join(["word"] * 40) + " which " + " ".join(["word"] * 60) + "."
    pieces = split_sentences(sentence)
    assert pieces[1].text.startswith("which word")


def test_numbers_and_times_are_no_clause_marks():
    sentence = "x " * 60 + "it cost 1,000 at 10:30 and " + "y " * 100
    pieces = split_sentences(sentence)
    assert not pieces[0].text.endswith(("1,", "10:")) and pieces[1].text.startswith("and y")


_CLAUSE_ALPHABET = st.sampled_from(["word", "phrase", " ", " ", " ", ",", ";", ":", "—", "--", " – ", " - ", "…",
                                    " and ", " that ", " which ", "\n", ".", "1,000", "10:30", "x" * 25, "、", "，"])


@settings(max_examples=300, deadline=None)
@given(pieces=st.lists(_CLAUSE_ALPHABET, max_size=200), max_chars=st.integers(min_value=20, max_value=80))
def test_cutting_at_clause_marks_keeps_every_character_in_order_within_the_limit(pieces, max_chars):
    assert_exact_cover("".join(pieces), max_chars=max_chars)


@settings(max_examples=200, deadline=None)
@given(pieces=st.lists(_CLAUSE_ALPHABET, max_size=200), max_chars=st.integers(min_value=20, max_value=80),
       cuts=st.lists(st.integers(min_value=0, max_value=3000), max_size=8))
def test_clause_cuts_are_the_same_however_the_text_arrives(pieces, max_chars, cuts):
    text = "".join(pieces)
    bounds = sorted({min(c, len(text)) for c in cuts} | {0, len(text)})
    fed = [text[a:b] for a, b in zip(bounds, bounds[1:], strict=False)]
    got = list(iter_segments(fed, max_chars=max_chars, target_chars=0))
    assert spans(got) == reference_split(text, max_chars)
