"""What each reader says a block is (``Document.kinds``), from the markup where the format has it, and what the
reading policy then says of it: code and sessions announced, tables row by row with their headers, footnotes after
their paragraph or skipped, superscripts as powers or marks."""

from __future__ import annotations

from engine.core.text.reading_policy import ReadingPolicy
from engine.documents import load_document
from engine.production.book_sources import load_book
from engine.production.export_plan import passage_speech
from tests.engine.documents.helpers import write_docx, write_epub

SKIP_NOTES = ReadingPolicy(footnotes="skip")


def kinds(doc) -> list[tuple[str, str]]:
    """(text, kind) of each block of ``doc``."""
    out = []
    for block in doc.text.split("\n\n"):
        start = doc.text.index(block)
        out.append((block, doc.kind_at(start)))
    return out


def spoken(path, policy: ReadingPolicy | None = None) -> list[str]:
    """What export speaks of ``path`` (``--list-segments``'s texts)."""
    book = load_book(path)
    return [said for c in book.chapters for p in c.passages for _, said in passage_speech(p, policy)]


def test_html_blocks_get_their_kinds_from_the_markup(tmp_path):
    path = tmp_path / "k.html"
    path.write_text(
        "<html><body><h1>Title</h1><p>Some prose.</p><pre>$ ls -l\ntotal 0</pre><pre>int main() {\n"
        "  return 0;\n}</pre><pre>┌───┐\n│ a │\n└───┘</pre><ul><li>an item</li></ul><dl><dt>term</dt>"
        "<dd>its meaning</dd></dl><math display='block' alttext='x^2 + 1'><mi>x</mi></math>"
        "<p class='code'>make build</p></body></html>", encoding="utf-8")
    doc = load_document(path)
    assert kinds(doc) == [("Title", "heading"), ("Some prose.", "prose"), ("$ ls -l\ntotal 0", "session"),
                          ("int main() {\nreturn 0;", "code"), ("│ a │", "diagram"), ("an item", "list-item"),
                          ("term", "definition"), ("its meaning", "definition"), ("x^2 + 1", "formula"),
                          ("make build", "code")]
    assert spoken(path) == ["Title", "Some prose.", "Session example.", "Code example.", "Diagram.", "an item",
                            "term", "its meaning", "Formula.", "Code example."]
    read_all = spoken(path, ReadingPolicy(read_code=True))
    assert "$ ls -l total 0" in read_all and "x^2 + 1" in read_all and "make build" in read_all


def test_a_structured_paragraph_is_not_guessed_to_be_code(tmp_path):
    """A <p> that happens to start like a prompt is prose: the markup said so (plain text would guess)."""
    path = tmp_path / "p.html"
    path.write_text("<body><p># apt install is what the manual says next.</p></body>", encoding="utf-8")
    assert spoken(path) == ["# apt install is what the manual says next."]
    text = tmp_path / "p.txt"
    text.write_text("# apt install foo\n", encoding="utf-8")
    assert spoken(text) == ["Code example."]


def test_html_footnotes_are_read_after_their_paragraph_or_skipped(tmp_path):
    path = tmp_path / "n.html"
    path.write_text(
        "<body><p>First claim<a epub:type='noteref' href='#n1'>1</a> stands.</p><p>Second paragraph.</p>"
        "<p>DocBook text<sup>[<a id='r2' href='#ftn.r2' class='footnote'>2</a>]</sup> here.</p><p>Last.</p>"
        "<aside epub:type='footnote' id='n1'><p>The first note.</p></aside>"
        "<div class='footnotes'><div id='ftn.r2' class='footnote'><p><sup>[<a href='#r2' class='para'>2</a>] </sup>"
        "The second note.</p></div></div></body>", encoding="utf-8")
    doc = load_document(path)
    assert kinds(doc) == [("First claim stands.", "prose"), ("The first note.", "footnote"),
                          ("Second paragraph.", "prose"), ("DocBook text here.", "prose"),
                          ("The second note.", "footnote"), ("Last.", "prose")]
    assert spoken(path) == ["First claim stands.", "Footnote: The first note.", "Second paragraph.",
                            "DocBook text here.", "Footnote: The second note.", "Last."]
    assert spoken(path, SKIP_NOTES) == ["First claim stands.", "Second paragraph.", "DocBook text here.", "Last."]


def test_epub_notes_and_tables(tmp_path):
    path = write_epub(tmp_path / "b.epub", [
        ("One", "<p>A claim<a xmlns:epub='http://www.idpf.org/2007/ops' epub:type='noteref' href='#fn'>*</a>.</p>"
                "<p>Then more.</p><aside xmlns:epub='http://www.idpf.org/2007/ops' epub:type='footnote' id='fn'>"
                "<p>Source: the archive.</p></aside>"),
        ("Two", "<table><thead><tr><th>Name</th><th>Age</th><th>Member</th></tr></thead>"
                "<tbody><tr><td>Alice</td><td>30</td><td>✓</td></tr><tr><td>Bob</td><td>41</td><td>—</td></tr>"
                "</tbody></table>"),
    ])
    doc = load_document(path)
    assert "A claim.\n\nSource: the archive.\n\nThen more." in doc.text
    assert "Name: Alice; Age: 30; Member: ✓\n\nName: Bob; Age: 41; Member: —" in doc.text
    said = spoken(path)
    assert said[said.index("A claim."):] == ["A claim.", "Footnote: Source: the archive.", "Then more.", "Two",
                                             "Name: Alice; Age: 30; Member: yes", "Name: Bob; Age: 41; Member: none"]


def test_markdown_fences_tables_and_footnotes(tmp_path):
    path = tmp_path / "r.md"
    path.write_text("# Guide\n\nRun it[^1] now.\n\n```\n>>> import os\n>>> os.getcwd()\n```\n\n"
                    "| Flag | Meaning |\n|---|---|\n| `-v` | verbose |\n| `-q` | ✗ |\n\n[^1]: Or later.\n",
                    encoding="utf-8")
    doc = load_document(path)
    assert kinds(doc) == [("Guide", "heading"), ("Run it now.", "prose"), ("Or later.", "footnote"),
                          (">>> import os\n>>> os.getcwd()", "session"), ("Flag: -v; Meaning: verbose", "table-row"),
                          ("Flag: -q; Meaning: ✗", "table-row")]
    assert spoken(path) == ["Guide", "Run it now.", "Footnote: Or later.", "Session example.",
                            "Flag: -v; Meaning: verbose", "Flag: -q; Meaning: no"]


def test_docx_styles_tables_footnotes_and_powers(tmp_path):
    w = "http://schemas.openxmlformats.org/wordprocessingml/2006/main"

    def p(text: str, style: str = "", extra: str = "") -> str:
        ppr = f'<w:pPr><w:pStyle w:val="{style}"/></w:pPr>' if style else ""
        return f'<w:p>{ppr}<w:r><w:t xml:space="preserve">{text}</w:t></w:r>{extra}</w:p>'

    sup = '<w:r><w:rPr><w:vertAlign w:val="superscript"/></w:rPr><w:t>{}</w:t></w:r>'
    ref = '<w:r><w:footnoteReference w:id="2"/></w:r>'
    cell = '<w:tc><w:p><w:r><w:t>{}</w:t></w:r></w:p></w:tc>'
    table = ('<w:tbl><w:tr><w:trPr><w:tblHeader/></w:trPr>' + cell.format("Key") + cell.format("Bits") + '</w:tr>'
             '<w:tr>' + cell.format("RSA") + cell.format("2048") + '</w:tr><w:tr>' + cell.format("none")
             + cell.format("—") + '</w:tr></w:tbl>')
    body = (p("A keyspace of 2", extra=sup.format("256") + '<w:r><w:t xml:space="preserve"> keys</w:t></w:r>' + ref)
            + p("echo hello", "SourceText") + p("exit 0", "SourceText") + p("Wise words", extra=sup.format("3"))
            + table + p("After."))
    notes = (f'<w:footnotes xmlns:w="{w}"><w:footnote w:type="separator" w:id="0"><w:p><w:r><w:separator/></w:r>'
             '</w:p></w:footnote><w:footnote w:id="2"><w:p><w:r><w:t>See the standard.</w:t></w:r></w:p>'
             '</w:footnote></w:footnotes>')
    styles = (f'<w:styles xmlns:w="{w}"><w:style w:styleId="SourceText"><w:name w:val="Source Text"/></w:style>'
              '</w:styles>')
    rels = ('<Relationship Id="rId2" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/'
            'footnotes" Target="footnotes.xml"/><Relationship Id="rId3" Type="http://schemas.openxmlformats.org/'
            'officeDocument/2006/relationships/styles" Target="styles.xml"/>')
    path = write_docx(tmp_path / "d.docx", body, rels, {"word/footnotes.xml": notes, "word/styles.xml": styles})
    doc = load_document(path)
    assert kinds(doc) == [("A keyspace of 2²⁵⁶ keys", "prose"), ("See the standard.", "footnote"),
                          ("echo hello\nexit 0", "code"), ("Wise words³", "prose"),
                          ("Key: RSA; Bits: 2048", "table-row"), ("Key: none; Bits: —", "table-row"),
                          ("After.", "prose")]
    assert spoken(path) == ["A keyspace of 2 to the power 256 keys", "Footnote: See the standard.", "Code example.",
                            "Wise words", "Key: RSA; Bits: 2048", "Key: none; Bits: none", "After."]
    assert "See the standard." not in " ".join(spoken(path, SKIP_NOTES))
