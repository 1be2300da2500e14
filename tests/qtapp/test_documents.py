"""Importing documents of every supported format, and clear errors on bad input."""

import time
from pathlib import Path

import pytest

from qtapp.documents import Document, DocumentError, html_to_text, load_document


def minimal_pdf(lines: list[str]) -> bytes:
    """A one-page PDF showing ``lines`` in Helvetica, with a correct cross-reference table."""
    content = "BT /F1 12 Tf 72 720 Td 14 TL " + " ".join(f"({line}) Tj T*" for line in lines) + " ET"
    objects = [
        "<< /Type /Catalog /Pages 2 0 R >>",
        "<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        "<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R "
        "/Resources << /Font << /F1 5 0 R >> >> >>",
        f"<< /Length {len(content)} >>\nstream\n{content}\nendstream",
        "<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
    ]
    out = b"%PDF-1.4\n"
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += f"{number} 0 obj\n{body}\nendobj\n".encode()
    xref = len(out)
    out += f"xref\n0 {len(objects) + 1}\n0000000000 65535 f \n".encode()
    out += "".join(f"{o:010d} 00000 n \n" for o in offsets).encode()
    out += f"trailer\n<< /Size {len(objects) + 1} /Root 1 0 R >>\nstartxref\n{xref}\n%%EOF\n".encode()
    return out


def write_epub(path, chapters: list[tuple[str, str]], title="A Small Book"):
    from ebooklib import epub

    book = epub.EpubBook()
    book.set_identifier("id-1")
    book.set_title(title)
    book.set_language("en")
    items = []
    for i, (heading, body) in enumerate(chapters):
        chapter = epub.EpubHtml(title=heading, file_name=f"c{i}.xhtml", lang="en")
        chapter.content = f"<html><body><h1>{heading}</h1><p>{body}</p></body></html>"
        book.add_item(chapter)
        items.append(chapter)
    book.toc = items
    book.add_item(epub.EpubNcx())
    book.add_item(epub.EpubNav())
    book.spine = items
    epub.write_epub(str(path), book)


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
    write_epub(path, [("One", "First chapter text."), ("Two", "Second chapter text.")])
    doc = load_document(path)
    assert doc.title == "A Small Book"
    assert doc.text.index("First chapter text.") < doc.text.index("Second chapter text.")
    assert "Two" in doc.text


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


def test_twenty_megabyte_text_loads_quickly(tmp_path):
    path = tmp_path / "big.txt"
    path.write_text("A sentence of moderate length to fill the file. " * 420_000)
    assert path.stat().st_size > 20_000_000
    started = time.perf_counter()
    doc = load_document(path)
    assert time.perf_counter() - started < 3.0
    assert len(doc.text) > 20_000_000
