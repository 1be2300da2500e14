"""A music manual as PDF: the notes, rests and clefs of its printed examples (glyphs of a music font, which PDFium
gives as letters) are neither read nor taken for headings; its words and digits are all kept."""

from __future__ import annotations

import re

from engine.audio.export import passage_speech
from engine.audio.sources import load_book
from engine.documents import load_document
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
    for written in ("\\time 3/4", "\\time 6/8", "a16 a a a a32 a a a a64", "a8. a16 a a8. a8 a4. }"):
        assert written in text
