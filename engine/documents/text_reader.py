"""Plain text and Markdown (Qt-free).

Plain text is kept as it is (line ends normalized), so a 20 MB file opens in a moment; its chapters are
the labelled headings text_chapters.py finds, as ``orator export`` finds them. Markdown is
rendered by markdown-it-py (CommonMark with tables, footnotes through mdit-py-plugins) and read as HTML, so no
markup symbol is read aloud, its headings become structure, its fences code and its notes footnotes;
a YAML front matter block gives title and author instead of being read.
markdown-it-py replaced Python-Markdown, whose regular expressions are quadratic or worse on hostile input
(80 KB of "[a](" ran past a minute, a deeply nested list of 9 MB took 27 s and 3.4 GB): its block parser
is linear and bounds nesting (``MAX_NESTING``: a file that reaches it is refused rather than cut). Its
inline parser still grows faster than linear on a paragraph of thousands of unclosed links, so a paragraph
longer than ``MAX_INLINE_CHARS`` is read as it is written, its markup symbols with it.
"""

from __future__ import annotations

import re

from engine.documents.html_reader import html_parsed
from engine.documents.model import Document, DocumentError, Parsed
from engine.documents.text_chapters import text_structure

# levels of markdown-it-py's tokens (a list in a list takes two or three); it drops what lies deeper, so it is refused
MAX_NESTING = 100
MAX_INLINE_CHARS = 10_000  # one paragraph's Markdown parsed for emphasis and links; a long real one is 5,000
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


def chapters_of_plain_text(doc: Document) -> None:
    """``doc``'s headings and chapters from its text's chapter labels (text_chapters.py, as ``orator export``)."""
    doc.headings, doc.chapters = text_structure(doc.text)


def read_markdown(data: bytes, doc: Document) -> Parsed:
    from markdown_it import MarkdownIt

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
    from mdit_py_plugins.footnote import footnote_plugin

    renderer = MarkdownIt("commonmark", {"maxNesting": MAX_NESTING}).enable("table").use(footnote_plugin)
    renderer.core.ruler.before("inline", "long_paragraphs_as_written", _long_paragraphs_as_written)
    renderer.core.ruler.before("inline", "nesting_within_bounds", _nesting_within_bounds(doc))
    html = renderer.render(source)
    parsed = html_parsed(f"<html><body>{html}</body></html>", what=f"“{doc.path.name}”")
    parsed.title, parsed.author = title, author  # without front matter the file's name stays the title
    return parsed


def _long_paragraphs_as_written(state) -> None:
    """A core rule before inline parsing: an inline run over ``MAX_INLINE_CHARS`` becomes its literal text."""
    for token in state.tokens:
        if token.type == "inline" and len(token.content) > MAX_INLINE_CHARS:
            token.type = "text"


def _nesting_within_bounds(doc: Document):
    """A core rule: ``DocumentError`` where blocks nest as deep as markdown-it-py reads (it drops what is deeper)."""
    def rule(state) -> None:
        if any(token.level >= MAX_NESTING - 2 for token in state.tokens):
            raise DocumentError(f"“{doc.path.name}” nests lists or quotes deeper than Orator reads.")
    return rule
