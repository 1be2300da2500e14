"""DOCX: paragraphs and tables in document order, headings as structure (Qt-free).

The body is walked element by element (python-docx's ``document.paragraphs`` leaves tables out):
a paragraph styled Title or Heading N, or given an outline level, is a heading; a table row becomes
one paragraph with its cells separated by commas (a merged cell counted once, a cell's own paragraphs
and nested tables flattened); content controls are entered, except a generated table of contents,
whose entries (and paragraphs styled "TOC N") are not read. The archive's unpacked size is bounded.
"""

from __future__ import annotations

import re
import zipfile
from pathlib import Path

from engine.documents.model import MAX_UNPACKED_BYTES, Block, Document, DocumentError, Parsed

W = "{http://schemas.openxmlformats.org/wordprocessingml/2006/main}"
_HEADING_STYLE = re.compile(r"^(?:heading|überschrift|titre|titolo|título|kop)\s*(\d)$", re.IGNORECASE)


def read_docx(path: Path, doc: Document) -> Parsed:
    import docx
    from docx.table import Table
    from docx.text.paragraph import Paragraph

    with zipfile.ZipFile(path) as archive:
        if sum(info.file_size for info in archive.infolist()) > MAX_UNPACKED_BYTES:
            raise DocumentError(f"“{path.name}” unpacks to more than {MAX_UNPACKED_BYTES >> 20} MB, "
                                "more than Orator opens.")
        if "word/document.xml" not in archive.namelist():
            raise DocumentError(f"“{path.name}” is not a valid DOCX file (it has no document part).")
    document = docx.Document(str(path))
    style_names = _style_names(document)
    blocks: list[Block] = []
    stack = list(reversed(list(document.element.body.iterchildren())))
    while stack:
        el = stack.pop()
        tag = el.tag
        if tag == f"{W}p":
            paragraph = Paragraph(el, document)
            style = _style_name(el, style_names)
            if style.lower().startswith("toc"):
                continue  # an entry of a generated table of contents
            text = paragraph.text
            if text.strip():
                blocks.append(Block(text, _heading_level(paragraph, style)))
        elif tag == f"{W}tbl":
            blocks.extend(_table_rows(Table(el, document)))
        elif tag == f"{W}sdt":
            if _is_toc(el):
                continue
            content = el.find(f"{W}sdtContent")
            if content is not None:
                stack.extend(reversed(list(content.iterchildren())))
    return Parsed(blocks, *_title_and_author(document))


def _title_and_author(document) -> tuple[str, str]:
    """From the core properties part; without one python-docx would make up "Word Document"."""
    from docx.opc.constants import RELATIONSHIP_TYPE

    try:
        document.part.package.part_related_by(RELATIONSHIP_TYPE.CORE_PROPERTIES)
    except KeyError:
        return "", ""
    props = document.core_properties
    return props.title or "", props.author or ""


def _style_names(document) -> dict[str, str]:
    """Style id -> name from the file's styles part; {} without one. ``paragraph.style`` would load
    python-docx's template then, through a path next to its modules that a PyInstaller bundle lacks."""
    from docx.opc.constants import RELATIONSHIP_TYPE

    try:
        styles = document.part.part_related_by(RELATIONSHIP_TYPE.STYLES).element
    except KeyError:
        return {}
    return {style.styleId: style.name_val or "" for style in styles.style_lst if style.styleId}


def _style_name(p, names: dict[str, str]) -> str:
    style_id = p.pPr.pStyle.val if p.pPr is not None and p.pPr.pStyle is not None else None
    return names.get(style_id, style_id or "") if style_id else "Normal"


def _heading_level(paragraph, style: str) -> int:
    if style.lower() == "title":
        return 1
    m = _HEADING_STYLE.match(style)
    if m:
        return min(int(m.group(1)), 6) or 1
    level = paragraph._p.find(f"{W}pPr/{W}outlineLvl")
    if level is not None:
        value = level.get(f"{W}val") or ""
        if value.isdigit() and int(value) < 9:
            return min(int(value) + 1, 6)
    return 0


def _is_toc(sdt) -> bool:
    gallery = sdt.find(f"{W}sdtPr/{W}docPartObj/{W}docPartGallery")
    return gallery is not None and "table of contents" in (gallery.get(f"{W}val") or "").lower()


def _table_rows(table) -> list[Block]:
    """One block a row: the row's distinct cells (a merged cell appears once), empty cells left out."""
    blocks = []
    for row in table.rows:
        cells, seen = [], set()
        for cell in row.cells:
            if id(cell._tc) in seen:
                continue
            seen.add(id(cell._tc))
            text = " ".join(" ".join(t.split()) for t in _cell_texts(cell) if t.strip())
            if text:
                cells.append(text)
        if cells:
            blocks.append(Block(("; " if any("," in c for c in cells) else ", ").join(cells)))
    return blocks


def _cell_texts(cell) -> list[str]:
    texts = [p.text for p in cell.paragraphs]
    for nested in cell.tables:
        texts.extend(block.text for block in _table_rows(nested))
    return texts
