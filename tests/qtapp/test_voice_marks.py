"""``[voice: NAME]`` line marks: parsing, the names a text uses, and the voices its sentences get."""

from qtapp.reading_plan import StrText, iter_sentences
from qtapp.voice_marks import mark_names, parse_mark


def spoken(text, start=0, end=None):
    return [(text[s.start:s.end], s.voice) for s in iter_sentences(StrText(text).pieces(start, end))]


def test_parse_mark():
    assert parse_mark("[voice: Alice] Hello") == ("Alice", len("[voice: Alice] "))
    assert parse_mark("[VOICE:bob the builder]") == ("bob the builder", len("[VOICE:bob the builder]"))
    assert parse_mark("Hello [voice: Alice]") == (None, 0)
    assert parse_mark("[voice: ] nothing") == (None, 0)


def test_marked_lines_get_their_voice_and_unmarked_runs_the_default():
    text = "Once upon a time.\nThere was a fox.\n[voice: Fox] I am hungry!\n\nThe end.\n"
    assert spoken(text) == [("Once upon a time.", None), ("There was a fox.", None), ("I am hungry!", "Fox"),
                            ("The end.", None)]


def test_a_marked_line_ends_its_sentence_and_an_unmarked_run_does_not_end_at_lines():
    text = "A sentence that goes\non after a line break\n[voice: B] and a marked line\nthat is not continued."
    assert spoken(text) == [("A sentence that goes\non after a line break", None), ("and a marked line", "B"),
                            ("that is not continued.", None)]


def test_mark_inside_a_line_is_text():
    text = "He said [voice: Fox] loudly."
    assert spoken(text) == [(text, None)]
    assert mark_names(text) == set()


def test_empty_marked_line_is_dropped_and_range_is_respected():
    text = "[voice: A]\nFirst.\n[voice: B] Second.\nThird."
    assert spoken(text) == [("First.", None), ("Second.", "B"), ("Third.", None)]
    start = text.index("Second")
    assert spoken(text, start, text.index("Third")) == [("Second.", None)]
    b_line = text.index("[voice: B]")
    assert spoken(text, b_line) == [("Second.", "B"), ("Third.", None)]


def test_mark_names_lists_the_voices_of_a_range():
    text = "[voice: Ann] Hi.\n  [VOICE: Bob]   Yo.\nNo [voice: Eve] here.\n[voice: ] none\n[voice: Cy]"
    assert mark_names(text) == {"Ann", "Bob", "Cy"}
    assert mark_names(text, text.index("Bob")) == {"Cy"}  # the range starts inside a mark
    assert mark_names(text, text.index("[VOICE")) == {"Bob", "Cy"}
    assert mark_names(text, 0, text.index("\n")) == {"Ann"}
