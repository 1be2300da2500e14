"""PDF: digits in smaller type are kept unless they are a footnote mark with its note on the page (or the next)."""

from engine.documents import load_document
from tests.engine.documents.helpers import layout_pdf

BODY, SMALL = 10, 6


def pdf(tmp_path, pages, name="f.pdf"):
    path = tmp_path / name
    path.write_bytes(layout_pdf(pages))
    return load_document(path).text


def body(y, *runs):
    """A body line at height ``y``: strings are body type, (text,) tuples smaller type raised as a superscript."""
    return (72, y, BODY, [(SMALL, 4, r[0]) if isinstance(r, tuple) else (BODY, 0, r) for r in runs])


def note(y, text):
    return (72, y, 8, text)


def test_smaller_digits_inside_numbers_are_kept_even_beside_matching_notes(tmp_path):
    page = [body(760, "The mill was built in ", ("1770",), " by the river."),
            body(740, "It closed in (", ("2002",), ") and again in (196", ("1",), ")."),
            body(720, "The speed is 30 km s-", ("1",), " at most."),
            body(700, ("2",), ".1 Gradients"),
            body(680, "The time is \\time ", ("3",), "/4 in the score."),
            body(660, "Old style figures: ", ("1",), "9", ("8",), "4 was a novel."),
            note(90, "1 A note in small type."), note(78, "2 Another note."), note(66, "3 A third note.")]
    text = pdf(tmp_path, [page])
    for kept in ("in 1770 by", "in (2002)", "in (1961).", "km s-1 at", "2.1 Gradients", "\\time 3/4", "1984 was"):
        assert kept in text, kept
    assert "1 A note in small type." in text  # no mark points at it: its number is kept too


def test_a_superscript_mark_after_a_word_goes_and_its_note_follows_the_paragraph(tmp_path):
    page = [body(760, "A reader needs no wizard", ("1",), " to open a book,"),
            body(747, "nor a spell", ("12",), ". Then the paragraph ends."),
            body(700, "The next paragraph has 3 apples", ("7",), " and no note for them."),
            note(90, "1 Wizards are rare."), note(78, "12 Spells are rarer."), note(66, "4 No mark points here.")]
    paragraphs = pdf(tmp_path, [page]).split("\n\n")
    assert paragraphs[0] == "A reader needs no wizard to open a book, nor a spell. Then the paragraph ends."
    assert "The next paragraph has 3 apples7 and no note for them." in paragraphs  # no note 7: the digit stays
    assert "Wizards are rare." in paragraphs and "Spells are rarer." in paragraphs
    assert "4 No mark points here." in paragraphs


def test_a_mark_at_a_page_end_finds_its_note_on_the_next_page(tmp_path):
    first = [body(760 - 13 * i, f"Line {i} of a long paragraph that runs on and on without an end here")
             for i in range(3)] + [body(100, "and the last line of the page has a mark", ("5",), ".")]
    second = [body(760, "The next page starts a paragraph."), note(90, "5 The note of the mark.")]
    text = pdf(tmp_path, [first, second])
    assert "has a mark." in text and "mark5" not in text
    assert "The note of the mark." in text and "5 The note" not in text


def test_a_body_type_number_after_a_sentence_is_a_mark_only_with_its_note(tmp_path):
    page = [body(760, "The guide ends its first sentence. 2"),
            body(740, "Turn to chapter 3 Then read on."),
            body(720, "The year was 1998. 4 Friends came."),
            note(90, "2 The note.")]
    text = pdf(tmp_path, [page])
    assert "first sentence." in text and "sentence. 2" not in text and "\n\nThe note." in text
    assert "chapter 3 Then read on." in text  # no punctuation before it: a number of the text
    assert "1998. 4 Friends came." in text  # no note 4
