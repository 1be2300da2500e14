"""Every reader is bounded by work and memory, not only by bytes on disk: each bomb is built here, small on
disk, and refused with a clear message by a count or a limit (never by a clock)."""

import zlib

import pytest

from engine.documents import DocumentError, docx_reader, load_document, pdf_reader, pdf_worker, text_reader
from engine.documents.model import MAX_MARKUP_TAGS
from tests.engine.documents.helpers import layout_pdf, minimal_pdf, write_docx, write_epub


def deflated_pdf(path, inflated_mib, op=b"BT /F1 12 Tf 72 720 Td (x) Tj ET\n"):
    """A one-page PDF whose content stream inflates to ``inflated_mib`` MiB of the operators ``op``."""
    chunk = op * ((1 << 20) // len(op))
    z = zlib.compressobj(9)
    stream = b"".join(z.compress(chunk) for _ in range(inflated_mib)) + z.flush()
    objects = [b"<< /Type /Catalog /Pages 2 0 R >>", b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
               b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R "
               b"/Resources << /Font << /F1 5 0 R >> >> >>",
               b"<< /Length %d /Filter /FlateDecode >>\nstream\n" % len(stream) + stream + b"\nendstream",
               b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>"]
    out, offsets = b"%PDF-1.4\n", []
    for number, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % number + body + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % o for o in offsets)
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objects) + 1, xref)
    path.write_bytes(out)
    return path


def test_a_pdf_inflating_past_the_memory_limit_is_an_error_not_a_crash(tmp_path, monkeypatch):
    """PDFium aborts the process (SIGABRT) where an allocation fails: in the worker that costs a message."""
    monkeypatch.setattr(pdf_worker, "MAX_PDF_MEMORY", 64 << 20)
    bomb = deflated_pdf(tmp_path / "bomb.pdf", 96)
    assert bomb.stat().st_size < 400_000
    with pytest.raises(DocumentError, match="needs more memory to read than Orator allows for a PDF .64 MB."):
        load_document(bomb)
    small = tmp_path / "small.pdf"
    small.write_bytes(minimal_pdf(["A sentence the same limit reads."]))
    assert load_document(small).text == "A sentence the same limit reads."  # the limit, not the worker, refused


def test_a_pdf_page_with_more_characters_than_a_page_holds_is_refused(tmp_path, monkeypatch):
    monkeypatch.setattr(pdf_reader, "MAX_PAGE_CHARS", 500)  # handed to the worker with the other bounds
    path = tmp_path / "dense.pdf"
    path.write_bytes(layout_pdf([[(20, 800 - 10 * i, 8, "word " * 20) for i in range(6)]]))
    with pytest.raises(DocumentError, match="Page 1 of “dense.pdf” holds more than 500 characters"):
        load_document(path)


def test_html_and_epub_pages_past_the_tag_bound_are_refused_before_parsing(tmp_path):
    page = tmp_path / "tags.html"
    page.write_text("<p>" + "<b>" * MAX_MARKUP_TAGS + "word</p>")
    with pytest.raises(DocumentError, match=f"“tags.html” holds {MAX_MARKUP_TAGS + 2:,} tags"):
        load_document(page)
    half = "<span>" * (MAX_MARKUP_TAGS // 2)  # each page within the bound, the book past it
    book = write_epub(tmp_path / "dense.epub", [("One", f"<p>{half}a</p>"), ("Two", f"<p>{half}b</p>")])
    assert book.stat().st_size < 200_000
    with pytest.raises(DocumentError, match="“dense.epub” holds more than 2,000,000 tags in its pages"):
        load_document(book)


def test_nested_superscripts_links_and_tables_read_their_text(tmp_path):
    path = tmp_path / "deep.xhtml"
    path.write_text('<?xml version="1.0"?><html xmlns="http://www.w3.org/1999/xhtml"><body><p>Deep '
                    + "<sup><a href='#n'>" * 120 + "inside" + "</a></sup>" * 120 + " words.</p>"
                    + "<table><tr><td>" * 60 + "cell" + "</td></tr></table>" * 60 + "</body></html>")
    assert load_document(path).text == "Deep inside words.\n\ncell"


def test_a_docx_element_past_the_element_budget_is_refused(tmp_path, monkeypatch):
    monkeypatch.setattr(docx_reader, "MAX_ELEMENTS", 1000)
    runs = "<w:r><w:t>a</w:t></w:r>" * 600  # 1,201 elements in one paragraph
    path = write_docx(tmp_path / "runs.docx", f"<w:p>{runs}</w:p>")
    with pytest.raises(DocumentError, match="more than 1,000 elements in one table or paragraph"):
        load_document(path)
    ok = write_docx(tmp_path / "ok.docx", "".join(f"<w:p><w:r><w:t>p{i}</w:t></w:r></w:p>" for i in range(600)))
    assert load_document(ok).text.endswith("p599")  # the budget is per body element: a long book is read


def test_a_docx_nested_deeper_than_libxml2_keeps_is_refused(tmp_path):
    deep = "<w:sdt><w:sdtContent>" * 300 + "<w:p><w:r><w:t>x</w:t></w:r></w:p>" + "</w:sdtContent></w:sdt>" * 300
    path = write_docx(tmp_path / "deep.docx", deep)
    with pytest.raises(DocumentError, match="nests its elements deeper than Orator reads"):
        load_document(path)


def test_a_docx_part_whose_directory_lies_about_its_size_stops_at_the_bound(tmp_path, monkeypatch):
    monkeypatch.setattr(docx_reader, "MAX_PART_BYTES", 100_000)
    path = write_docx(tmp_path / "big.docx", "<w:p><w:r><w:t>" + "a" * 200_000 + "</w:t></w:r></w:p>")
    with pytest.raises(DocumentError, match="larger than Orator reads"):
        load_document(path)


def test_docx_notes_past_their_bound_are_left_out_with_a_warning(tmp_path, monkeypatch):
    from engine.documents import docx_notes

    monkeypatch.setattr(docx_notes, "MAX_NOTES_PART_BYTES", 10_000)
    w = "http://schemas.openxmlformats.org/wordprocessingml/2006/main"
    notes = "".join(f'<w:footnote w:id="{i}"><w:p><w:r><w:t>note {i}</w:t></w:r></w:p></w:footnote>'
                    for i in range(400))
    rels = ('<Relationship Id="rId9" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/'
            'footnotes" Target="footnotes.xml"/>')
    path = write_docx(tmp_path / "notes.docx", '<w:p><w:r><w:t>Text</w:t></w:r><w:r><w:footnoteReference w:id="3"/>'
                      "</w:r></w:p>", rels, {"word/footnotes.xml": f'<w:footnotes xmlns:w="{w}">{notes}</w:footnotes>'})
    doc = load_document(path)
    assert doc.text == "Text"  # the body is read all the same
    assert [w.endswith("they were not read.") and "footnotes of “notes.docx”" in w for w in doc.warnings] == [True]
    monkeypatch.setattr(docx_notes, "MAX_NOTES_PART_BYTES", 1 << 20)
    assert load_document(path).text == "Text\n\nnote 3"


def test_markdown_past_the_inline_bound_is_read_as_written(tmp_path):
    path = tmp_path / "links.md"
    hostile = "[a](" * (text_reader.MAX_INLINE_CHARS // 4 + 1)
    path.write_text(f"# Title\n\n{hostile}\n\nA *fine* paragraph.\n")
    assert load_document(path).text == f"Title\n\n{hostile}\n\nA fine paragraph."


def test_markdown_nesting_is_bounded_and_never_cut(tmp_path):
    path = tmp_path / "nested.md"
    path.write_text("".join("  " * i + f"- item{i}\n" for i in range(25)) + "\n" + ">" * 40 + " quoted\n")
    text = load_document(path).text
    assert all(f"item{i}" in text for i in range(25)) and text.endswith("quoted")
    for deep in ("".join("  " * i + f"- item{i}\n" for i in range(400)), ">" * 5000 + " quoted\n"):
        path.write_text(deep)
        with pytest.raises(DocumentError, match="nests lists or quotes deeper than Orator reads"):
            load_document(path)


def test_the_frozen_apps_worker_entry_reads_a_pdf(tmp_path):
    """A frozen app has no "python -m": it runs itself with --pdf-worker, which main.py hands over first."""
    import json
    import subprocess
    import sys
    from pathlib import Path

    path = tmp_path / "one.pdf"
    path.write_bytes(minimal_pdf(["Read by the entry main.py hands over."]))
    main = Path(__file__).resolve().parents[3] / "main.py"
    child = subprocess.run([sys.executable, str(main), pdf_worker.WORKER_FLAG, str(path),
                            json.dumps(pdf_worker._limits())], capture_output=True, check=True)
    result = json.loads(child.stdout)
    assert result["parsed"]["blocks"][0][0] == "Read by the entry main.py hands over."
