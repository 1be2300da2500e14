"""PDF: what is printed but not read is removed, words and paragraphs are rebuilt, bookmarks give chapters.
The pages are laid out here in Courier, so line widths follow their lengths exactly."""

import re
import textwrap

from engine.core.text.segments import split_segments
from engine.documents import load_document
from tests.engine.documents.helpers import layout_pdf

BODY, TOP, LEFT, PITCH = 10, 760, 72, 13


def justified(text, width):
    """``text`` wrapped at ``width`` characters, every line but the last padded with spaces to the full width."""
    lines = textwrap.wrap(text, width, break_on_hyphens=False)
    out = []
    for line in lines[:-1]:
        words = line.split()
        gaps, extra = divmod(width - len(line), max(len(words) - 1, 1))
        out.append("".join(w + " " * (1 + gaps + (i < extra)) for i, w in enumerate(words[:-1])) + words[-1])
    return out + lines[-1:]


class Pages:
    """Pages being laid out: each with a running header, a page number, and body lines from the top."""

    def __init__(self, header="The Test Manual"):
        self.header = header
        self.pages: list[list] = []
        self.y = 0

    def new_page(self):
        number = len(self.pages) + 1
        self.pages.append([(LEFT, 805, 9, f"{self.header} {number} / 9")] if self.header else [])
        self.pages[-1].append((290, 30, 9, str(number)))
        self.y = TOP

    def line(self, text, size=BODY, gap=0.0):
        if not self.pages or self.y < 80:
            self.new_page()
        self.y -= gap
        self.pages[-1].append((LEFT, self.y, size, text))
        self.y -= PITCH * size / BODY

    def paragraph(self, text, width=76):
        lines = justified(text, width)
        for i, line in enumerate(lines):
            self.line(line, gap=6 if i == 0 else 0)

    def pdf(self, path, outline=()):
        path.write_bytes(layout_pdf(self.pages, outline, font_name="Courier"))
        return path


WORDS = ("the reader hears only the words of the book in the order they are printed and "
         "nothing of the page around them so every line must join the next one ").split()


def prose(n, seed=0):
    return " ".join(WORDS[(seed + i) % len(WORDS)] for i in range(n))


def test_headers_footers_page_numbers_go_and_paragraphs_join_across_pages(tmp_path):
    pages = Pages()
    pages.paragraph(prose(60) + ".")
    while pages.y > 120:
        pages.paragraph(prose(25, 3) + ".")
    pages.paragraph("This paragraph starts near the end of a page " + prose(40, 5) + " and ends on the next one.")
    pages.paragraph("A last paragraph.")
    doc = load_document(pages.pdf(tmp_path / "p.pdf"))
    assert "Test Manual" not in doc.text and "/ 9" not in doc.text
    assert not [s for s in split_segments(doc.text) if re.fullmatch(r"[\d\s./]+", s.text)]
    paragraphs = doc.text.split("\n\n")
    assert [p for p in paragraphs if p.startswith("This paragraph starts")][0].endswith("ends on the next one.")
    assert paragraphs[-1] == "A last paragraph."
    assert len(pages.pages) >= 2


def test_line_end_hyphens_are_joined_unless_the_book_spells_the_word_so(tmp_path):
    pages = Pages()
    for line in ["We use the command-line tools here and the command-line again, which is the way this manual",
                 "writes it, and then we talk about manip-", "ulation of data and the command-", "line options."]:
        pages.line(line)
    text = load_document(pages.pdf(tmp_path / "h.pdf")).text
    assert "manipulation of data" in text
    assert "the command-line options." in text
    assert "- " not in text


def test_contents_pages_and_dot_leaders_are_not_read(tmp_path):
    pages = Pages()
    pages.line("Contents", size=16)
    for i in range(1, 20):
        pages.line(f"{i}.1 Section title number {i} " + ". " * 20 + f"{i * 3}")
    pages.new_page()
    pages.paragraph("The first real paragraph. " + prose(30) + ".")
    doc = load_document(pages.pdf(tmp_path / "c.pdf"))
    assert doc.text.startswith("The first real paragraph.")
    assert ". . ." not in doc.text


def test_bookmarks_give_chapters_and_larger_type_headings(tmp_path):
    pages = Pages()
    pages.line("1 Getting started", size=16, gap=10)
    pages.paragraph(prose(50) + ".")
    pages.line("1.1 First steps", size=13, gap=6)
    pages.paragraph(prose(40, 2) + ".")
    pages.new_page()
    pages.line("2 Going on", size=16, gap=10)
    pages.paragraph(prose(30, 4) + ".")
    pages.line("2.1 A section no bookmark names", size=13, gap=6)
    pages.paragraph(prose(30, 1) + ".")
    outline = [("Getting started", 0), ("First steps", 0), ("Going on", 1)]
    pdf = layout_pdf(pages.pages, outline, font_name="Courier")
    path = tmp_path / "b.pdf"
    path.write_bytes(pdf)
    doc = load_document(path)
    assert [(c.title, doc.text[c.start:c.start + 8]) for c in doc.chapters] == [
        ("Getting started", "1 Gettin"), ("First steps", "1.1 Firs"), ("Going on", "2 Going ")]
    assert [(h.title, h.level) for h in doc.headings] == [
        ("1 Getting started", 1), ("1.1 First steps", 1), ("2 Going on", 1), ("2.1 A section no bookmark names", 1)]


def test_footnotes_move_after_their_paragraph_and_lose_their_markers(tmp_path):
    pages = Pages(header=None)
    pages.paragraph(prose(40) + " as the note says. 1")
    pages.paragraph("Then the text goes on with " + prose(20) + ".")
    pages.pages[-1].append((LEFT, 70, 7, "1 A note in small type at the foot of the page."))
    text = load_document(pages.pdf(tmp_path / "f.pdf")).text
    paragraphs = text.split("\n\n")
    assert paragraphs[0].endswith("as the note says.")  # the note, after the paragraph that holds its mark
    assert paragraphs[1:] == ["A note in small type at the foot of the page.", "Then the text goes on with "
                              + prose(20) + "."]


def test_two_columns_read_down_each_column_and_a_sentence_runs_on(tmp_path):
    left_lines = justified("Column one begins here. " + prose(60) + " and this sentence goes on", 36)
    right_lines = justified("in the second column. " + prose(30, 7) + ". A new paragraph.", 36)
    left_lines[-1] = left_lines[-1].replace(" ", "  ", 36 - len(left_lines[-1]))  # flush to the column's edge
    page = [(LEFT, TOP - PITCH * i, BODY, t) for i, t in enumerate(left_lines)]
    page += [(320, TOP - PITCH * i, BODY, t) for i, t in enumerate(right_lines)]
    path = tmp_path / "cols.pdf"
    path.write_bytes(layout_pdf([page], font_name="Courier"))
    paragraphs = load_document(path).text.split("\n\n")
    assert paragraphs[0].startswith("Column one begins here.")
    assert "this sentence goes on in the second column." in paragraphs[0]
    assert paragraphs[-1] == "A new paragraph." or paragraphs[0].endswith("A new paragraph.")


def test_without_bookmarks_larger_type_gives_headings_and_chapters(tmp_path):
    pages = Pages(header=None)
    for title, size in (("A Small Guide", 20), ("1 Start", 15), ("1.1 Detail", 12), ("2 Finish", 15)):
        pages.line(title, size=size, gap=12)
        pages.paragraph(prose(30) + ".")
    doc = load_document(pages.pdf(tmp_path / "h.pdf"))
    assert [(h.title, h.level) for h in doc.headings] == [("A Small Guide", 1), ("1 Start", 2), ("1.1 Detail", 3),
                                                         ("2 Finish", 2)]
    # nested as the headings are: the title, its chapters, a section (the top three levels)
    assert [(c.title, c.level) for c in doc.chapters] == [("A Small Guide", 1), ("1 Start", 2), ("1.1 Detail", 3),
                                                         ("2 Finish", 2)]
