"""Reading plans map the engine's segments of each passage to spans of the document."""

from engine.text import split_segments
from qtapp.highlight import ReadingPlan


def test_sentences_map_to_document_spans():
    text = "Intro line. Second sentence!\n[voice: Ann] Hi there. Bye.\nLast one?"
    plan = ReadingPlan(text)
    assert [text[s.start:s.end] for s in plan.sentences] == [
        "Intro line.", "Second sentence!", "Hi there.", "Bye.", "Last one?"]
    assert [p.voice for p in plan.passages] == [None, "Ann", None]
    for sentence in plan.sentences:  # each is exactly the engine's segment of its passage text
        passage = plan.passages[sentence.passage]
        segment = split_segments(passage.text)[sentence.segment]
        assert (passage.start + segment.start, passage.start + segment.end) == (sentence.start, sentence.end)
    assert plan.global_index(1, 1) == 3


def test_plan_from_an_offset_and_sentence_lookup():
    text = "One. Two. Three. Four."
    plan = ReadingPlan(text, text.index("Two"), text.index("Four"))
    assert [text[s.start:s.end] for s in plan.sentences] == ["Two.", "Three."]
    assert plan.sentence_at(text.index("hree")) == 1
    assert plan.sentence_at(text.index("Two.") + 4) == 1  # the space after a sentence: the next one
    assert plan.sentence_at(len(text)) == 1
    assert len(ReadingPlan("   \n  ")) == 0
