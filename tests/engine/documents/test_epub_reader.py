"""EPUB: spine order, chapters from the navigation, and what real books do tolerated instead of refused."""

import zipfile

import pytest

from engine.documents import DocumentError, load_document
from tests.engine.documents.helpers import write_epub, xhtml

CHAPTERS = [("One", "<p>First chapter text.</p>"), ("Two", "<p>Second chapter text.</p>"),
            ("Three", "<p>Third chapter text.</p>")]


def titles(doc):
    return [(c.title, c.level, doc.text[c.start:c.start + 5]) for c in doc.chapters]


def test_epub3_navigation_gives_nested_chapters(tmp_path):
    nav = xhtml('<nav xmlns:epub="http://www.idpf.org/2007/ops" epub:type="landmarks"><ol><li><a href="c2.xhtml">'
                'Skip me</a></li></ol></nav><nav xmlns:epub="http://www.idpf.org/2007/ops" epub:type="toc"><ol>'
                '<li><a href="c0.xhtml">Part one</a><ol><li><a href="c1.xhtml#s">Sub part</a></li></ol></li>'
                '<li><span>Heading without link</span><ol><li><a href="c2.xhtml">Last</a></li></ol></li></ol></nav>')
    book = write_epub(tmp_path / "b.epub", [("One", "<p>a.</p>"), ("Two", '<p>b.</p><p id="s">Here.</p>'),
                                            ("Three", "<p>c.</p>")], nav="nav", files={"OEBPS/nav.xhtml": nav})
    doc = load_document(book)
    assert titles(doc) == [("Part one", 1, "One\n\n"), ("Sub part", 2, "Here."), ("Last", 2, "Three")]
    assert "Skip me" not in doc.text and "Part one" not in doc.text  # the navigation document is not read


def test_manifest_hrefs_with_fragments_and_repeated_files_are_read_once(tmp_path):
    extra = ('<item id="c1.xhtml#o8" href="c1.xhtml#o8" media-type="application/xhtml+xml"/>'
             '<item id="c1b" href="c1.xhtml" media-type="application/xhtml+xml"/>')
    book = write_epub(tmp_path / "f.epub", CHAPTERS, manifest_extra=extra,
                      spine_extra='<itemref idref="c1.xhtml#o8"/><itemref idref="c1b"/>')
    doc = load_document(book)
    assert doc.text.count("Second chapter text.") == 1
    assert doc.warnings == []


def test_missing_items_and_files_are_skipped_with_one_warning(tmp_path):
    book = write_epub(tmp_path / "m.epub", CHAPTERS, spine_extra='<itemref idref="nowhere"/>',
                      files={"OEBPS/c1.xhtml": None})
    doc = load_document(book)
    assert "First chapter text." in doc.text and "Third chapter text." in doc.text
    assert "Second" not in doc.text
    assert [w for w in doc.warnings if "2 part(s) of the book could not be read" in w]
    assert [c.title for c in doc.chapters] == ["One", "Three"]


def test_a_damaged_member_costs_only_that_chapter(tmp_path):
    book = write_epub(tmp_path / "d.epub", [("One", "<p>" + "First chapter text. " * 200 + "</p>"),
                                            ("Two", "<p>" + "Second chapter text. " * 200 + "</p>")])
    data = bytearray(book.read_bytes())
    with zipfile.ZipFile(book) as archive:
        info = archive.getinfo("OEBPS/c1.xhtml")
    start = info.header_offset + 30 + len(info.filename) + len(info.extra)
    data[start + 10:start + 40] = b"\x00" * 30  # the compressed bytes of chapter two
    book.write_bytes(bytes(data))
    doc = load_document(book)
    assert "First chapter text." in doc.text and "Second chapter text." not in doc.text
    assert any("could not be read" in w for w in doc.warnings)


def test_odd_encodings_and_malformed_chapters_are_read(tmp_path):
    latin = ("<?xml version='1.0' encoding='iso-8859-1'?><html><body><h1>Two</h1><p>Caf\xe9 cr\xe8me.</p>"
             "</body></html>").encode("latin-1")
    lying = b"<?xml version='1.0' encoding='utf-8'?><html><body><h1>Three</h1><p>Na\xefve &nbsp; text</body>"
    book = write_epub(tmp_path / "e.epub", CHAPTERS, files={"OEBPS/c1.xhtml": latin, "OEBPS/c2.xhtml": lying})
    doc = load_document(book)
    assert "Café crème." in doc.text
    assert "Naïve text" in doc.text  # invalid UTF-8 read as Windows-1252, and an HTML entity in XHTML
    assert any("Windows-1252" in w for w in doc.warnings)


def test_no_container_and_no_spine_still_read(tmp_path):
    book = write_epub(tmp_path / "c.epub", CHAPTERS, container=False)
    assert "Third chapter text." in load_document(book).text
    opf = ('<?xml version="1.0"?><package xmlns="http://www.idpf.org/2007/opf" version="2.0"><manifest>'
           '<item id="a" href="c0.xhtml" media-type="application/xhtml+xml"/>'
           '<item id="b" href="c1.xhtml" media-type="application/xhtml+xml"/></manifest></package>')
    book = write_epub(tmp_path / "s.epub", CHAPTERS, files={"OEBPS/content.opf": opf})
    text = load_document(book).text
    assert text.index("First") < text.index("Second")


def test_non_linear_items_are_not_read(tmp_path):
    book = write_epub(tmp_path / "n.epub", CHAPTERS[:1], manifest_extra=(
        '<item id="notes" href="notes.xhtml" media-type="application/xhtml+xml"/>'),
        spine_extra='<itemref idref="notes" linear="no"/>', files={"OEBPS/notes.xhtml": xhtml("<p>Notes.</p>")})
    assert "Notes." not in load_document(book).text


def test_drm_is_refused_but_font_obfuscation_is_not(tmp_path):
    def encryption(algorithm, uri):
        return ('<encryption xmlns="urn:oasis:names:tc:opendocument:xmlns:container" '
                'xmlns:enc="http://www.w3.org/2001/04/xmlenc#"><enc:EncryptedData>'
                f'<enc:EncryptionMethod Algorithm="{algorithm}"/><enc:CipherData>'
                f'<enc:CipherReference URI="{uri}"/></enc:CipherData></enc:EncryptedData></encryption>')

    book = write_epub(tmp_path / "drm.epub", CHAPTERS, files={
        "META-INF/encryption.xml": encryption("http://www.w3.org/2001/04/xmlenc#aes128-cbc", "OEBPS/c0.xhtml")})
    with pytest.raises(DocumentError, match="DRM"):
        load_document(book)
    book = write_epub(tmp_path / "font.epub", CHAPTERS, files={
        "META-INF/encryption.xml": encryption("http://www.idpf.org/2008/embedding", "OEBPS/font.otf")})
    assert "First chapter text." in load_document(book).text


def test_a_book_with_nothing_readable(tmp_path):
    book = write_epub(tmp_path / "empty.epub", [], nav=None)
    with pytest.raises(DocumentError, match="no readable text"):
        load_document(book)


def test_images_in_the_spine_are_not_read_as_text(tmp_path):
    book = write_epub(tmp_path / "i.epub", CHAPTERS[:1], manifest_extra=(
        '<item id="cover" href="cover.jpg" media-type="image/jpeg"/>'),
        spine_extra='<itemref idref="cover"/>', files={"OEBPS/cover.jpg": b"\xff\xd8\xff\xe0JFIF garbage <p>x"})
    doc = load_document(book)
    assert doc.text == "One\n\nFirst chapter text." and doc.warnings == []


def test_navigation_hrefs_without_their_folder_still_give_the_chapters(tmp_path):
    """The navigation document sits in a folder of its own and names the pages as if beside it ("c1.xhtml" for
    "../c1.xhtml"): resolved as the specification says they miss, so the pages' file names find them."""
    names = ["Opening", "Middle", "Closing"]
    chapters = [(name, f"<h2>Section {i}.1</h2><p>Text {i}.</p>") for i, name in enumerate(names, 1)]
    entries = "".join(f'<li><a href="c{i}.xhtml">{name} (the contents)</a></li>' for i, name in enumerate(names))
    nav = xhtml(f'<nav xmlns:epub="http://www.idpf.org/2007/ops" epub:type="toc"><ol>{entries}</ol></nav>')
    book = write_epub(tmp_path / "b.epub", chapters, nav="none", files={"OEBPS/nav/nav.xhtml": nav},
                      manifest_extra='<item id="nav" href="nav/nav.xhtml" media-type="application/xhtml+xml" '
                                     'properties="nav"/>')
    doc = load_document(book)
    assert [c.title for c in doc.chapters] == [f"{name} (the contents)" for name in names]  # not the headings
    assert doc.text[doc.chapters[2].start:].startswith("Closing\n\nSection 3.1")


def test_a_contents_of_one_entry_gives_way_to_the_headings(tmp_path):
    chapters = [(f"Chapter {i}", f"<p>Text {i}.</p>") for i in range(1, 4)]
    nav = xhtml('<nav xmlns:epub="http://www.idpf.org/2007/ops" epub:type="toc"><ol><li><a href="c0.xhtml">'
                "The Book</a></li></ol></nav>")
    book = write_epub(tmp_path / "one.epub", chapters, nav="none", files={"OEBPS/nav.xhtml": nav},
                      manifest_extra='<item id="nav" href="nav.xhtml" media-type="application/xhtml+xml" '
                                     'properties="nav"/>')
    assert [c.title for c in load_document(book).chapters] == ["Chapter 1", "Chapter 2", "Chapter 3"]
