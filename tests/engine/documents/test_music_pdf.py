"""A music manual as PDF: the notes, rests and clefs of its printed examples (glyphs of a music font, which PDFium
gives as letters) are neither read nor taken for headings; its words and digits are all kept."""

from __future__ import annotations

import re

from engine.core.text.reading_policy import ReadingPolicy
from engine.documents import load_document
from engine.documents.model import CODE
from engine.production.book_sources import load_book
from engine.production.export_plan import passage_speech
from tests.engine.documents.helpers import DATA

LEARNING = DATA / "lilypond-learning-p23.pdf"


def test_a_scores_glyphs_are_not_read_and_make_no_chapters():
    doc = load_document(LEARNING)
    said = [s for c in load_book(LEARNING).chapters for p in c.passages for _, s in passage_speech(p)]
    assert not any(re.search(r"(?:^|\s)[hPNuª](?:\s|$)", s) for s in said), said
    assert [c.title for c in doc.chapters] == ["Rests", "Time signature"]
    assert "A rest is entered just like a note with the name ‘r’." in doc.text


def test_the_text_around_a_score_keeps_every_digit():
    text = load_document(LEARNING).text
    for written in ("\\time 3/4", "\\time 6/8", "a16 a a a a32 a a a a64", "a8. a16 a a8. a8 a4."):
        assert written in text


def test_lines_in_a_monospaced_font_are_one_code_block_announced_once_or_read():
    """The manual's input examples are set in Latin Modern Mono ("\\relative {" over indented "a'4 r r2" lines):
    each listing is one CODE block, announced once by default and read line by line with read_code; the prose
    quoting "\\time" inline stays prose."""
    doc = load_document(LEARNING)
    start = doc.text.index("\\relative {\na'4 r r2\nr8 a r4 r4. r8")
    assert doc.kind_at(start) == CODE and doc.kind_at(doc.text.index("The time signature can be set")) != CODE
    said = [s for c in load_book(LEARNING).chapters for p in c.passages for _, s in passage_speech(p)]
    assert said.count("Code example.") == 4 and not any("relative" in s for s in said)
    assert "The time signature can be set with the \\time command:" in said
    read = [s for c in load_book(LEARNING).chapters for p in c.passages
            for _, s in passage_speech(p, ReadingPolicy(read_code=True))]
    assert "Code example." not in read and any(s.startswith("\\relative { a'4 r r2 r8 a r4 r4. r8") for s in read)
