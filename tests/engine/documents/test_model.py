"""The rules every format shares: section numbers, chapter labels, anchors and chapter spans."""

from pathlib import Path

from engine.core.text.segments import split_segments
from engine.documents.model import Block, Document, Parsed, TocEntry, assemble, clean_blocks


def texts(blocks):
    return [(b.text, b.level) for b in clean_blocks(blocks)]


def assembled(blocks, toc=None, fallback=None) -> Document:
    doc = Document(Path("book.html"), "", "book")
    assemble(Parsed(blocks, toc=toc, fallback_anchors=fallback or {}), doc)
    return doc


def test_section_numbers_never_become_segments_of_their_own():
    doc = assembled([Block("6.1. Foo bar", 2), Block("Some text follows here."), Block("2.1.", 2),
                     Block("Installing", 2), Block("1. Install the package. Then run it.")])
    assert doc.text.split("\n\n")[:3] == ["6.1 Foo bar", "Some text follows here.", "2.1 Installing"]
    segments = [s.text for s in split_segments(doc.text)]
    assert "6.1." not in segments and "2.1." not in segments and "1." not in segments
    assert "1 Install the package. Then run it." in segments


def test_standalone_numbers_are_dropped_unless_they_number_the_next_heading():
    assert texts([Block("12"), Block("A paragraph."), Block("IV."), Block("Another one."), Block("§ 3"),
                  Block("7", 1), Block("3 Already numbered", 2)]) == [
        ("A paragraph.", 0), ("Another one.", 0), ("3 Already numbered", 2)]


def test_single_letters_and_words_that_look_roman_are_kept():
    assert texts([Block("D"), Block("I"), Block("DIM"), Block("CIVIL")]) == [("D", 0), ("I", 0), ("DIM", 0),
                                                                         ("CIVIL", 0)]


def test_blocks_without_words_are_dropped_and_lines_without_words_too():
    assert texts([Block(". . . . . ."), Block("* * *"), Block("—"), Block("a\n.\nb")]) == [("a\nb", 0)]


def test_chapter_labels_join_their_titles():
    assert texts([Block("Chapter 2", 2), Block("First steps", 1)]) == [("Chapter 2: First steps", 1)]
    assert texts([Block("CHAPTER"), Block("THREE", 2), Block("DEBIAN DUTIES", 1)]) == [
        ("CHAPTER THREE: DEBIAN DUTIES", 1)]
    assert texts([Block("Chapter 1. GNU/Linux tutorials", 1)]) == [("Chapter 1: GNU/Linux tutorials", 1)]


def test_whitespace_and_invisible_characters_are_cleaned():
    assert texts([Block("  soft\u00adhy\u200bphen \t and\xa0nbsp \n  next line  ")]) == [
        ("softhyphen and nbsp\nnext line", 0)]
    assert texts([Block("stable\u2019 \u0300 release")]) == [("stable\u2019 release", 0)]


def test_chapters_from_a_contents_nest_and_resolve_missing_fragments():
    blocks = [Block("Intro", 1, ["a.html"]), Block("Text.", 0, ["a.html#x"]), Block("Second part", 1, ["b.html"]),
              Block("Section", 2, ["b.html#s"]), Block("More.")]
    toc = [TocEntry("Intro", 1, "a.html"), TocEntry("Details", 2, "a.html#x"), TocEntry("Second part", 1, "b.html"),
           TocEntry("Section", 2, "b.html#missing"), TocEntry("Gone", 1, "c.html")]
    doc = assembled(blocks, toc, {"b.html#missing": "b.html"})
    spans = [(c.title, c.level, doc.text[c.start:c.end]) for c in doc.chapters]
    assert spans == [("Intro", 1, "Intro\n\nText."), ("Details", 2, "Text."),
                     ("Second part", 1, "Second part\n\nSection\n\nMore."),
                     ("Section", 2, "Second part\n\nSection\n\nMore.")]


def test_anchors_of_dropped_blocks_move_to_the_next_kept_one():
    doc = assembled([Block("3", 0, ["p#n"]), Block("Real text.", 0, ["p#t"]), Block("...", 0, ["p#end"])],
                    [TocEntry("Start", 1, "p#n"), TocEntry("End", 1, "p#end")])
    assert [(c.title, c.start, c.end) for c in doc.chapters] == [("Start", 0, len(doc.text)),
                                                                ("End", len(doc.text), len(doc.text))]


def test_chapters_from_headings_skip_a_lone_title():
    """The top three levels of headings nest (h1 > h2 > h3); deeper ones are sections read within them."""
    doc = assembled([Block("The Book", 1), Block("One", 2), Block("a."), Block("Two", 2), Block("b."),
                     Block("Deeper", 3), Block("c.")])
    assert [(c.title, c.level) for c in doc.chapters] == [("The Book", 1), ("One", 2), ("Two", 2), ("Deeper", 3)]
    assert [(h.title, h.level) for h in doc.headings] == [("The Book", 1), ("One", 2), ("Two", 2), ("Deeper", 3)]
    for h in doc.headings:
        assert doc.text[h.start:h.end] == h.title
