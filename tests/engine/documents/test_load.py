"""Importing documents of every supported format; clear, typed errors on bad, corrupt, truncated or huge input."""

import zipfile
from pathlib import Path

import pytest

from engine import documents
from engine.documents import (
    Document,
    DocumentError,
    docx_reader,
    epub_reader,
    html_to_text,
    load_document,
    model,
    pdf_reader,
)
from tests.engine.documents.helpers import DATA, minimal_pdf, write_epub


def test_plain_text_utf8_and_crlf(tmp_path):
    path = tmp_path / "notes.txt"
    path.write_bytes("Première ligne.\r\nSecond line.\r\n".encode())
    doc = load_document(path)
    assert isinstance(doc, Document)
    assert doc.text == "Première ligne.\nSecond line."
    assert doc.title == "notes"
    assert doc.warnings == []


def test_non_utf8_text_is_read_with_a_warning(tmp_path):
    path = tmp_path / "old.txt"
    path.write_bytes("caf\xe9 cr\xe8me".encode("cp1252"))
    doc = load_document(path)
    assert doc.text == "café crème"
    assert any("UTF-8" in w for w in doc.warnings)


def test_markdown_becomes_paragraphs(tmp_path):
    path = tmp_path / "read.md"
    path.write_text("# Title\n\nSome *emphasis* here\nand a wrapped line.\n\n- one\n- two\n")
    doc = load_document(path)
    assert doc.text.split("\n\n") == ["Title", "Some emphasis here and a wrapped line.", "one", "two"]


def test_html_skips_scripts_and_keeps_blocks():
    html = ("<html><head><title>T</title><script>var x=1;</script></head>"
            "<body><p>A  b<br>c</p><div>D</div></body>")
    assert html_to_text(html) == "A b\nc\n\nD"


def test_html_file(tmp_path):
    path = tmp_path / "page.html"
    path.write_text("<body><h2>Heading</h2><p>Para <b>bold</b> text.</p></body>")
    assert load_document(path).text == "Heading\n\nPara bold text."


def test_epub_chapters_in_spine_order(tmp_path):
    path = tmp_path / "book.epub"
    write_epub(path, [("One", "<p>First chapter text.</p>"), ("Two", "<p>Second chapter text.</p>")])
    doc = load_document(path)
    assert doc.title == "A Small Book"
    assert doc.author == "A. Writer"
    assert doc.text.index("First chapter text.") < doc.text.index("Second chapter text.")
    assert [(c.title, doc.text[c.start:c.start + 3]) for c in doc.chapters] == [("One", "One"), ("Two", "Two")]


def test_pdf_text(tmp_path):
    path = tmp_path / "paper.pdf"
    path.write_bytes(minimal_pdf(["Hello from a PDF.", "Second sentence here."]))
    doc = load_document(path)
    assert "Hello from a PDF." in doc.text
    assert "Second sentence here." in doc.text


def test_docx_paragraphs(tmp_path):
    import docx

    path = tmp_path / "letter.docx"
    document = docx.Document()
    document.core_properties.title = "Letter"
    document.add_paragraph("Dear reader,")
    document.add_paragraph("")
    document.add_paragraph("This is the body.")
    document.save(str(path))
    doc = load_document(path)
    assert doc.title == "Letter"
    assert doc.text == "Dear reader,\n\nThis is the body."


@pytest.mark.parametrize("name, data, message", [
    ("empty.txt", b"", "is empty"),
    ("blank.md", b"   \n\n  ", "no readable text"),
    ("broken.epub", b"PK\x03\x04 this is not really a zip", "not a valid EPUB"),
    ("broken.pdf", b"%PDF-1.4\n garbage without objects", "not a valid PDF"),
    ("broken.docx", b"not a zip at all", "not a valid DOCX"),
    ("binary.txt", b"\x00\x01\x02\xff\xfe" * 10 + b"\x00\x9f", "binary"),
])
def test_bad_files_raise_clear_errors(tmp_path, name, data, message):
    path = tmp_path / name
    path.write_bytes(data)
    with pytest.raises(DocumentError, match=message):
        load_document(path)


def test_missing_and_folder(tmp_path):
    with pytest.raises(DocumentError, match="does not exist"):
        load_document(tmp_path / "nope.txt")
    with pytest.raises(DocumentError, match="is a folder"):
        load_document(tmp_path)


def test_unreadable_file(tmp_path, monkeypatch):
    path = tmp_path / "secret.txt"
    path.write_text("hidden")

    def refuse(self):
        raise PermissionError(13, "Permission denied", str(self))

    monkeypatch.setattr(Path, "read_bytes", refuse)  # chmod does not stop root, so refuse directly
    with pytest.raises(DocumentError, match="permission denied"):
        load_document(path)


def test_a_twenty_megabyte_text_loads_whole(tmp_path):
    sentence = "A sentence of moderate length to fill the file. "
    path = tmp_path / "big.txt"
    path.write_text(sentence * 420_000)
    assert path.stat().st_size > 20_000_000
    doc = load_document(path)
    assert len(doc.text) > 20_000_000 and doc.text.count("moderate") == 420_000


FIXTURES = {".epub": "live-manual.en.epub", ".pdf": "maint-guide-pages-1-16.pdf",
            ".docx": "debian-reference-ch02.docx", ".html": "debian-reference-ch08.en.html",
            ".md": "zstd-README.md"}


@pytest.mark.parametrize("suffix", sorted(FIXTURES))
@pytest.mark.parametrize("keep", [0.5, 0.1, 0.01])
def test_truncated_real_files_give_a_typed_error_or_what_they_hold(tmp_path, suffix, keep):
    data = (DATA / FIXTURES[suffix]).read_bytes()
    path = tmp_path / f"cut{suffix}"
    path.write_bytes(data[:max(1, int(len(data) * keep))])
    try:
        doc = load_document(path)
    except DocumentError as e:
        assert path.name in str(e) and "Traceback" not in str(e)
    else:
        assert suffix in (".html", ".md", ".pdf")  # text formats (and PDFs PDFium repairs) keep what is there
        assert doc.text.strip()


@pytest.mark.parametrize("suffix", [".epub", ".pdf", ".docx"])
def test_corrupted_bytes_give_a_typed_error(tmp_path, suffix):
    data = bytearray((DATA / FIXTURES[suffix]).read_bytes())
    for i in range(200, len(data), 97):
        data[i] ^= 0x5A
    path = tmp_path / f"noise{suffix}"
    path.write_bytes(bytes(data))
    try:
        load_document(path)
    except DocumentError as e:
        assert path.name in str(e)


def test_zip_that_is_no_epub_or_docx(tmp_path):
    for suffix, message in ((".epub", "no package document"), (".docx", "no document part")):
        path = tmp_path / f"other{suffix}"
        with zipfile.ZipFile(path, "w") as archive:
            archive.writestr("hello.txt", "hello")
        with pytest.raises(DocumentError, match=message):
            load_document(path)


def test_files_over_the_size_bound_are_refused_before_reading(tmp_path, monkeypatch):
    path = tmp_path / "big.html"
    path.write_text("<p>word</p>" * 1000)
    monkeypatch.setattr(documents, "MAX_MARKUP_BYTES", 1000)
    with pytest.raises(DocumentError, match="larger than Orator opens"):
        load_document(path)


def test_archives_that_unpack_past_the_bound_are_refused(tmp_path, monkeypatch):
    book = write_epub(tmp_path / "bomb.epub", [("One", "<p>" + "a " * 50_000 + "</p>")])
    monkeypatch.setattr(epub_reader, "MAX_UNPACKED_BYTES", 20_000)
    with pytest.raises(DocumentError, match="unpacks to more than"):
        load_document(book)
    monkeypatch.setattr(docx_reader, "MAX_UNPACKED_BYTES", 20_000)
    with pytest.raises(DocumentError, match="unpacks to more than"):
        load_document(DATA / "debian-reference-ch02.docx")


def test_pdf_page_and_text_bounds(tmp_path, monkeypatch):
    monkeypatch.setattr(pdf_reader, "MAX_PDF_PAGES", 10)
    with pytest.raises(DocumentError, match="16 pages, more than the 10"):
        load_document(DATA / "maint-guide-pages-1-16.pdf")
    monkeypatch.setattr(model, "MAX_TEXT_CHARS", 1000)
    with pytest.raises(DocumentError, match="more than Orator can open"):
        load_document(DATA / "debian-reference-ch08.en.html")


def test_encrypted_pdf_is_refused_in_plain_words(tmp_path):
    with pytest.raises(DocumentError, match="password protected"):
        load_document(DATA / "hostile" / "encrypted.pdf")


def test_pdf_without_text_warns_about_ocr(tmp_path):
    path = tmp_path / "scan.pdf"
    path.write_bytes(minimal_pdf([]))
    with pytest.raises(DocumentError, match="OCR"):
        load_document(path)
