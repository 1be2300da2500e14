"""DOCX: tables read in document order with the paragraphs, headings as structure, contents not read."""

import copy

import docx
from docx.oxml.ns import qn

from engine.documents import load_document
from tests.engine.documents.helpers import write_docx


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
        # the table style marks a first row of short labels: each cell is said with its column's label
        "The report", "6.1 Findings", "Before the table.",
        "name: dpkg; size: 5989; note inner a, inner b: low level, file based", "name: apt; size: merged cell",
        "After the table.", "Details", "More."]
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


def para(text, style=""):
    props = f'<w:pPr><w:pStyle w:val="{style}"/></w:pPr>' if style else ""
    return f"<w:p>{props}<w:r><w:t xml:space=\"preserve\">{text}</w:t></w:r></w:p>"


def test_a_libreoffice_internal_hyperlink_is_read_as_its_text(tmp_path):
    """LibreOffice writes a link to a bookmark as a relationship whose target is "#anchor", without
    TargetMode="External": python-docx took it for a part and refused the file with a KeyError."""
    rels = ('<Relationship Id="rId5" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/'
            'hyperlink" Target="#example.te.module"/>'
            '<Relationship Id="rId6" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/'
            'hyperlink" Target="https://example.org/" TargetMode="External"/>')
    body = ('<w:p><w:r><w:t xml:space="preserve">See </w:t></w:r><w:hyperlink r:id="rId5"><w:r><w:t>the module'
            '</w:t></w:r></w:hyperlink><w:r><w:t xml:space="preserve"> and </w:t></w:r><w:hyperlink r:id="rId6">'
            '<w:r><w:t>the site</w:t></w:r></w:hyperlink><w:r><w:t>.</w:t></w:r></w:p>'
            '<w:bookmarkStart w:id="0" w:name="example.te.module"/>' + para("The module, at last.")
            + '<w:bookmarkEnd w:id="0"/>')
    doc = load_document(write_docx(tmp_path / "lo.docx", body, rels))
    assert doc.text == "See the module and the site.\n\nThe module, at last."


def test_text_after_an_unknown_entity_is_kept(tmp_path):
    body = para("Before&nbsp;the space &unknownthing; and after it.") + para("The next paragraph.")
    text = load_document(write_docx(tmp_path / "e.docx", body)).text
    assert text == "Before the space and after it.\n\nThe next paragraph."


def test_runs_in_insertions_fields_and_smart_tags_are_read(tmp_path):
    body = ('<w:p><w:r><w:t xml:space="preserve">One </w:t></w:r><w:ins w:id="1" w:author="A"><w:r><w:t '
            'xml:space="preserve">two </w:t></w:r></w:ins><w:del w:id="2" w:author="A"><w:r><w:delText>gone '
            '</w:delText></w:r></w:del><w:fldSimple w:instr="PAGE"><w:r><w:t>3</w:t></w:r></w:fldSimple>'
            '<w:smartTag w:element="place"><w:r><w:t xml:space="preserve"> four</w:t></w:r></w:smartTag>'
            '<w:r><w:fldChar w:fldCharType="begin"/></w:r><w:r><w:instrText>HYPERLINK "x"</w:instrText></w:r>'
            '<w:r><w:fldChar w:fldCharType="end"/></w:r><w:r><w:tab/><w:t>five</w:t></w:r></w:p>')
    assert load_document(write_docx(tmp_path / "i.docx", body)).text == "One two 3 four five"


def test_a_cell_merged_down_is_read_once(tmp_path):
    def cell(text, merge=""):
        props = f"<w:tcPr><w:vMerge{merge}/></w:tcPr>" if merge is not None else ""
        return f"<w:tc>{props}{para(text)}</w:tc>"

    restart = ' w:val="restart"'
    body = (f"<w:tbl><w:tr>{cell('apt', restart)}{cell('high level', None)}</w:tr>"
            f"<w:tr>{cell('', '')}{cell('with a resolver', None)}</w:tr></w:tbl>")
    assert load_document(write_docx(tmp_path / "m.docx", body)).text == "apt, high level\n\nwith a resolver"
