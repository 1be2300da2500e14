"""A document file as a ``Book``: the one reader of export sources, shared by ``orator export`` and the studio's
export queue. Documents other than text and Markdown are read by ``engine.documents``, whose parsers (lxml,
pypdfium2, markdown-it-py) come with the ``gui`` extra; without them text and Markdown are still read here.
"""

from __future__ import annotations

from pathlib import Path

from engine.errors import TextError, UnsupportedError

TEXT_SUFFIXES = (".txt", ".text")
MARKDOWN_SUFFIXES = (".md", ".markdown")
DOCUMENT_SUFFIXES = (".epub", ".html", ".htm", ".xhtml", ".pdf", ".docx")
MAX_TEXT_BYTES = 256 << 20  # a text file read whole; far above any book


def load_book(path: Path):
    """The input as a ``Book``; ``TextError`` or ``UnsupportedError`` with a one-line reason."""
    from engine.production.book_structure import book_from_document, book_from_text, decode_text, epub_cover

    if not path.exists():
        raise TextError(f"{path} does not exist")
    if path.is_dir():
        raise TextError(f"{path} is a folder, not a document")
    suffix = path.suffix.lower()
    if suffix in DOCUMENT_SUFFIXES or (suffix in MARKDOWN_SUFFIXES and _structured_documents()):
        document = _read_document(path, suffix)
        if document is not None:
            book = book_from_document(document)
            if suffix == ".epub" and book.cover is None:
                book.cover = epub_cover(path)
            return book
    try:
        size = path.stat().st_size
        if size > MAX_TEXT_BYTES:
            raise TextError(f"{path.name} is {size >> 20} MiB; text files of at most {MAX_TEXT_BYTES >> 20} MiB "
                            "are read")
        data = path.read_bytes()
    except OSError as e:
        raise TextError(f"cannot read {path}: {e.strerror or e}") from None
    if not data.strip():
        raise TextError(f"{path.name} is empty: there is no text to speak")
    warnings: list[str] = []
    if suffix not in TEXT_SUFFIXES + MARKDOWN_SUFFIXES:
        warnings.append(f"unknown file type {suffix or '(none)'}: read as plain text")
    book = book_from_text(decode_text(data, path.name, warnings), path.stem, markdown=suffix in MARKDOWN_SUFFIXES)
    book.warnings.extend(warnings)
    return book


def _read_document(path: Path, suffix: str):
    """The ``Document`` of ``path``; None for Markdown when the readers' parsers are missing (it is read here)."""
    try:
        from engine.documents import DocumentError, load_document
    except ImportError as e:
        missing = e
    else:
        try:
            return load_document(path)
        except DocumentError as e:
            raise TextError(str(e)) from None
        except ImportError as e:
            missing = e
    if suffix in MARKDOWN_SUFFIXES:
        return None
    raise UnsupportedError(f"reading {path.name} needs the document readers' parsers, which need "
                           f"{missing.name or missing}: pip install 'orator[gui]'")


def _structured_documents() -> bool:
    """Whether ``engine.documents`` gives chapters (its structured readers); else Markdown is read here."""
    try:
        from engine.documents import Document
    except ImportError:
        return False
    return "chapters" in getattr(Document, "__dataclass_fields__", {})
