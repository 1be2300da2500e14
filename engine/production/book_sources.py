"""A document file as a ``Book``: the one reader of export sources, shared by ``orator export`` and the studio's
export queue. Documents other than text and Markdown are read by ``engine.documents``, whose parsers (lxml,
pypdfium2, markdown-it-py) come with the ``gui`` extra; without them text and Markdown are still read here. An
EPUB whose reader gives no cover gets the one its package names (``epub_cover``).
"""

from __future__ import annotations

import zipfile
from pathlib import Path, PurePosixPath
from xml.etree import ElementTree

from engine.errors import TextError, UnsupportedError

TEXT_SUFFIXES = (".txt", ".text")
MARKDOWN_SUFFIXES = (".md", ".markdown")
DOCUMENT_SUFFIXES = (".epub", ".html", ".htm", ".xhtml", ".pdf", ".docx")
MAX_TEXT_BYTES = 256 << 20  # a text file read whole; far above any book


def load_book(path: Path):
    """The input as a ``Book``; ``TextError`` or ``UnsupportedError`` with a one-line reason."""
    from engine.production.book_structure import book_from_document, book_from_text, decode_text

    if not path.exists():
        raise TextError(f"{path} does not exist")
    if path.is_dir():
        raise TextError(f"{path} is a folder, not a document")
    suffix = path.suffix.lower()
    if suffix in DOCUMENT_SUFFIXES or (suffix in MARKDOWN_SUFFIXES and structured_documents()):
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


def structured_documents() -> bool:
    """Whether ``engine.documents`` gives chapters (its structured readers); else Markdown is read here."""
    try:
        from engine.documents import Document
    except ImportError:
        return False
    return "chapters" in getattr(Document, "__dataclass_fields__", {})


def epub_cover(path: str | Path, max_bytes: int = 16 << 20) -> bytes | None:
    """The cover image an EPUB names (EPUB 3 ``cover-image`` property, or EPUB 2 ``<meta name="cover">``), if it is
    a JPEG or PNG of at most ``max_bytes``; None when there is none or the archive is damaged."""
    try:
        with zipfile.ZipFile(path) as archive:
            container = ElementTree.fromstring(_read_member(archive, "META-INF/container.xml", 1 << 20))
            rootfile = next((e.get("full-path") for e in container.iter() if e.tag.endswith("rootfile")), None)
            if not rootfile:
                return None
            opf = ElementTree.fromstring(_read_member(archive, rootfile, 8 << 20))
            items = {e.get("id"): e for e in opf.iter() if e.tag.endswith("}item") or e.tag == "item"}
            cover = next((e for e in items.values() if "cover-image" in (e.get("properties") or "").split()), None)
            if cover is None:
                meta = next((e for e in opf.iter() if e.tag.endswith("meta") and e.get("name") == "cover"), None)
                cover = items.get(meta.get("content")) if meta is not None else None
            if cover is None or not cover.get("href"):
                return None
            member = str(PurePosixPath(rootfile).parent / cover.get("href")).lstrip("./") or cover.get("href")
            member = member if not member.startswith("/") else member[1:]
            data = _read_member(archive, _normalized(member), max_bytes)
    except (OSError, KeyError, ValueError, zipfile.BadZipFile, ElementTree.ParseError, StopIteration):
        return None
    return data if data.startswith((b"\xff\xd8\xff", b"\x89PNG\r\n\x1a\n")) else None


def _read_member(archive: zipfile.ZipFile, name: str, limit: int) -> bytes:
    info = archive.getinfo(name)
    if info.file_size > limit:
        raise ValueError(f"{name} is larger than {limit} bytes")
    with archive.open(info) as member:
        return member.read(limit + 1)[:limit]


def _normalized(member: str) -> str:
    parts: list[str] = []
    for part in member.split("/"):
        if part == "..":
            if parts:
                parts.pop()
        elif part not in ("", "."):
            parts.append(part)
    return "/".join(parts)
