"""Import documents as plain text for reading aloud: .txt .md .html .epub .pdf .docx (Qt-free).

``load_document(path)`` returns a ``Document`` whose paragraphs are separated by blank lines, or
raises ``DocumentError`` with a message fit to show the user (empty, unreadable, corrupt, or an
unsupported format). Heavy parsers are imported only when their format is opened.
"""

from __future__ import annotations

import re
import zipfile
from dataclasses import dataclass, field
from pathlib import Path

SUPPORTED_SUFFIXES = (".txt", ".text", ".md", ".markdown", ".html", ".htm", ".xhtml",
                      ".epub", ".pdf", ".docx")
OPEN_FILTER = ("Documents (*.txt *.md *.markdown *.html *.htm *.xhtml *.epub *.pdf *.docx);;"
               "Text (*.txt *.text);;All files (*)")
BLOCK_TAGS = ("p", "div", "section", "article", "li", "tr", "blockquote", "pre",
              "h1", "h2", "h3", "h4", "h5", "h6", "title", "dt", "dd", "figcaption")
LARGE_FILE_BYTES = 5 * 1024 * 1024  # above this the editor loads the text piece by piece


class DocumentError(Exception):
    """A document cannot be opened; the message explains why in words a user understands."""


@dataclass
class Document:
    path: Path
    text: str
    title: str
    warnings: list[str] = field(default_factory=list)


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
    reader = _READERS.get(suffix, _read_plain_text)
    doc = Document(path=path, text="", title=path.stem)
    try:
        doc.text = reader(path, doc)
    except DocumentError:
        raise
    except PermissionError as e:
        raise DocumentError(f"Cannot read “{path.name}”: permission denied.") from e
    except OSError as e:
        raise DocumentError(f"Cannot read “{path.name}”: {e.strerror or e}.") from e
    except Exception as e:  # the parsers raise many kinds of errors on corrupt input
        kind = suffix.lstrip(".").upper() or "text"
        raise DocumentError(f"“{path.name}” is not a valid {kind} file ({type(e).__name__}: {e}).") from e
    doc.text = doc.text.strip("\n")
    if not doc.text.strip():
        raise DocumentError(f"“{path.name}” contains no readable text.")
    return doc


# ---- plain text -------------------------------------------------------------------------------------
def decode_text(data: bytes, doc: Document) -> str:
    """UTF-8 (with or without BOM, or UTF-16 with BOM); anything else is read as Windows-1252."""
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        return data.decode("utf-16")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError:
        if b"\x00" in data[:4096]:
            raise DocumentError(f"“{doc.path.name}” looks like a binary file, not text.") from None
        doc.warnings.append("The file is not UTF-8; it was read as Windows-1252, "
                            "some characters may be wrong.")
        return data.decode("cp1252", errors="replace")


def _read_plain_text(path: Path, doc: Document) -> str:
    if path.suffix.lower() not in SUPPORTED_SUFFIXES:
        doc.warnings.append(f"Unknown file type “{path.suffix}”; opened as plain text.")
    return decode_text(path.read_bytes(), doc).replace("\r\n", "\n").replace("\r", "\n")


# ---- HTML and Markdown ------------------------------------------------------------------------------
def html_to_text(html: str) -> str:
    """Visible text of an HTML page, one paragraph per block element, blank lines between them."""
    from bs4 import BeautifulSoup, NavigableString

    soup = BeautifulSoup(html, "html.parser")
    for tag in soup(["script", "style", "head", "noscript", "svg"]):
        tag.decompose()
    for node in soup.find_all(string=True):
        if node.parent is not None and node.parent.name != "pre":
            node.replace_with(NavigableString(re.sub(r"\s+", " ", str(node))))
    for br in soup.find_all("br"):
        br.replace_with("\n")
    for tag in soup.find_all(BLOCK_TAGS):
        tag.insert_before("\n\n")
        tag.insert_after("\n\n")
    text = soup.get_text()
    text = re.sub(r"[ \t]*\n[ \t]*", "\n", text)
    return re.sub(r"\n{3,}", "\n\n", text).strip()


def _read_html(path: Path, doc: Document) -> str:
    return html_to_text(decode_text(path.read_bytes(), doc))


def _read_markdown(path: Path, doc: Document) -> str:
    import markdown

    return html_to_text(markdown.markdown(decode_text(path.read_bytes(), doc)))


# ---- EPUB, PDF, DOCX --------------------------------------------------------------------------------
def _read_epub(path: Path, doc: Document) -> str:
    import ebooklib
    from ebooklib import epub

    if not zipfile.is_zipfile(path):
        raise DocumentError(f"“{path.name}” is not a valid EPUB file (it is not a zip archive).")
    book = epub.read_epub(str(path), options={"ignore_ncx": True})
    titles = book.get_metadata("DC", "title")
    if titles and titles[0][0]:
        doc.title = titles[0][0]
    chapters = []
    for item_id, _linear in book.spine:
        item = book.get_item_with_id(item_id)
        if item is not None and item.get_type() == ebooklib.ITEM_DOCUMENT:
            chapter = html_to_text(item.get_content().decode("utf-8", errors="replace"))
            if chapter:
                chapters.append(chapter)
    return "\n\n".join(chapters)


def _read_pdf(path: Path, doc: Document) -> str:
    from pypdf import PdfReader

    reader = PdfReader(str(path))
    if reader.is_encrypted and not reader.decrypt(""):
        raise DocumentError(f"“{path.name}” is password protected.")
    if reader.metadata and reader.metadata.title:
        doc.title = str(reader.metadata.title)
    pages = []
    for page in reader.pages:
        page_text = page.extract_text() or ""
        # join hard-wrapped lines of one paragraph; keep blank lines as paragraph breaks
        paragraphs = [" ".join(line.strip() for line in block.splitlines() if line.strip())
                      for block in re.split(r"\n\s*\n", page_text)]
        pages.extend(p for p in paragraphs if p)
    if not pages:
        doc.warnings.append("No text found in the PDF (scanned pages need OCR, which Orator does not do).")
    return "\n\n".join(pages)


def _read_docx(path: Path, doc: Document) -> str:
    import docx

    if not zipfile.is_zipfile(path):
        raise DocumentError(f"“{path.name}” is not a valid DOCX file (it is not a zip archive).")
    document = docx.Document(str(path))
    if document.core_properties.title:
        doc.title = document.core_properties.title
    return "\n\n".join(p.text.strip() for p in document.paragraphs if p.text.strip())


_READERS = {
    ".txt": _read_plain_text, ".text": _read_plain_text,
    ".md": _read_markdown, ".markdown": _read_markdown,
    ".html": _read_html, ".htm": _read_html, ".xhtml": _read_html,
    ".epub": _read_epub, ".pdf": _read_pdf, ".docx": _read_docx,
}
