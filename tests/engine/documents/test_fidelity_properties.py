"""Property: no reader drops a digit, a letter or a word of a paragraph. Each format's generator writes paragraphs
of words, numbers and mixed tokens ("1770", "(2002)", "2.1", "s-1", "x2") into a real file of that format; the
words read back are the words written, in order."""

import html
import re

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engine.documents import load_document
from tests.engine.documents.helpers import layout_pdf, write_docx

LETTERS = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZéàçø"
WORD = st.text(LETTERS, min_size=1, max_size=9)
NUMBER = st.integers(0, 99999).map(str)
MIXED = st.one_of(
    st.tuples(NUMBER, NUMBER).map(lambda t: f"{t[0]}.{t[1]}"),  # 2.1
    NUMBER.map(lambda n: f"({n})"),  # (2002)
    st.tuples(WORD, NUMBER).map(lambda t: f"{t[0]}{t[1]}"),  # x2
    st.tuples(WORD, NUMBER).map(lambda t: f"{t[0]}-{t[1]}"),  # s-1
    st.tuples(NUMBER, NUMBER).map(lambda t: f"{t[0]}/{t[1]}"),  # 3/4
)
TOKEN = st.one_of(WORD, WORD, NUMBER, MIXED)
# a paragraph starts with a word (a number alone, or a numbered line, is a list item or a page number by design)
PARAGRAPH = st.tuples(WORD, st.lists(TOKEN, min_size=0, max_size=14)).map(lambda t: " ".join([t[0], *t[1]]))
PARAGRAPHS = st.lists(PARAGRAPH, min_size=1, max_size=6)
SETTINGS = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


def words(text: str) -> list[str]:
    return re.findall(r"\w+", text)


def read_back(path) -> list[str]:
    return words(load_document(path).text)


@SETTINGS
@given(PARAGRAPHS)
def test_plain_text_keeps_every_word(tmp_path, paragraphs):
    path = tmp_path / "p.txt"
    path.write_text("\n\n".join(paragraphs), encoding="utf-8")
    assert read_back(path) == words(" ".join(paragraphs))


@SETTINGS
@given(PARAGRAPHS)
def test_markdown_keeps_every_word(tmp_path, paragraphs):
    path = tmp_path / "p.md"
    path.write_text("# Title\n\n" + "\n\n".join(paragraphs), encoding="utf-8")
    assert read_back(path) == ["Title", *words(" ".join(paragraphs))]


@SETTINGS
@given(PARAGRAPHS)
def test_html_keeps_every_word(tmp_path, paragraphs):
    path = tmp_path / "p.html"
    body = "".join(f"<p>{html.escape(p)}</p>" for p in paragraphs)
    path.write_text(f"<!DOCTYPE html><html><body><h1>Title</h1>{body}</body></html>", encoding="utf-8")
    assert read_back(path) == ["Title", *words(" ".join(paragraphs))]


@SETTINGS
@given(PARAGRAPHS)
def test_docx_keeps_every_word(tmp_path, paragraphs):
    body = "".join(f'<w:p><w:r><w:t xml:space="preserve">{html.escape(p, quote=False)}</w:t></w:r></w:p>'
                   for p in paragraphs)
    assert read_back(write_docx(tmp_path / "p.docx", body)) == words(" ".join(paragraphs))


PDF_LETTERS = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"  # Helvetica's standard encoding, no accents
PDF_WORD = st.text(PDF_LETTERS, min_size=1, max_size=9)
PDF_TOKEN = st.one_of(PDF_WORD, PDF_WORD, NUMBER, NUMBER.map(lambda n: f"({n})"),
                      st.tuples(NUMBER, NUMBER).map(lambda t: f"{t[0]}.{t[1]}"),
                      st.tuples(PDF_WORD, NUMBER).map(lambda t: f"{t[0]}{t[1]}"))
PDF_LINE = st.tuples(PDF_WORD, st.lists(PDF_TOKEN, min_size=0, max_size=7)).map(lambda t: " ".join([t[0], *t[1]]))


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(PDF_LINE, min_size=1, max_size=12), st.lists(st.booleans(), min_size=12, max_size=12))
def test_pdf_keeps_every_word_even_in_smaller_type(tmp_path, lines, small):
    """Some lines carry a number in smaller raised type, as a footnote mark would be, but no note matches it."""
    page = []
    for i, line in enumerate(lines):
        text = line if not small[i] else [(10, 0, line + " "), (6, 4, str(i)), (10, 0, " end")]
        page.append((72, 760 - 26 * i, 10, text))
    path = tmp_path / "p.pdf"
    path.write_bytes(layout_pdf([page]))
    expected = [w for i, line in enumerate(lines) for w in words(line) + ([str(i), "end"] if small[i] else [])]
    assert read_back(path) == expected


# ---- tables and notes: a cell's or a note's words are read, in order, unless the policy skips the whole note ----
SYMBOL = st.sampled_from(["✓", "✗", "—", "★", "?"])
CELL = st.one_of(PARAGRAPH, PARAGRAPH, SYMBOL)
TABLE = st.integers(1, 4).flatmap(lambda n: st.tuples(st.lists(WORD, min_size=n, max_size=n),
                                                      st.lists(st.lists(CELL, min_size=n, max_size=n),
                                                               min_size=1, max_size=5)))


def row_words(header: list[str], row: list[str]) -> list[str]:
    """The words a headed row is read with: each cell's header (unless it is the cell itself), then the cell."""
    return [w for label, cell in zip(header, row, strict=True) for w in (words(label) if label != cell else [])
            + words(cell)]


def symbols(text: str) -> list[str]:
    return re.findall("[✓✗—★?]", text)


@SETTINGS
@given(TABLE)
def test_html_table_cells_keep_every_word_and_symbol(tmp_path, table):
    header, rows = table
    head = "".join(f"<th>{html.escape(h)}</th>" for h in header)
    body = "".join("<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in row) + "</tr>" for row in rows)
    path = tmp_path / "t.html"
    path.write_text(f"<html><body><table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table></body></html>",
                    encoding="utf-8")
    doc = load_document(path)
    assert words(doc.text) == [w for row in rows for w in row_words(header, row)]
    assert symbols(doc.text) == [s for row in rows for c in row for s in symbols(c)]


@SETTINGS
@given(TABLE)
def test_markdown_table_cells_keep_every_word_and_symbol(tmp_path, table):
    header, rows = table
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    path = tmp_path / "t.md"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    doc = load_document(path)
    assert words(doc.text) == [w for row in rows for w in row_words(header, row)]
    assert symbols(doc.text) == [s for row in rows for c in row for s in symbols(c)]


@SETTINGS
@given(TABLE)
def test_docx_table_cells_keep_every_word_and_symbol(tmp_path, table):
    header, rows = table

    def tr(cells: list[str], head: bool = False) -> str:
        props = "<w:trPr><w:tblHeader/></w:trPr>" if head else ""
        return f"<w:tr>{props}" + "".join(f'<w:tc><w:p><w:r><w:t xml:space="preserve">{html.escape(c, quote=False)}'
                                         "</w:t></w:r></w:p></w:tc>" for c in cells) + "</w:tr>"

    body = "<w:tbl>" + tr(header, True) + "".join(tr(row) for row in rows) + "</w:tbl>"
    doc = load_document(write_docx(tmp_path / "t.docx", body))
    assert words(doc.text) == [w for row in rows for w in row_words(header, row)]
    assert symbols(doc.text) == [s for row in rows for c in row for s in symbols(c)]


NOTED = st.lists(st.tuples(PARAGRAPH, st.one_of(st.none(), PARAGRAPH)), min_size=1, max_size=5)


def noted_words(paragraphs, skip_notes: bool = False) -> list[str]:
    """Each paragraph's words, then its note's (unless skipped)."""
    return [w for text, note in paragraphs for w in words(text) + (words(note) if note and not skip_notes else [])]


@SETTINGS
@given(NOTED)
def test_html_notes_keep_every_word_after_their_paragraph_unless_skipped(tmp_path, paragraphs):
    from engine.core.text.reading_policy import ReadingPolicy
    from engine.production.book_sources import load_book
    from engine.production.export_plan import passage_speech

    body = "".join(f"<p>{html.escape(text)}" + (f'<a epub:type="noteref" href="#n{i}">{i + 1}</a>' if note else "")
                   + "</p>" for i, (text, note) in enumerate(paragraphs))
    notes = "".join(f'<aside epub:type="footnote" id="n{i}"><p>{html.escape(note)}</p></aside>'
                    for i, (_, note) in enumerate(paragraphs) if note)
    path = tmp_path / "n.html"
    path.write_text(f"<html><body>{body}{notes}</body></html>", encoding="utf-8")
    assert read_back(path) == noted_words(paragraphs)
    book = load_book(path)
    for skip in (False, True):
        policy = ReadingPolicy(footnotes="skip" if skip else "paragraph-end")
        said = " ".join(s for c in book.chapters for p in c.passages for _, s in passage_speech(p, policy))
        assert [w for w in words(said) if w != "Footnote"] == noted_words(paragraphs, skip)


@SETTINGS
@given(NOTED)
def test_docx_notes_keep_every_word_after_their_paragraph(tmp_path, paragraphs):
    w = "http://schemas.openxmlformats.org/wordprocessingml/2006/main"
    body = "".join(f'<w:p><w:r><w:t xml:space="preserve">{html.escape(text, quote=False)}</w:t></w:r>'
                   + (f'<w:r><w:footnoteReference w:id="{i + 1}"/></w:r>' if note else "") + "</w:p>"
                   for i, (text, note) in enumerate(paragraphs))
    notes = "".join(f'<w:footnote w:id="{i + 1}"><w:p><w:r><w:t xml:space="preserve">{html.escape(note, quote=False)}'
                    "</w:t></w:r></w:p></w:footnote>" for i, (_, note) in enumerate(paragraphs) if note)
    rels = ('<Relationship Id="rId9" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/'
            'footnotes" Target="footnotes.xml"/>')
    path = write_docx(tmp_path / "n.docx", body, rels, {"word/footnotes.xml": f'<w:footnotes xmlns:w="{w}">{notes}'
                                                                             "</w:footnotes>"})
    assert read_back(path) == noted_words(paragraphs)
