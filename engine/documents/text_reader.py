"""Plain text and Markdown (Qt-free).

Plain text is kept as it is (line ends normalized), so a 20 MB file opens in a moment. Markdown is
rendered by Python-Markdown (tables and fenced code included) and read as HTML, so no markup symbol
is read aloud and its headings become structure; a YAML front matter block gives title and author
instead of being read.
"""

from __future__ import annotations

import re

from engine.documents.html_reader import html_parsed
from engine.documents.model import Document, DocumentError, Parsed

_FRONT_MATTER = re.compile(r"\A---[ \t]*\n(.*?)\n(?:---|\.\.\.)[ \t]*(?:\n|\Z)", re.DOTALL)
_FRONT_MATTER_FIELD = re.compile(r"^(title|author)\s*:\s*(.+?)\s*$", re.IGNORECASE | re.MULTILINE)


def decode_text(data: bytes, doc: Document) -> str:
    """UTF-8 (with or without BOM, or UTF-16 with BOM); anything else is read as Windows-1252."""
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        return data.decode("utf-16", errors="replace")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError:
        if b"\x00" in data[:4096]:
            raise DocumentError(f"“{doc.path.name}” looks like a binary file, not text.") from None
        doc.warnings.append("The file is not UTF-8; it was read as Windows-1252, "
                            "some characters may be wrong.")
        return data.decode("cp1252", errors="replace")


def read_plain_text(data: bytes, doc: Document) -> str:
    return decode_text(data, doc).replace("\r\n", "\n").replace("\r", "\n")


def read_markdown(data: bytes, doc: Document) -> Parsed:
    import markdown

    source = read_plain_text(data, doc)
    title = author = ""
    front = _FRONT_MATTER.match(source)
    if front:
        for key, value in _FRONT_MATTER_FIELD.findall(front.group(1)):
            value = value.strip("\"'")
            if key.lower() == "title":
                title = title or value
            else:
                author = author or value
        source = source[front.end():]
    html = markdown.markdown(source, extensions=["tables", "fenced_code", "sane_lists"])
    parsed = html_parsed(f"<html><body>{html}</body></html>")
    parsed.title, parsed.author = title, author  # without front matter the file's name stays the title
    return parsed
