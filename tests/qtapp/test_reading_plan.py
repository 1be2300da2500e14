"""The reading plan: sentences with voices and document spans, the same however the text is read in pieces and
however far it is planned, and found by position without planning the whole text."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.core.text.reading_policy import CODE_ANNOUNCEMENT, ReadingPolicy, policy_segments
from engine.core.text.voice_marks import parse_mark
from qtapp import reading_plan
from qtapp.reading_plan import ReadingPlan, StrText, iter_sentences


def reference_sentences(text: str, start: int = 0, end: int | None = None) -> list[tuple[int, int, str | None]]:
    """Passages cut from the whole range at once (a marked passage from its mark to the next blank line or mark,
    runs of other lines together), each split whole by ``policy_segments`` (the reading policy's segmenter)."""
    end = len(text) if end is None else end
    passages, run_start, voice, position = [], None, None, start
    while position < end:
        line_end = text.find("\n", position, end)
        line_end = end if line_end < 0 else line_end
        name, mark_len = parse_mark(text[position:line_end])
        blank = voice is not None and not text[position:line_end].strip() and line_end < end
        if name is not None or blank or run_start is None:
            if run_start is not None:
                passages.append((run_start, position, voice))
            voice = name if name is not None else (None if blank else voice)
            run_start = position + mark_len
        position = line_end + 1
    if run_start is not None:
        passages.append((run_start, end, voice))
    return [(a + s.start, a + s.end, voice) for a, b, voice in passages for s in policy_segments(text[a:b])]


def planned(text: str, start: int = 0, end: int | None = None) -> list[tuple[int, int, str | None]]:
    return [(s.start, s.end, s.voice) for s in iter_sentences(StrText(text).pieces(start, end))]


_WORDS = st.sampled_from(["Hello", "world", "e.g.", "Dr.", "x" * 40, ".", "!", "?", " ", " ", "\n", "\n\n", "\t",
                          "[voice: Ann] ", "[voice: Bob]", "[VOICE:  ]", "\n[voice: Cy]", " [voice: Di] ", "你好。"])


@settings(max_examples=300, deadline=None)
@given(words=st.lists(_WORDS, max_size=80), bounds=st.tuples(st.integers(0, 400), st.integers(0, 400)),
       piece=st.integers(2, 40))
def test_sentences_are_the_passages_split_whole_however_the_text_is_cut(words, bounds, piece):
    text = "".join(words)
    start, end = sorted(min(b, len(text)) for b in bounds)
    with pytest.MonkeyPatch.context() as patch:
        # lines cut into pieces of at most ``piece`` characters, a voice mark cut between pieces among them
        patch.setattr(reading_plan, "MAX_PIECE", piece)
        assert planned(text, start, end) == reference_sentences(text, start, end)
        for s in iter_sentences(StrText(text).pieces(start, end)):
            assert text[s.start:s.end] == s.segment.text or s.segment.spoken == CODE_ANNOUNCEMENT


def test_sentences_map_to_document_spans():
    text = "Intro line. Second sentence!\n[voice: Ann] Hi there. Bye.\nLast one?"
    plan = ReadingPlan(StrText(text).pieces())
    assert plan.index_at(0) == 0
    assert plan.get(10) is None and plan.complete
    # a passage's short sentences are one segment; never across a voice mark
    assert [(text[s.start:s.end], s.voice) for s in plan.sentences] == [
        ("Intro line. Second sentence!", None), ("Hi there. Bye.", "Ann"), ("Last one?", "Ann")]
    assert [s.segment.text for s in plan.run(0, 10)] == ["Intro line. Second sentence!"]  # a run keeps one voice
    assert [s.segment.text for s in plan.run(1, 1)] == ["Hi there. Bye."]
    assert [s.segment.text for s in plan.run(1, 10)] == ["Hi there. Bye.", "Last one?"]  # to the blank line
    assert plan.run(3, 3) == []
    sentences = ReadingPlan(StrText(text).pieces(), target_chars=0)
    assert [s.segment.text for s in sentences.run(0, 10)] == ["Intro line.", "Second sentence!"]


def test_plan_from_an_offset_and_sentence_lookup():
    text = "One. Two. Three. Four."
    plan = ReadingPlan(StrText(text).pieces(text.index("Two"), text.index("Four")), target_chars=0)
    assert plan.index_at(text.index("hree")) == 1
    assert plan.index_at(text.index("Two.") + 4) == 1  # the space after a sentence: the next one
    assert plan.index_at(len(text)) == 1
    assert [s.segment.text for s in plan.sentences] == ["Two.", "Three."]
    merged = ReadingPlan(StrText(text).pieces(text.index("Two"), text.index("Four")))
    assert merged.index_at(text.index("hree")) == 0 and [s.segment.text for s in merged.sentences] == ["Two. Three."]
    assert ReadingPlan(StrText("   \n  ").pieces()).index_at(0) is None


def test_a_long_text_is_planned_only_as_far_as_it_is_asked():
    pieces_read = []

    def pieces():
        for offset, piece in StrText("A sentence of a book. " * 200_000).pieces():
            pieces_read.append(offset)
            yield offset, piece

    plan = ReadingPlan(pieces())
    assert len(plan.run(0, 16)) == 16
    assert len(pieces_read) == 1 and len(plan.sentences) <= 17  # one piece of the one long line
    assert plan.index_at(3_000_000, reach=100_000) is None  # too far past the plan: plan anew from there
    assert len(plan.sentences) < 100
    far = plan.index_at(50_000, reach=100_000)
    assert plan.sentences[far].start <= 50_000 < plan.sentences[far].end + 1


def test_the_reading_policy_changes_what_is_said_not_the_spans():
    """The editor's text as written; the plan says a URL as its site and announces a session, or reads both as
    written by choice, each sentence keeping its span in the document."""
    text = ("Docs live at https://docs.python.org/3/library/re.html today.\n\n>>> import re\n>>> re.match('a', 'a')\n"
            "<re.Match object; span=(0, 1), match='a'>\n\nThat is all.")
    plan = ReadingPlan(StrText(text).pieces(0))
    said = [(s.segment.speech, text[s.start:s.end]) for s in iter(lambda: plan.get(len(plan.sentences)), None)]
    assert said == [("Docs live at docs.python.org today.", text[:text.index("\n")]),
                    (CODE_ANNOUNCEMENT, text[text.index(">>>"):text.index("\n\nThat")]),
                    ("That is all.", "That is all.")]
    read_all = ReadingPlan(StrText(text).pieces(0), policy=ReadingPolicy(read_urls=True, read_code=True))
    spoken = [s.segment.speech for s in iter(lambda: read_all.get(len(read_all.sentences)), None)]
    assert spoken[0] == "Docs live at https://docs.python.org/3/library/re.html today."
    assert any(">>> import re" in s for s in spoken) and CODE_ANNOUNCEMENT not in spoken
