"""DOCX: tables read in document order with the paragraphs, headings as structure, contents not read."""

import copy

import docx
from docx.oxml.ns import qn

from engine.documents import load_document


def test_tables_in_order_headings_and_merged_cells(tmp_path):
    document = docx.Document()
    document.core_properties.title = "Report"
    document.core_properties.author = "Ann Author"
    document.add_heading("The report", 0)
    document.add_heading("6.1. Findings", 1)
    document.add_paragraph("Before the table.")
    table = document.add_table(rows=3, cols=3)
    for r, row in enumerate([["name", "size", "note"], ["dpkg", "5989", "low level, file based"], ["apt", "", ""]]):
        for c, value in enumerate(row):
            table.cell(r, c).text = value
    table.cell(2, 1).merge(table.cell(2, 2)).text = "merged cell"
    inner = table.cell(0, 2).add_table(rows=1, cols=2)
    inner.cell(0, 0).text, inner.cell(0, 1).text = "inner a", "inner b"
    document.add_paragraph("After the table.")
    document.add_heading("Details", 2)
    document.add_paragraph("More.")
    path = tmp_path / "r.docx"
    document.save(str(path))
    doc = load_document(path)
    assert (doc.title, doc.author) == ("Report", "Ann Author")
    assert doc.text.split("\n\n") == [
        "The report", "6.1 Findings", "Before the table.", "name; size; note inner a, inner b",
        "dpkg; 5989; low level, file based", "apt, merged cell", "After the table.", "Details", "More."]
    assert [(h.title, h.level) for h in doc.headings] == [("The report", 1), ("6.1 Findings", 1), ("Details", 2)]


def test_contents_entries_and_content_controls(tmp_path):
    document = docx.Document()
    toc = document.add_paragraph("Chapter one ........ 3")
    toc.style = document.styles.add_style("TOC 1", 1)
    document.add_paragraph("Inside a content control.")
    document.add_paragraph("A generated contents.")
    document.add_paragraph("Plain text.")
    body = document.element.body
    paragraphs = body.findall(qn("w:p"))
    for paragraph, gallery in ((paragraphs[1], None), (paragraphs[2], "Table of Contents")):
        sdt = body.makeelement(qn("w:sdt"), {})
        props = sdt.makeelement(qn("w:sdtPr"), {})
        if gallery:
            part = props.makeelement(qn("w:docPartObj"), {})
            part.append(part.makeelement(qn("w:docPartGallery"), {qn("w:val"): gallery}))
            props.append(part)
        content = sdt.makeelement(qn("w:sdtContent"), {})
        content.append(copy.deepcopy(paragraph))
        sdt.extend([props, content])
        paragraph.addprevious(sdt)
        body.remove(paragraph)
    path = tmp_path / "t.docx"
    document.save(str(path))
    assert load_document(path).text == "Inside a content control.\n\nPlain text."


def test_a_minimal_file_without_styles_or_properties(tmp_path):
    from engine.documents.selfcheck import SENTENCE, _docx

    _docx(tmp_path / "m.docx")
    doc = load_document(tmp_path / "m.docx")
    assert (doc.text, doc.title, doc.author) == (SENTENCE, "m", "")
