"""Writes debian-reference-ch02.docx: the opening sections of Debian Reference chapter 2 as a Word file.

The text, headings and tables are Osamu Aoki's (debian-reference-en 2.100, ch02.en.html); only the container
is made here, with python-docx, because no Debian package ships a small DOCX. Headings use Word's
"Heading N" styles, lists "List Bullet", tables the default grid; nothing is reworded.
Usage: python tests/data/documents/make_docx.py /usr/share/debian-reference/ch02.en.html OUT.docx
"""

from __future__ import annotations

import sys

import docx
from lxml import etree

HEADINGS = {"h1": 1, "h2": 2, "h3": 3}
ADMONITIONS = ("note", "warning", "caution", "tip", "important")  # their "Note" titles stay paragraphs
STOP_AT = "2.2. Basic package management operations"  # the opening sections only, to keep the file small


def text(el) -> str:
    return " ".join("".join(el.itertext()).split())


def main(source: str, out: str) -> None:
    root = etree.parse(source, etree.HTMLParser()).getroot()
    body = root.find("body")
    document = docx.Document()
    document.core_properties.title = "Debian Reference, Chapter 2. Debian package management"
    document.core_properties.author = "Osamu Aoki"
    for el in body.iter("h1", "h2", "h3", "p", "table", "li"):
        if any(a.get("class") in ("navheader", "navfooter", "toc") for a in el.iterancestors()):
            continue
        if el.tag in HEADINGS and any(a.get("class") in ADMONITIONS for a in el.iterancestors()):
            document.add_paragraph(text(el))
        elif el.tag in HEADINGS:
            if text(el) == STOP_AT:
                break
            document.add_heading(text(el), HEADINGS[el.tag])
        elif el.tag == "table":
            rows = el.findall(".//tr")
            table = document.add_table(rows=0, cols=max(len(r.findall("./td") + r.findall("./th")) for r in rows))
            table.style = "Table Grid"
            for r in rows:
                cells = table.add_row().cells
                for cell, source_cell in zip(cells, r.findall("./td") + r.findall("./th"), strict=False):
                    cell.text = text(source_cell)
        elif el.tag == "li":
            document.add_paragraph(text(el), style="List Bullet")
        elif el.tag == "p" and not any(a.tag in ("li", "table") for a in el.iterancestors()) and text(el):
            document.add_paragraph(text(el))
    document.save(out)


if __name__ == "__main__":
    main(*sys.argv[1:3])
