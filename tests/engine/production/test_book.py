"""Books from text, Markdown and imported documents: hard wraps joined, structure kept, marks read, bad input
refused."""

from __future__ import annotations

import re
import textwrap
import zipfile
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.core.text.segments import split_segments, split_sentences
from engine.errors import TextError
from engine.production.book_sources import epub_cover
from engine.production.book_structure import (
    Passage,
    Pauses,
    book_from_document,
    book_from_text,
    decode_text,
)
from engine.production.chapter_ranges import parse_chapter_selection

PARAGRAPHS = [
    "It was a bright cold day in April, and the clocks were striking thirteen. Winston Smith, his chin nuzzled "
    "into his breast in an effort to escape the vile wind, slipped quickly through the glass doors of Victory "
    "Mansions, though not quickly enough to prevent a swirl of gritty dust from entering along with him.",
    "The hallway smelt of boiled cabbage and old rag mats. At one end of it a coloured poster, too large for "
    "indoor display, had been tacked to the wall. It depicted simply an enormous face, more than a metre wide.",
    "Outside, even through the shut window-pane, the world looked cold. Down in the street little eddies of "
    "wind were whirling dust and torn paper into spirals, and though the sun was shining there seemed to be no "
    "colour in anything, except the posters that were plastered everywhere.",
]


def sentences(book) -> list[str]:
    return [s.text for c in book.chapters for p in c.passages for s in split_segments(p.text)]


def test_a_hard_wrapped_book_is_spoken_as_its_unwrapped_paragraphs():
    wrapped = "\n\n".join(textwrap.fill(p, 72) for p in PARAGRAPHS)
    assert max(len(line) for line in wrapped.splitlines()) <= 72 and wrapped.count("\n") > 10
    book = book_from_text(wrapped, "1984")
    assert [p.text for p in book.chapters[0].passages] == PARAGRAPHS
    unwrapped = [s.text for p in PARAGRAPHS for s in split_segments(p)]
    assert sentences(book) == unwrapped
    by_sentence = [s.text for c in book.chapters for p in c.passages for s in split_sentences(p.text)]
    assert len(by_sentence) == 7 and len(unwrapped) < 7  # two short sentences are one segment


def test_line_breaks_that_end_paragraphs_are_kept_where_there_are_no_blank_lines():
    text = "First paragraph ends here.\nSecond one is short.\n" + textwrap.fill(PARAGRAPHS[1], 60)
    book = book_from_text(text, "t")
    assert [p.text for p in book.chapters[0].passages] == ["First paragraph ends here.", "Second one is short.",
                                                           PARAGRAPHS[1]]


def test_hyphens_and_list_items_at_line_breaks():
    book = book_from_text("A well-\nknown fact, and a long\nsentence.\n- first item\n- second item", "t")
    assert [p.text for p in book.chapters[0].passages] == ["A well-known fact, and a long sentence.",
                                                           "- first item", "- second item"]


def test_a_number_wrapped_to_the_start_of_a_line_is_no_list_item():
    text = ("    b) The work must carry prominent notices stating that it is released\n"
            "    under this License and any conditions added under section\n"
            "    7.  This requirement modifies the requirement in section 4 to\n"
            "    \"keep intact all notices\".\n\nIn order:\n1. first,\n2. second.")
    book = book_from_text(text, "GPL")
    assert [p.text for p in book.chapters[0].passages] == [
        "b) The work must carry prominent notices stating that it is released under this License and any "
        "conditions added under section 7. This requirement modifies the requirement in section 4 to "
        "\"keep intact all notices\".", "In order:", "1. first,", "2. second."]


def test_plain_text_chapters_from_their_labels_with_titles():
    text = ("Preface\n\nA word first.\n\nCHAPTER I.\nDown the Rabbit-Hole\n\nAlice was beginning.\n\n"
            "CHAPTER II\n\nThe Pool of Tears\n\nCuriouser and curiouser!\n\nChapter 3\n\nNo title, just text.\n")
    book = book_from_text(text, "Alice")
    assert [c.title for c in book.chapters] == ["Preface", "CHAPTER I. Down the Rabbit-Hole",
                                                "CHAPTER II. The Pool of Tears", "Chapter 3"]
    assert book.chapters[1].passages == (Passage("CHAPTER I. Down the Rabbit-Hole", "heading"),
                                         Passage("Alice was beginning."))
    assert book.chapters[3].passages[1] == Passage("No title, just text.")


def test_text_before_the_first_chapter_is_a_chapter_named_after_the_book():
    book = book_from_text("Some front matter.\n\nChapter 1\n\nThe story.\n\nChapter 2\n\nMore.", "My Book")
    assert [c.title for c in book.chapters] == ["My Book", "Chapter 1", "Chapter 2"]


def test_a_paragraph_that_talks_about_a_chapter_is_not_a_heading():
    long = "Chapter one of this report explains, at some length and with many asides, " * 3
    book = book_from_text(long, "t")
    assert len(book.chapters) == 1 and book.chapters[0].passages[0].kind == "paragraph"


def test_voice_marks_choose_the_voice_of_their_paragraph_and_are_not_spoken():
    text = ("Narrated line.\n\n[voice: Ann Smith] She spoke, and her words\nran on to a second line.\n\n"
            "[VOICE:bob]Short.\n\nBack to the narrator.")
    book = book_from_text(text, "t")
    assert [(p.voice, p.text) for p in book.chapters[0].passages] == [
        (None, "Narrated line."), ("Ann Smith", "She spoke, and her words ran on to a second line."),
        ("bob", "Short."), (None, "Back to the narrator.")]
    assert book.voices == {"Ann Smith", "bob"}


def test_a_mark_holds_over_a_deliberate_line_break_to_the_end_of_its_paragraph():
    second = "I said, who is there? Answer me now, whoever you are, out there in the dark."
    book = book_from_text(f"[voice: ann] Who is there?\n{second}\n\nSilence.", "t")
    assert [(p.voice, p.text) for p in book.chapters[0].passages] == [
        ("ann", "Who is there?"), ("ann", second), (None, "Silence.")]


def test_a_mark_starting_a_line_inside_a_paragraph_starts_a_passage():
    book = book_from_text("The narrator says this\n[voice: ann] and Ann says that.", "t")
    assert [(p.voice, p.text) for p in book.chapters[0].passages] == [(None, "The narrator says this"),
                                                                      ("ann", "and Ann says that.")]


def test_markdown_structure_without_its_markup():
    text = ("---\ntitle: \"The Guide\"\nauthor: Jane Doe\n---\n# The Guide\n\nIntro with *emphasis*, `code` and a "
            "[link](https://example.com).\n\n## First steps\n\n![a picture](p.png)\nSome **bold**\ntext.\n\n"
            "```python\nprint('not read')\n```\n\n---\n\nFirst steps, continued\n-----\n\n## Next\n\n> Quoted.\n\n"
            "1. one\n2. two\n<b>tagged</b>\n")
    book = book_from_text(text, "file", markdown=True)
    assert (book.title, book.author) == ("The Guide", "Jane Doe")
    assert [c.title for c in book.chapters] == ["The Guide", "First steps", "First steps, continued", "Next"]
    spoken = [p.text for c in book.chapters for p in c.passages]
    assert spoken[:2] == ["The Guide", "Intro with emphasis, code and a link."]
    assert "Some bold text." in spoken and "Quoted." in spoken and "one" in spoken and "two tagged" in spoken
    assert not any(re.search(r"[*`#\[\]]|print|https", s) for s in spoken)


def test_empty_and_markup_only_documents_are_refused():
    for text, markdown in (("", False), ("  \n\n \t", False), ("# \n\n---\n\n```\ncode\n```", True),
                           ("[voice: ann]\n\n[voice: bob]", False)):
        with pytest.raises(TextError, match="no text to speak"):
            book_from_text(text, "empty", markdown=markdown)


def test_text_decoding_fallbacks():
    warnings: list[str] = []
    assert decode_text("Café".encode("cp1252"), "old.txt", warnings) == "Café" and "Windows-1252" in warnings[0]
    assert decode_text("\ufeffHi\r\nthere\r".encode(), "bom.txt") == "Hi\nthere\n"
    assert decode_text("Grüße".encode("utf-16"), "wide.txt") == "Grüße"
    with pytest.raises(TextError, match="binary"):
        decode_text(b"\x89PNG\x00\x00\xff\xfe\x00", "image.txt")


@pytest.mark.parametrize("spec, count, expected", [
    ("1", 3, [0]), ("1,3-5", 5, [0, 2, 3, 4]), (" 2 - 3 , 1 ", 3, [0, 1, 2]), ("3,3,1-3", 3, [0, 1, 2])])
def test_chapter_selection(spec, count, expected):
    assert parse_chapter_selection(spec, count) == expected


@pytest.mark.parametrize("spec, message", [
    ("", "empty"), ("0", "from 1"), ("4", "has 3 chapters"), ("2-1", "from 1"), ("1-9", "has 3"),
    ("a", "not a chapter"), ("1,,2", "not a chapter"), ("-1", "not a chapter"), ("1.5", "not a chapter"),
    ("99999999999999999999", "not a chapter")])
def test_bad_chapter_selections_say_what_is_wrong(spec, message):
    with pytest.raises(ValueError, match=message):
        parse_chapter_selection(spec, 3)


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet="0123456789,- x", max_size=20), st.integers(1, 50))
def test_any_chapter_selection_is_refused_or_inside_the_book(spec, count):
    try:
        chosen = parse_chapter_selection(spec, count)
    except ValueError:
        return
    assert chosen == sorted(set(chosen)) and chosen and all(0 <= i < count for i in chosen)


@settings(max_examples=150, deadline=None)
@given(st.lists(st.text(alphabet=st.characters(blacklist_characters="[]\r", blacklist_categories=("Cs",)),
                        max_size=120), max_size=8),
       st.integers(20, 90))
def test_every_word_of_a_plain_text_is_spoken_once_in_order(paragraphs, width):
    text = "\n\n".join(textwrap.fill(p, width) if p.strip() else p for p in paragraphs)
    try:
        book = book_from_text(text, "t")
    except TextError:
        assert not re.search(r"\w", text)
        return
    def squeeze(s: str) -> str:
        return re.sub(r"[\s.]", "", s)
    # only a paragraph (between blank lines) without a letter or digit is left out
    kept = "".join(block for block in re.split(r"\n[ \t]*\n", text) if re.search(r"\w", block))
    assert squeeze("".join(p.text for c in book.chapters for p in c.passages)) == squeeze(kept)


def test_pauses_follow_structure_and_refuse_nonsense():
    pauses = Pauses(sentence=0.1, paragraph=0.5, heading=1.5, chapter=3.0)
    heading, paragraph = Passage("Chapter 1", "heading"), Passage("Text.")
    assert pauses.between(heading, paragraph) == pauses.between(paragraph, heading) == 1.5
    assert pauses.between(paragraph, paragraph) == 0.5
    for bad in (-1, 61, float("nan"), "1"):
        with pytest.raises(ValueError):
            Pauses(paragraph=bad)


# ---- imported documents ---------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Span:
    title: str
    level: int
    start: int
    end: int


@dataclass
class FakeDocument:
    """The shape of engine.documents.Document with structure (title, author, chapters, headings as spans)."""

    path: Path
    text: str
    title: str
    author: str = ""
    chapters: list = field(default_factory=list)
    headings: list = field(default_factory=list)
    warnings: list = field(default_factory=list)


def _span(text: str, part: str, level: int, title: str | None = None) -> Span:
    start = text.index(part)
    return Span(title or part, level, start, start + len(part))


def test_a_structured_document_gives_its_chapters_and_headings():
    text = ("Title page words.\n\nChapter One\n\nFirst text.\n\nA Section\n\nSection text.\n\n"
            "Chapter Two\n\nSecond text.")
    doc = FakeDocument(Path("b.epub"), text, "The Book", "A. Author", warnings=["one warning"])
    doc.chapters = [_span(text, "Chapter One", 1, "1. One"), _span(text, "A Section", 2),
                    _span(text, "Chapter Two", 1)]
    doc.headings = [_span(text, "Chapter One", 1), _span(text, "A Section", 2), _span(text, "Chapter Two", 1)]
    book = book_from_document(doc)
    assert (book.title, book.author, book.warnings) == ("The Book", "A. Author", ["one warning"])
    # every level of the document's chapters, as the studio's panel lists them, the text before them first
    assert [(c.title, c.level) for c in book.chapters] == [("The Book", 1), ("1. One", 1), ("A Section", 2),
                                                           ("Chapter Two", 1)]
    assert [(p.kind, p.text) for p in book.chapters[0].passages] == [("paragraph", "Title page words.")]
    assert [(p.kind, p.text) for p in book.chapters[1].passages] == [
        ("heading", "Chapter One"), ("paragraph", "First text.")]
    assert [(p.kind, p.text) for p in book.chapters[2].passages] == [
        ("heading", "A Section"), ("paragraph", "Section text.")]


def test_a_chapter_that_starts_at_a_paragraph_without_a_heading():
    text = "Opening words.\n\nThe second part starts here.\n\nAnd goes on."
    doc = FakeDocument(Path("b.html"), text, "B")
    doc.chapters = [Span("Part 2", 1, text.index("The second"), len(text))]
    book = book_from_document(doc)
    assert [(c.title, [p.text for p in c.passages]) for c in book.chapters] == [
        ("B", ["Opening words."]), ("Part 2", ["The second part starts here.", "And goes on."])]


def test_a_flat_document_is_read_as_plain_text():
    @dataclass
    class Flat:  # engine.documents.Document before it had structure
        path: Path
        text: str
        title: str
        warnings: list

    wrapped = "Chapter 1\n\n" + textwrap.fill(PARAGRAPHS[0], 70) + "\n\nChapter 2\n\n" + PARAGRAPHS[1]
    book = book_from_document(Flat(Path("x.pdf"), wrapped, "X", []))
    assert [c.title for c in book.chapters] == ["Chapter 1", "Chapter 2"]
    assert book.chapters[0].passages[1].text == PARAGRAPHS[0]


def _epub(path: Path, cover: bytes | None, epub3: bool = True) -> Path:
    manifest = '<item id="c1" href="text/c1.xhtml" media-type="application/xhtml+xml"/>'
    meta = ""
    if cover is not None:
        manifest += ('<item id="img" href="images/cover.png" media-type="image/png"'
                     + (' properties="cover-image"/>' if epub3 else "/>"))
        meta = "" if epub3 else '<meta name="cover" content="img"/>'
    opf = (f'<?xml version="1.0"?><package xmlns="http://www.idpf.org/2007/opf" version="3.0"><metadata>{meta}'
           f'</metadata><manifest>{manifest}</manifest><spine><itemref idref="c1"/></spine></package>')
    with zipfile.ZipFile(path, "w") as z:
        z.writestr("mimetype", "application/epub+zip")
        z.writestr("META-INF/container.xml", '<?xml version="1.0"?><container xmlns="urn:oasis:names:tc:opendocument'
                   ':xmlns:container" version="1.0"><rootfiles><rootfile full-path="OEBPS/content.opf" media-type='
                   '"application/oebps-package+xml"/></rootfiles></container>')
        z.writestr("OEBPS/content.opf", opf)
        z.writestr("OEBPS/text/c1.xhtml", "<html><body><p>Hi.</p></body></html>")
        if cover is not None:
            z.writestr("OEBPS/images/cover.png", cover)
    return path


def test_epub_covers_are_found_by_either_convention(tmp_path):
    image = b"\x89PNG\r\n\x1a\n" + b"\0" * 40
    assert epub_cover(_epub(tmp_path / "a.epub", image)) == image
    assert epub_cover(_epub(tmp_path / "b.epub", image, epub3=False)) == image
    assert epub_cover(_epub(tmp_path / "c.epub", None)) is None
    assert epub_cover(_epub(tmp_path / "d.epub", b"GIF89a not a jpeg or png")) is None
    (tmp_path / "e.epub").write_bytes(b"PK\x03\x04 damaged")
    assert epub_cover(tmp_path / "e.epub") is None
