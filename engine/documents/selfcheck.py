"""A check that every document reader works where the studio is installed (Qt-free).

``check_readers(folder)`` writes one tiny file of each format (txt, md, html, epub, pdf, docx) into
``folder``, opens each with ``load_document`` and returns the formats read, or raises ``DocumentError``
naming the first that failed. ``orator --self-test`` runs it, so a bundle that lost a parser's
library (libpdfium, lxml) fails CI instead of a user's first PDF.
"""

from __future__ import annotations

import zipfile
from pathlib import Path

from engine.documents import DocumentError, load_document

SENTENCE = "Orator reads this sentence."


def _pdf() -> bytes:
    content = f"BT /F1 12 Tf 72 720 Td ({SENTENCE}) Tj ET"
    objects = ["<< /Type /Catalog /Pages 2 0 R >>", "<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
               "<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R "
               "/Resources << /Font << /F1 5 0 R >> >> >>",
               f"<< /Length {len(content)} >>\nstream\n{content}\nendstream",
               "<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>"]
    out, offsets = b"%PDF-1.4\n", []
    for number, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += f"{number} 0 obj\n{body}\nendobj\n".encode()
    xref = len(out)
    out += f"xref\n0 {len(objects) + 1}\n0000000000 65535 f \n".encode()
    out += "".join(f"{o:010d} 00000 n \n" for o in offsets).encode()
    return out + f"trailer\n<< /Size {len(objects) + 1} /Root 1 0 R >>\nstartxref\n{xref}\n%%EOF\n".encode()


def _zip(path: Path, members: dict[str, str]) -> None:
    with zipfile.ZipFile(path, "w") as archive:
        for name, text in members.items():
            archive.writestr(name, text)


def _epub(path: Path) -> None:
    _zip(path, {
        "mimetype": "application/epub+zip",
        "META-INF/container.xml": '<container xmlns="urn:oasis:names:tc:opendocument:xmlns:container"><rootfiles>'
                                  '<rootfile full-path="book.opf"/></rootfiles></container>',
        "book.opf": '<package xmlns="http://www.idpf.org/2007/opf"><manifest><item id="c" href="c.xhtml" '
                    'media-type="application/xhtml+xml"/></manifest><spine><itemref idref="c"/></spine></package>',
        "c.xhtml": f'<html xmlns="http://www.w3.org/1999/xhtml"><body><p>{SENTENCE}</p></body></html>',
    })


def _docx(path: Path) -> None:
    w = "http://schemas.openxmlformats.org/wordprocessingml/2006/main"
    _zip(path, {
        "[Content_Types].xml": '<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types">'
                               '<Default Extension="rels" ContentType="application/vnd.openxmlformats-package.'
                               'relationships+xml"/><Override PartName="/word/document.xml" ContentType="application/'
                               'vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml"/></Types>',
        "_rels/.rels": '<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">'
                       '<Relationship Id="r1" Type="http://schemas.openxmlformats.org/officeDocument/2006/'
                       'relationships/officeDocument" Target="word/document.xml"/></Relationships>',
        "word/document.xml": f'<w:document xmlns:w="{w}"><w:body><w:p><w:r><w:t>{SENTENCE}</w:t></w:r></w:p>'
                             "</w:body></w:document>",
    })


def check_readers(folder: str | Path) -> list[str]:
    folder = Path(folder)
    (folder / "check.txt").write_text(SENTENCE, encoding="utf-8")
    (folder / "check.md").write_text(f"# Check\n\n*{SENTENCE}*", encoding="utf-8")
    (folder / "check.html").write_text(f"<!DOCTYPE html><p>{SENTENCE}</p>", encoding="utf-8")
    (folder / "check.pdf").write_bytes(_pdf())
    _epub(folder / "check.epub")
    _docx(folder / "check.docx")
    read = []
    for suffix in ("txt", "md", "html", "epub", "pdf", "docx"):
        path = folder / f"check.{suffix}"
        try:
            text = load_document(path).text
        except DocumentError as e:
            raise DocumentError(f"the {suffix} reader failed: {e}") from e
        if SENTENCE not in text:
            raise DocumentError(f"the {suffix} reader read {text[:80]!r} instead of {SENTENCE!r}")
        read.append(suffix)
    return read
