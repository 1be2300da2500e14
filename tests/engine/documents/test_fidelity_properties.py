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
