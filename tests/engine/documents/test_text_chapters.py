"""Books, parts and chapters where a plain text marks them (engine/documents/text_chapters.py), and the one chapter
list built on them (engine/documents/outline.py): the KJV Bible's books holding their chapters, Emma's volumes
holding theirs, "PART ONE" / "BOOK II" labels nesting in the order they appear, and lines that only look like
labels left as prose."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from engine.documents import load_document
from engine.documents.outline import MAX_DEPTH, chapter_outline, parents, with_descendants
from engine.documents.text_chapters import chapter_headings, named_books, text_structure

DOCUMENTS = Path(__file__).resolve().parents[2] / "data" / "documents"
BIBLE = DOCUMENTS / "kjv-obadiah-jonah-micah.txt"
EMMA = DOCUMENTS / "emma-volumes-excerpt.txt"


def test_the_bible_gets_its_books_with_their_chapters_under_them():
    doc = load_document(BIBLE)
    titles = [(c.title, c.level) for c in doc.chapters]
    assert titles == [("Obadiah", 1), ("Obadiah 1", 2), ("Jonah", 1), *((f"Jonah {n}", 2) for n in range(1, 5)),
                      ("Micah", 1), *((f"Micah {n}", 2) for n in range(1, 8))]
    jonah, micah = doc.chapters[2], doc.chapters[7]
    assert doc.text[jonah.start:jonah.end].startswith("Jonah 1\n\n  1 Now the word of the LORD came unto Jonah")
    assert doc.text[jonah.start:jonah.end].endswith("and also much cattle?")  # the book holds its four chapters
    assert doc.text[micah.start:micah.end].endswith("from the days of old.")
    # the books are places, not words: each chapter's heading is a heading, the book's name is none
    assert [h.title for h in doc.headings] == [t for t, level in titles if level == 2]
    assert chapter_outline(doc) == doc.chapters  # no text before Obadiah: no front matter chapter


def test_emma_gets_its_volumes_holding_their_chapters_after_its_title_page():
    doc = load_document(EMMA)
    assert [(c.title, c.level) for c in doc.chapters] == [
        ("VOLUME I", 1), ("CHAPTER I", 2), ("CHAPTER II", 2), ("VOLUME II", 1), ("CHAPTER I", 2), ("CHAPTER II", 2),
        ("VOLUME III", 1), ("CHAPTER I", 2)]
    listed = chapter_outline(doc)
    assert [(c.title, c.level) for c in listed[:2]] == [("emma-volumes-excerpt", 1), ("VOLUME I", 1)]
    assert doc.text[listed[0].start:listed[0].end] == "EMMA\n\nBy Jane Austen"
    volume_two = listed[4]
    assert doc.text[volume_two.start:volume_two.end].startswith("VOLUME II\n\n\n\nCHAPTER I\n\n")
    assert with_descendants([4], [c.level for c in listed]) == [4, 5, 6]


def test_labels_nest_in_the_order_they_first_appear_and_matter_stays_on_top():
    text = ("Preface\n\nA word first.\n\nPART I\n\nBook I. The History of a Family\n\nChapter I\n\nText.\n\n"
            "Chapter II\n\nText.\n\nBook II. An Unfortunate Gathering\n\nChapter I\n\nText.\n\nPART TWO\n\n"
            "Book IV\n\nChapter 1\n\nText.\n\nEpilogue\n\nThe end.")
    assert [(h.title, h.level) for h in chapter_headings(text)] == [
        ("Preface", 1), ("PART I", 1), ("Book I. The History of a Family", 2), ("Chapter I", 3), ("Chapter II", 3),
        ("Book II. An Unfortunate Gathering", 2), ("Chapter I", 3), ("PART TWO", 1), ("Book IV", 2),
        ("Chapter 1", 3), ("Epilogue", 1)]
    volumes = "VOLUME I\n\nBOOK FIRST--FANTINE\n\nCHAPTER I\n\nText.\n\nBOOK SECOND\n\nCHAPTER I\n\nText."
    assert [h.level for h in chapter_headings(volumes)] == [1, 2, 3, 2, 3]


def test_lines_that_only_look_like_labels_or_books_are_prose():
    text = ("Chapter 1\n\nPart of her meaning was kind.\n\nBook did well.\n\nVolume control matters.\n\n"
            "Chapter 2\n\nThe end.")
    assert [h.title for h in chapter_headings(text)] == ["Chapter 1", "Chapter 2"]
    captions = "Figure 1\n\nA graph.\n\nTable 1\n\nSome numbers."  # two name-and-number lines: no scheme
    assert named_books(captions) == [] and text_structure(captions) == ([], [])
    skipping = "Genesis 1\n\nIn the beginning.\n\nGenesis 3\n\nLater.\n\nExodus 1\n\nThen."  # Genesis 2 is missing
    assert named_books(skipping) == []


def test_a_text_without_any_chapter_has_none_and_front_matter_needs_a_word():
    assert chapter_outline(Plain("Just one paragraph.\n\nAnd another.")) == []
    assert [c.title for c in chapter_outline(Plain("\n\n...\n\nChapter 1\n\nText."))] == ["Chapter 1"]


@dataclass
class Plain:
    """A document's shape, without structure of its own."""

    text: str
    title: str = "T"
    chapters: list = field(default_factory=list)
    headings: list = field(default_factory=list)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.sampled_from(["VOLUME I", "BOOK II", "PART ONE", "CHAPTER 3", "Prologue", "Section 4",
                                 "Some prose here."]), max_size=30))
def test_any_mix_of_labels_nests_consistently(labels):
    text = "\n\n".join(f"{label}\n\nBody {i}." for i, label in enumerate(labels))
    found = chapter_headings(text)
    assert [h.title for h in found] == [label for label in labels if label != "Some prose here."]
    kinds = {h.title.split()[0].lower(): h.level for h in found}
    for inner in ("chapter", "section"):  # chapters and sections always innermost
        if inner in kinds:
            assert kinds[inner] == max(kinds.values())
    if "prologue" in kinds:
        assert kinds["prologue"] == 1
    chapters = text_structure(text)[1]
    levels = [c.level for c in chapters]
    for index, parent in enumerate(parents(levels)):  # a parent comes before its child and is higher
        assert parent is None or (parent < index and levels[parent] < levels[index])
    for index in range(len(chapters)):  # a chapter with its descendants: a contiguous run inside its span
        run = with_descendants([index], levels)
        assert run == list(range(index, index + len(run)))
        assert all(chapters[i].end <= chapters[index].end for i in run)


def test_a_hostile_outline_nests_no_deeper_than_the_bound():
    levels = list(range(1, 200))  # every chapter a level deeper than the last
    depth = [0] * len(levels)
    for index, parent in enumerate(parents(levels)):
        depth[index] = 0 if parent is None else depth[parent] + 1
    assert max(depth) == MAX_DEPTH - 1


def test_a_long_scheme_of_books_is_found_whole():
    """2,000 books of 10 chapters each (twice the Bible's size in headings): each book holds its ten."""
    names = [f"B{chr(97 + b // 26 // 26 % 26)}{chr(97 + b // 26 % 26)}{chr(97 + b % 26)}" for b in range(2000)]
    text = "\n\n".join(f"{name} {n}\n\nVerse {n} of {name}." for name in names for n in range(1, 11))
    found = chapter_outline(Plain(text))
    assert len(found) == 22_000
    assert [c.title for c in found[:3]] == [names[0], f"{names[0]} 1", f"{names[0]} 2"]
    assert with_descendants([11], [c.level for c in found]) == list(range(11, 22))
