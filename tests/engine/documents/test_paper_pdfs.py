"""Two-column papers as PDF: running headers and footers removed in every layout, references read whole, notes
marked as footnotes for the reading policy, powers kept as powers (the spoken text is what ``--list-segments``
prints)."""

from __future__ import annotations

import re

from engine.core.text.reading_policy import ReadingPolicy
from engine.documents import load_document
from engine.production.book_sources import load_book
from engine.production.export_plan import passage_speech
from tests.engine.documents.helpers import DATA, layout_pdf

SIGCONF = DATA / "acmart-sample-sigconf-pages-2-3-5-6.pdf"
DAFX = DATA / "confproc-dafx-template-p009.pdf"


def spoken(path, policy: ReadingPolicy | None = None) -> list[str]:
    book = load_book(path)
    return [said for c in book.chapters for p in c.passages for _, said in passage_speech(p, policy)]


def test_alternating_running_headers_of_a_short_paper_are_not_read():
    """ACM's sigconf sample: even pages head "Conference acronym 'XX, ... Trovato et al.", odd pages "The Name of
    the Title Is Hope Conference acronym 'XX, ...", each on two pages of the four, lower than a manual's header."""
    doc = load_document(SIGCONF)
    assert "Trovato et al." not in doc.text and "The Name of the Title Is Hope" not in doc.text
    assert not any("Woodstock, NY" in s for s in spoken(SIGCONF))
    assert doc.text.startswith("The “acmart” document class can be used to prepare articles for any ACM publication")


def test_references_are_read_one_paragraph_each():
    doc = load_document(SIGCONF)
    paragraphs = doc.text.split("\n\n")
    references = [p for p in paragraphs if re.match(r"\[\d+\] ", p)]
    assert [int(p[1:p.index("]")]) for p in references] == list(range(1, 39))  # each once, in order
    assert ("[17] David Harel. 1979. First-Order Dynamic Logic. Lecture Notes in Computer Science, Vol. 68. "
            "Springer-Verlag, New York, NY.") in paragraphs[paragraphs.index(next(p for p in references
                                                                               if p.startswith("[17]")))]
    assert not any(re.match(r"(?:Vol\. \d|Grundlehren|Reading, MA)", p) for p in paragraphs)  # no tail on its own


def test_page_footers_of_a_conference_paper_do_not_break_its_words():
    """The DAFx-06 template prints "DAFX-25" at each page's foot: it was read mid-word ("we sim-DAFX-25 ply")."""
    doc = load_document(DAFX)
    assert not re.search(r"DAFX-[23]\d", doc.text)  # the body's own "page DAFX-1" is text
    assert "we simply love them" in doc.text and "sim- ply" not in doc.text


def test_notes_at_a_column_foot_are_footnotes_read_or_skipped():
    doc = load_document(DAFX)
    notes = [doc.text[s:e] for s, e, kind in doc.kinds if kind == "footnote"]
    assert notes == ["∗ This work was supported by the XYZ Foundation", "† This guy is a very good fellow",
                     "‡ She is a member of the Wheel Association", "§ Yes, senior"]
    said = spoken(DAFX)
    assert "Footnote: ∗ This work was supported by the XYZ Foundation" in said
    skipped = spoken(DAFX, ReadingPolicy(footnotes="skip"))
    assert not any("XYZ Foundation" in s for s in skipped)
    assert len(skipped) == len(said) - 4


def test_a_raised_number_after_a_number_is_a_power_and_smaller_figures_stay_digits(tmp_path):
    path = tmp_path / "p.pdf"
    path.write_bytes(layout_pdf([[
        (72, 760, 11, [(11, 0, "A key space of 2"), (7, 4, "256"), (11, 0, " keys is large enough.")]),
        (72, 740, 11, [(11, 0, "It was built in 17"), (7, 0, "70"), (11, 0, " and rebuilt later.")]),
        (72, 720, 11, [(11, 0, "The wizard"), (7, 4, "3"), (11, 0, " left.")]),
    ]]))
    doc = load_document(path)
    assert "A key space of 2²⁵⁶ keys is large enough." in doc.text
    assert "It was built in 1770 and rebuilt later." in doc.text  # smaller, not raised: digits of the number
    assert "The wizard3 left." in doc.text  # a mark with no note: kept as printed
    assert spoken(path) == ["A key space of 2 to the power 256 keys is large enough. It was built in 1770 and "
                            "rebuilt later. The wizard3 left."]
