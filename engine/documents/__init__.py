"""Import documents for reading aloud: .txt .md .html .xhtml .epub .pdf .docx (Qt-free).

``load_document(path)`` returns a ``Document``: the text to read (paragraphs separated by blank lines,
only the book's words in reading order) and its structure (title, author, chapters and headings as
character spans of the text), or raises ``DocumentError`` with a message fit to show the user (empty,
unreadable, corrupt, protected, too large, or an unsupported format). One module per format; heavy
parsers are imported only when their format is opened. docs/documents.md tells the rules and why.
"""

from __future__ import annotations

import zipfile
from pathlib import Path

from engine.documents.html_reader import html_to_text
from engine.documents.model import (
    MAX_FILE_BYTES,
    MAX_MARKDOWN_BYTES,
    MAX_MARKUP_BYTES,
    Chapter,
    Document,
    DocumentError,
    Heading,
    assemble,
)
from engine.documents.text_reader import decode_text

__all__ = ["Chapter", "Document", "DocumentError", "Heading", "OPEN_FILTER", "SUPPORTED_SUFFIXES",
           "decode_text", "html_to_text", "load_document"]

SUPPORTED_SUFFIXES = (".txt", ".text", ".md", ".markdown", ".html", ".htm", ".xhtml",
                      ".epub", ".pdf", ".docx")
OPEN_FILTER = ("Documents (*.txt *.md *.markdown *.html *.htm *.xhtml *.epub *.pdf *.docx);;"
               "Text (*.txt *.text);;All files (*)")
LARGE_FILE_BYTES = 5 * 1024 * 1024  # above this the editor loads the text piece by piece
FORMAT_NAMES = {".epub": "EPUB", ".pdf": "PDF", ".docx": "DOCX", ".md": "Markdown", ".markdown": "Markdown",
                ".html": "HTML", ".htm": "HTML", ".xhtml": "XHTML"}


def load_document(path: str | Path) -> Document:
    path = Path(path)
    suffix = path.suffix.lower()
    if not path.exists():
        raise DocumentError(f"“{path.name}” does not exist.")
    if path.is_dir():
        raise DocumentError(f"“{path.name}” is a folder, not a document.")
    try:
        size = path.stat().st_size
    except OSError as e:
        raise DocumentError(f"Cannot read “{path.name}”: {e.strerror or e}.") from e
    if size == 0:
        raise DocumentError(f"“{path.name}” is empty.")
    kind = FORMAT_NAMES.get(suffix, "text")
    limit = {".pdf": MAX_FILE_BYTES, ".epub": MAX_FILE_BYTES, ".docx": MAX_FILE_BYTES, ".md": MAX_MARKDOWN_BYTES,
             ".markdown": MAX_MARKDOWN_BYTES}.get(suffix, MAX_MARKUP_BYTES)
    if size > limit:
        raise DocumentError(f"“{path.name}” is {size / 2**20:,.0f} MB, larger than Orator opens as a {kind} file.")
    doc = Document(path=path, text="", title=path.stem)
    try:
        _read(path, suffix, doc)
    except DocumentError:
        raise
    except PermissionError as e:
        raise DocumentError(f"Cannot read “{path.name}”: permission denied.") from e
    except MemoryError as e:
        raise DocumentError(f"“{path.name}” is too large to open.") from e
    except (zipfile.BadZipFile, zipfile.LargeZipFile) as e:
        raise DocumentError(f"“{path.name}” is not a valid {kind} file (the archive is damaged: {e}).") from e
    except OSError as e:
        raise DocumentError(f"Cannot read “{path.name}”: {e.strerror or e}.") from e
    except Exception as e:  # the parsers raise many kinds of errors on corrupt input
        raise DocumentError(f"“{path.name}” is not a valid {kind} file ({type(e).__name__}: {e}).") from e
    if not doc.text.strip():
        raise DocumentError(f"“{path.name}” contains no readable text.")
    return doc


def _read(path: Path, suffix: str, doc: Document) -> None:
    if suffix in (".epub", ".docx", ".pdf"):
        if suffix == ".pdf":
            from engine.documents.pdf_worker import read_pdf_isolated as reader
        else:
            if not zipfile.is_zipfile(path):
                raise DocumentError(f"“{path.name}” is not a valid {FORMAT_NAMES[suffix]} file "
                                    "(it is not a zip archive).")
            if suffix == ".epub":
                from engine.documents.epub_reader import read_epub as reader
            else:
                from engine.documents.docx_reader import read_docx as reader
        assemble(reader(path, doc), doc)
        return
    data = path.read_bytes()
    if suffix in (".md", ".markdown"):
        from engine.documents.text_reader import read_markdown

        assemble(read_markdown(data, doc), doc)
    elif suffix in (".html", ".htm", ".xhtml"):
        from engine.documents.html_markup import decode_markup
        from engine.documents.html_reader import html_parsed

        text = decode_markup(data, doc.warnings)
        assemble(html_parsed(text, xml_first=suffix == ".xhtml" or text.lstrip().startswith("<?xml"),
                             what=f"“{path.name}”"), doc)
    else:
        from engine.documents.text_reader import chapters_of_plain_text, read_plain_text

        if suffix not in SUPPORTED_SUFFIXES:
            doc.warnings.append(f"Unknown file type “{path.suffix}”; opened as plain text.")
        # only plain text is trimmed: an assembled text has no blank edges, and trimming would shift its spans
        doc.text = read_plain_text(data, doc).strip("\n")
        chapters_of_plain_text(doc)

