"""One chapter list: export's book has the chapters the studio's panel lists (engine/documents/outline.py), every
level, numbered alike; ``--chapters`` and the dialog's range bring a part's chapters; a part with nothing of its own
to speak is listed but makes no file."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from engine import Voice
from engine.documents import load_document
from engine.documents.outline import chapter_outline
from engine.production.book_export import BookExporter
from engine.production.book_sources import load_book
from engine.production.book_structure import Pauses
from engine.production.chapter_ranges import chapter_selection
from engine.production.export_plan import ExportOptions
from engine.production.segment_list import book_segments


def levels(book) -> list[int]:
    return [c.level for c in book.chapters]


DOCUMENTS = Path(__file__).resolve().parents[2] / "data" / "documents"
BIBLE = DOCUMENTS / "kjv-obadiah-jonah-micah.txt"


@pytest.mark.parametrize("name", ["developers-reference.epub", "pride-and-prejudice-ch1-12.txt",
                                  "kjv-obadiah-jonah-micah.txt", "emma-volumes-excerpt.txt",
                                  "debian-reference-ch08.en.html", "maint-guide-pages-1-16.pdf"])
def test_export_has_the_chapters_the_studio_lists(name):
    listed = [(c.title, c.level) for c in chapter_outline(load_document(DOCUMENTS / name))]
    book = load_book(DOCUMENTS / name)
    assert [(c.title, c.level) for c in book.chapters] == listed


def test_the_developers_reference_has_all_its_nested_chapters_not_ten():
    book = load_book(DOCUMENTS / "developers-reference.epub")
    depths = levels(book)
    assert len(book.chapters) == 225 and depths.count(1) == 10 and max(depths) == 3
    applying = next(i for i, c in enumerate(book.chapters) if c.title == "Applying to Become a Member")
    chosen = chapter_selection(str(applying + 1), levels(book))  # the part with its sections
    assert chosen[0] == applying and len(chosen) > 1
    assert all(book.chapters[i].level > 1 for i in chosen[1:])
    assert book.chapters[chosen[-1] + 1].level == 1  # up to the next top chapter


def test_a_bible_book_is_its_chapters():
    book = load_book(BIBLE)
    assert [(c.title, c.level, len(c.passages) > 0) for c in book.chapters[:4]] == [
        ("Obadiah", 1, False), ("Obadiah 1", 2, True), ("Jonah", 1, False), ("Jonah 1", 2, True)]
    assert book.chapters[3].passages[0].text == "Jonah 1" and book.chapters[3].passages[0].kind == "heading"
    assert chapter_selection("3", levels(book)) == [2, 3, 4, 5, 6]  # Jonah and its four chapters
    assert chapter_selection("4-5", levels(book)) == [3, 4]  # chapters alone stay alone
    spoken = list(book_segments(book, chapter_selection("3", levels(book))))
    assert {s.chapter for s in spoken} == {4, 5, 6, 7}  # the book itself has nothing of its own to say
    assert spoken[0].text == "Jonah 1" and spoken[-1].text.endswith("and also much cattle?")


def test_a_part_without_words_of_its_own_makes_no_file(tiny_engine, tmp_path):
    engine = tiny_engine("custom_voice")
    book = load_book(BIBLE)
    options = ExportOptions(format="mp3", per_chapter=True, chapters=tuple(chapter_selection("3", levels(book))),
                            pauses=Pauses(0.1, 0.3, 0.5, 1.0))
    exporter = BookExporter(lambda voice: engine, sampling=replace(engine.defaults, seed=1))
    plans = exporter.plan(book, tmp_path / "out", options, {None: Voice.preset("vivian")})
    assert [p.path.name for p in plans] == [f"0{n} - Jonah {n}.mp3" for n in range(1, 5)]
    with pytest.raises(ValueError, match="nothing to speak"):
        exporter.plan(book, tmp_path / "x.mp3", replace(options, per_chapter=False, chapters=(0, 2)),
                      {None: Voice.preset("vivian")})
