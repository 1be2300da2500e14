"""``[voice: NAME]`` marks: parsing, the names a text uses, the voices its sentences get when read aloud, and the
same voices for the same words when it is exported (``engine.core.text.voice_marks``: one rule for both)."""

from hypothesis import given, settings
from hypothesis import strategies as st

from engine.core.text.voice_marks import mark_names, parse_mark, voice_above
from engine.production.book_structure import book_from_text
from qtapp.reading_plan import StrText, iter_sentences, voice_at


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


def test_a_mark_holds_to_the_next_blank_line_and_ends_the_sentence_before_it():
    text = ("A sentence that goes\non after a line break\n[voice: B] and a marked passage\nthat goes on here.\n\n"
            "Narrated again.")
    assert spoken(text) == [("A sentence that goes\non after a line break", None),
                            ("and a marked passage\nthat goes on here.", "B"), ("Narrated again.", None)]


def test_a_mark_holds_until_the_next_mark():
    text = "[voice: A] One.\nTwo.\n[voice: B] Three.\nFour.\n   \nFive."
    assert spoken(text) == [("One.", "A"), ("Two.", "A"), ("Three.", "B"), ("Four.", "B"), ("Five.", None)]


def test_mark_inside_a_line_is_text():
    text = "He said [voice: Fox] loudly."
    assert spoken(text) == [(text, None)]
    assert mark_names(text) == set()


def test_a_mark_alone_on_its_line_voices_the_lines_after_it_and_a_range_is_respected():
    text = "[voice: A]\nFirst.\n[voice: B] Second.\nThird.\n\nFourth."
    assert spoken(text) == [("First.", "A"), ("Second.", "B"), ("Third.", "B"), ("Fourth.", None)]
    start = text.index("Second")
    assert spoken(text, start, text.index("Third")) == [("Second.", None)]  # no voice given: the default
    b_line = text.index("[voice: B]")
    assert spoken(text, b_line) == [("Second.", "B"), ("Third.", "B"), ("Fourth.", None)]


def test_reading_from_any_place_finds_the_mark_in_effect_there():
    text = "[voice: A] One.\nTwo.\nThree. Four.\n\nFive.\n[voice: B] Six."
    source = StrText(text)
    assert voice_at(source, text.index("Three")) == "A"  # two lines below its mark
    assert voice_at(source, text.index("Four")) == "A"
    assert voice_at(source, text.index("One")) == "A"  # on its line, after the mark
    assert voice_at(source, 0) is None  # before the mark
    assert voice_at(source, text.index("Five")) is None  # after the blank line
    assert voice_at(source, text.index("Six")) == "B"
    assert voice_above(["Two.", "[voice: A] One."]) == "A" and voice_above(["x", "", "[voice: A] y"]) is None


_PIECES = st.sampled_from(["Hello", "world.", "Yes!", "so", " ", " ", "\n", "\n", "\n\n", "\n  \n",
                           "[voice: Ann] ", "[voice: Bob]", "\n[voice: Cy] "])


@settings(max_examples=300, deadline=None)
@given(st.lists(_PIECES, max_size=60))
def test_reading_and_export_give_every_word_the_same_voice(pieces):
    text = "".join(pieces)
    read = [(word, s.voice) for s in iter_sentences(StrText(text).pieces()) for word in s.segment.text.split()]
    try:
        book = book_from_text(text, "t")
    except Exception:  # noqa: BLE001 - nothing to speak: then nothing is read either
        assert read == []
        return
    exported = [(word, p.voice) for c in book.chapters for p in c.passages for word in p.text.split()]
    assert read == exported


def test_mark_names_lists_the_voices_of_a_range():
    text = "[voice: Ann] Hi.\n  [VOICE: Bob]   Yo.\nNo [voice: Eve] here.\n[voice: ] none\n[voice: Cy]"
    assert mark_names(text) == {"Ann", "Bob", "Cy"}
    assert mark_names(text, text.index("Bob")) == {"Cy"}  # the range starts inside a mark
    assert mark_names(text, text.index("[VOICE")) == {"Bob", "Cy"}
    assert mark_names(text, 0, text.index("\n")) == {"Ann"}
