"""Builders of small documents for the import tests: PDFs with text placed on the page, EPUBs, DOCX files."""

from __future__ import annotations

import zipfile
from pathlib import Path

DATA = Path(__file__).resolve().parents[2] / "data" / "documents"


def layout_pdf(pages: list[list[tuple[float, float, float, str]]], outline: list[tuple[str, int]] = (),
               font_name: str = "Helvetica") -> bytes:
    """A PDF of A4 pages, each a list of (x, y, size, text) lines in one standard font (y from the bottom),
    with a correct cross-reference table; ``outline`` is (title, page index) bookmarks. A line's text may be
    a list of (size, rise, text) runs instead: type of other sizes, raised by ``rise`` points (superscripts)."""
    def escape(text: str) -> str:
        return text.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)")

    def show(size: float, text) -> str:
        if isinstance(text, str):
            return f"/F1 {size} Tf ({escape(text)}) Tj"
        return " ".join(f"/F1 {s} Tf {rise} Ts ({escape(t)}) Tj" for s, rise, t in text) + " 0 Ts"

    n = len(pages)
    font = 3 + 2 * n
    objects = ["<< /Type /Catalog /Pages 2 0 R" + (f" /Outlines {font + 1} 0 R" if outline else "") + " >>",
               "<< /Type /Pages /Kids [" + " ".join(f"{3 + 2 * i} 0 R" for i in range(n)) + f"] /Count {n} >>"]
    for i, lines in enumerate(pages):
        content = " ".join(f"BT {x} {y} Td {show(size, text)} ET" for x, y, size, text in lines)
        objects.append(f"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 595 842] /Contents {4 + 2 * i} 0 R "
                       f"/Resources << /Font << /F1 {font} 0 R >> >> >>")
        objects.append(f"<< /Length {len(content)} >>\nstream\n{content}\nendstream")
    objects.append(f"<< /Type /Font /Subtype /Type1 /BaseFont /{font_name} >>")
    if outline:
        first = font + 2
        objects.append(f"<< /Type /Outlines /First {first} 0 R /Last {first + len(outline) - 1} 0 R "
                       f"/Count {len(outline)} >>")
        for k, (title, page) in enumerate(outline):
            links = (f" /Prev {first + k - 1} 0 R" if k else "") + \
                    (f" /Next {first + k + 1} 0 R" if k + 1 < len(outline) else "")
            objects.append(f"<< /Title ({escape(title)}) /Parent {font + 1} 0 R{links} "
                           f"/Dest [{3 + 2 * page} 0 R /XYZ 0 842 0] >>")
    out = b"%PDF-1.4\n"
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += f"{number} 0 obj\n{body}\nendobj\n".encode("latin-1")
    xref = len(out)
    out += f"xref\n0 {len(objects) + 1}\n0000000000 65535 f \n".encode()
    out += "".join(f"{o:010d} 00000 n \n" for o in offsets).encode()
    out += f"trailer\n<< /Size {len(objects) + 1} /Root 1 0 R >>\nstartxref\n{xref}\n%%EOF\n".encode()
    return out


def minimal_pdf(lines: list[str]) -> bytes:
    """A one-page PDF showing ``lines`` in 12 pt Helvetica."""
    return layout_pdf([[(72, 720 - 14 * i, 12, line) for i, line in enumerate(lines)]])


def xhtml(body: str, title: str = "") -> str:
    return ("<?xml version='1.0' encoding='utf-8'?>\n<!DOCTYPE html>\n"
            f"<html xmlns=\"http://www.w3.org/1999/xhtml\"><head><title>{title}</title></head>"
            f"<body>{body}</body></html>")


def write_epub(path: Path, chapters: list[tuple[str, str]], title: str = "A Small Book", author: str = "A. Writer",
               nav: str = "ncx", manifest_extra: str = "", spine_extra: str = "", files: dict | None = None,
               container: bool = True) -> Path:
    """An EPUB whose chapters (heading, body markup) are OEBPS/c{i}.xhtml in spine order, with a contents
    in an NCX (``nav="ncx"``), an EPUB 3 navigation document (``"nav"``) or none; ``files`` adds or replaces
    archive members (a value of None leaves one out)."""
    members: dict[str, bytes | str | None] = {"mimetype": "application/epub+zip"}
    if container:
        members["META-INF/container.xml"] = (
            '<?xml version="1.0"?><container version="1.0" xmlns="urn:oasis:names:tc:opendocument:xmlns:container">'
            '<rootfiles><rootfile full-path="OEBPS/content.opf" media-type="application/oebps-package+xml"/>'
            "</rootfiles></container>")
    items = "".join(f'<item id="c{i}" href="c{i}.xhtml" media-type="application/xhtml+xml"/>'
                    for i in range(len(chapters)))
    spine = "".join(f'<itemref idref="c{i}"/>' for i in range(len(chapters)))
    if nav == "ncx":
        items += '<item id="ncx" href="toc.ncx" media-type="application/x-dtbncx+xml"/>'
        points = "".join(f'<navPoint id="p{i}"><navLabel><text>{heading}</text></navLabel>'
                         f'<content src="c{i}.xhtml"/></navPoint>' for i, (heading, _) in enumerate(chapters))
        members["OEBPS/toc.ncx"] = ('<?xml version="1.0"?><ncx xmlns="http://www.daisy.org/z3986/2005/ncx/" '
                                    f'version="2005-1"><navMap>{points}</navMap></ncx>')
    elif nav == "nav":
        items += '<item id="nav" href="nav.xhtml" media-type="application/xhtml+xml" properties="nav"/>'
        entries = "".join(f'<li><a href="c{i}.xhtml">{heading}</a></li>' for i, (heading, _) in enumerate(chapters))
        members["OEBPS/nav.xhtml"] = xhtml(f'<nav xmlns:epub="http://www.idpf.org/2007/ops" epub:type="toc">'
                                           f"<ol>{entries}</ol></nav>")
    members["OEBPS/content.opf"] = (
        '<?xml version="1.0"?><package xmlns="http://www.idpf.org/2007/opf" version="3.0">'
        '<metadata xmlns:dc="http://purl.org/dc/elements/1.1/">'
        f"<dc:title>{title}</dc:title><dc:creator>{author}</dc:creator><dc:language>en</dc:language></metadata>"
        f'<manifest>{items}{manifest_extra}</manifest><spine toc="ncx">{spine}{spine_extra}</spine></package>')
    for i, (heading, body) in enumerate(chapters):
        members[f"OEBPS/c{i}.xhtml"] = xhtml(f"<h1>{heading}</h1>{body}", heading)
    members.update(files or {})
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in members.items():
            if data is not None:
                archive.writestr(name, data)
    return path


def write_docx(path: Path, body: str, rels: str = "", members: dict | None = None) -> Path:
    """A DOCX whose body is the WordprocessingML ``body`` (the ``w`` and ``r`` prefixes declared), with the
    relationships ``rels`` of the document part, as LibreOffice and Word lay the package out."""
    w = "http://schemas.openxmlformats.org/wordprocessingml/2006/main"
    r = "http://schemas.openxmlformats.org/officeDocument/2006/relationships"
    package = "http://schemas.openxmlformats.org/package/2006/relationships"
    parts = {
        "[Content_Types].xml": '<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types">'
                               '<Default Extension="rels" ContentType="application/vnd.openxmlformats-package.'
                               'relationships+xml"/><Override PartName="/word/document.xml" ContentType="application/'
                               'vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml"/></Types>',
        "_rels/.rels": f'<Relationships xmlns="{package}"><Relationship Id="rId1" Type="http://schemas.openxmlformats'
                       '.org/officeDocument/2006/relationships/officeDocument" Target="word/document.xml"/>'
                       "</Relationships>",
        "word/_rels/document.xml.rels": f'<Relationships xmlns="{package}">{rels}</Relationships>',
        "word/document.xml": f'<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n'
                             f'<w:document xmlns:w="{w}" xmlns:r="{r}"><w:body>{body}</w:body></w:document>',
    }
    parts.update(members or {})
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in parts.items():
            archive.writestr(name, data)
    return path
