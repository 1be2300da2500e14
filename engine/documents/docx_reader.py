"""DOCX: paragraphs and tables in document order, headings as structure (Qt-free).

The archive's XML is read with lxml, not python-docx: python-docx loads every relationship as a part, so a
LibreOffice file whose internal hyperlinks are relationships to "#anchor" was refused with a KeyError; its
paragraph text leaves out runs inside tracked insertions, smart tags and simple fields; its table cells cost
time quadratic in a row's length; and it holds the whole tree. Here the main part is streamed (iterparse):
each element of the body is read once finished, then freed, under a budget of elements (``MAX_ELEMENTS``);
nesting is bounded (``MAX_DEPTH``), no entity is expanded (an unknown one such as ``&nbsp;`` is read as its
character, or dropped, and the text after it kept), no DTD or network is loaded.

A paragraph styled Title or Heading N, or given an outline level, is a heading; a table row becomes one
paragraph with its cells separated by commas (a merged cell counted once, a cell's paragraphs and nested tables
flattened); content controls are entered, except a generated table of contents, whose entries (and paragraphs
styled "TOC N") are not read; drawings and text boxes are not read.
"""

from __future__ import annotations

import html.entities
import posixpath
import re
import zipfile
from pathlib import Path

from engine.core.text.reading_policy import code_kind
from engine.core.text.spoken_symbols import superscript
from engine.documents import docx_notes
from engine.documents.docx_notes import code_style, list_paragraph, read_notes, table_look_first_row
from engine.documents.model import (
    CODE,
    FOOTNOTE,
    MAX_UNPACKED_BYTES,
    PROSE,
    Block,
    Document,
    DocumentError,
    Parsed,
)
from engine.documents.tables import row_blocks

W = "{http://schemas.openxmlformats.org/wordprocessingml/2006/main}"
MC = "{http://schemas.openxmlformats.org/markup-compatibility/2006}"
REL = "{http://schemas.openxmlformats.org/package/2006/relationships}"
OFFICE_DOCUMENT = "http://schemas.openxmlformats.org/officeDocument/2006/relationships/officeDocument"
STYLES = "http://schemas.openxmlformats.org/officeDocument/2006/relationships/styles"
FOOTNOTES = "http://schemas.openxmlformats.org/officeDocument/2006/relationships/footnotes"
ENDNOTES = "http://schemas.openxmlformats.org/officeDocument/2006/relationships/endnotes"
CORE_PROPERTIES = "http://schemas.openxmlformats.org/package/2006/relationships/metadata/core-properties"
MAX_PART_BYTES = 256 << 20  # one XML part, read streaming
MAX_DEPTH = 200  # nesting of elements (libxml2 keeps 256 levels, and drops what is deeper while recovering)
MAX_ELEMENTS = 2_000_000  # elements of one body element (a table) held at once: about 0.5 GB of tree
_HEADING_STYLE = re.compile(r"^(?:heading|überschrift|titre|titolo|título|kop)\s*(\d)$", re.IGNORECASE)
# what a paragraph's text does not include: drawings and text boxes (their paragraphs are not the flow's),
# field instructions, deleted text, footnote references
_NOT_TEXT = frozenset(f"{W}{n}" for n in ("drawing", "pict", "object", "instrText", "delText", "delInstrText",
                                          "footnoteReference", "endnoteReference", "commentReference")) | {
    f"{MC}AlternateContent"}
_CHARACTERS = {f"{W}tab": " ", f"{W}br": "\n", f"{W}cr": "\n", f"{W}noBreakHyphen": "-", f"{W}softHyphen": ""}


def read_docx(path: Path, doc: Document) -> Parsed:
    with zipfile.ZipFile(path) as archive:
        if sum(info.file_size for info in archive.infolist()) > MAX_UNPACKED_BYTES:
            raise DocumentError(f"“{path.name}” unpacks to more than {MAX_UNPACKED_BYTES >> 20} MB, "
                                "more than Orator opens.")
        names = set(archive.namelist())
        main = _related(archive, names, "", OFFICE_DOCUMENT) or "word/document.xml"
        if main not in names:
            raise DocumentError(f"“{path.name}” is not a valid DOCX file (it has no document part).")
        styles = _style_names(archive, names, _related(archive, names, main, STYLES))
        title, author = _core_properties(archive, names, _related(archive, names, "", CORE_PROPERTIES))
        notes = {}
        for kind, relation in (("footnote", FOOTNOTES), ("endnote", ENDNOTES)):
            part = _related(archive, names, main, relation)
            if part and archive.getinfo(part).file_size > docx_notes.MAX_NOTES_PART_BYTES:
                doc.warnings.append(f"The {kind}s of “{path.name}” take more than "
                                    f"{docx_notes.MAX_NOTES_PART_BYTES >> 20} MB; they were not read.")
            elif part:
                notes.update(read_notes(_xml(archive, part), kind, paragraph_text))
        blocks = _body(archive, main, styles, path.name, notes)
    return Parsed(blocks, title, author)


# ---- the package's small parts -------------------------------------------------------------------------
def _xml(archive: zipfile.ZipFile, name: str):
    from lxml import etree

    if archive.getinfo(name).file_size > MAX_PART_BYTES:
        raise DocumentError(f"a part of the file ({name}) is larger than Orator reads.")
    parser = etree.XMLParser(recover=True, resolve_entities=False, no_network=True, load_dtd=False,
                             remove_comments=True, remove_pis=True)
    with archive.open(name) as member:
        return etree.fromstring(member.read(MAX_PART_BYTES + 1), parser)


def _related(archive: zipfile.ZipFile, names: set[str], part: str, kind: str) -> str | None:
    """The archive path of the part that ``part`` ("" for the package) relates to by ``kind``; a target
    outside the package (a hyperlink, an "#anchor") is never one."""
    folder, base = posixpath.split(part)
    rels = posixpath.join(folder, "_rels", f"{base}.rels")
    if rels not in names:
        return None
    root = _xml(archive, rels)
    for rel in root.iter(f"{REL}Relationship") if root is not None else ():
        if rel.get("Type") == kind and rel.get("TargetMode") != "External":
            target = rel.get("Target") or ""
            path = posixpath.normpath(target.lstrip("/") if target.startswith("/") else posixpath.join(folder, target))
            if path in names:
                return path
    return None


def _style_names(archive: zipfile.ZipFile, names: set[str], part: str | None) -> dict[str, str]:
    """Style id -> style name; {} without a styles part."""
    root = _xml(archive, part) if part else None
    if root is None:
        return {}
    out = {}
    for style in root.iter(f"{W}style"):
        name = style.find(f"{W}name")
        if style.get(f"{W}styleId"):
            out[style.get(f"{W}styleId")] = (name.get(f"{W}val") if name is not None else "") or ""
    return out


def _core_properties(archive: zipfile.ZipFile, names: set[str], part: str | None) -> tuple[str, str]:
    root = _xml(archive, part) if part else None
    if root is None:
        return "", ""
    title = root.find("{http://purl.org/dc/elements/1.1/}title")
    author = root.find("{http://purl.org/dc/elements/1.1/}creator")
    return ("".join(title.itertext()) if title is not None else "",
            "".join(author.itertext()) if author is not None else "")


# ---- the body --------------------------------------------------------------------------------------------
def _body(archive: zipfile.ZipFile, main: str, styles: dict[str, str], file_name: str,
          notes: dict[tuple[str, str], str]) -> list[Block]:
    """The blocks of the body, each of its elements read when it ends and then freed."""
    from lxml import etree

    if archive.getinfo(main).file_size > MAX_PART_BYTES:
        raise DocumentError(f"“{file_name}” holds a document part larger than Orator reads.")
    blocks: list[Block] = []
    held = depth = 0
    with archive.open(main) as member:
        events = etree.iterparse(_Bounded(member, file_name), events=("start", "end"), recover=True,
                                 resolve_entities=False, no_network=True, load_dtd=False, remove_comments=True,
                                 remove_pis=True, huge_tree=False)
        for event, el in events:
            if event == "start":
                held += 1
                depth += 1
                if depth > MAX_DEPTH:  # libxml2 would drop what lies deeper without a word
                    raise DocumentError(f"“{file_name}” nests its elements deeper than Orator reads "
                                        f"({MAX_DEPTH} levels).")
                if held > MAX_ELEMENTS:
                    raise DocumentError(f"“{file_name}” holds more than {MAX_ELEMENTS:,} elements in one table "
                                        "or paragraph, more than Orator reads.")
                continue
            depth -= 1
            parent = el.getparent()
            if parent is None or parent.tag != f"{W}body":
                continue
            _element(el, styles, blocks, notes)
            el.clear()  # read: freed with those before it, so a long book stays small in memory
            while el.getprevious() is not None:
                del parent[0]
            held = 0
    return blocks


class _Bounded:
    """A member's stream that stops at ``MAX_PART_BYTES``, whatever size the archive's directory claims."""

    def __init__(self, member, file_name: str) -> None:
        self.member, self.file_name, self.left = member, file_name, MAX_PART_BYTES

    def read(self, size: int = -1) -> bytes:
        data = self.member.read(min(size, self.left + 1) if size >= 0 else self.left + 1)
        self.left -= len(data)
        if self.left < 0:
            raise DocumentError(f"“{self.file_name}” holds a document part larger than Orator reads.")
        return data


def _element(el, styles: dict[str, str], blocks: list[Block], notes: dict[tuple[str, str], str] | None = None) -> None:
    """Adds the blocks of a body-level element: a paragraph (its notes after it), a table, a content control, or what
    wraps them."""
    stack = [el]
    while stack:
        el = stack.pop()
        if el.tag == f"{W}p":
            style = _style_name(el, styles)
            if style.lower().startswith("toc"):
                continue  # an entry of a generated table of contents
            text = paragraph_text(el)
            if text.strip():
                level = _heading_level(el, style)
                kind = CODE if code_style(style) else list_paragraph(el, style) or PROSE
                if blocks and kind == CODE == blocks[-1].kind and not blocks[-1].level:
                    blocks[-1].text += "\n" + text  # a listing is a paragraph a line
                else:
                    blocks.append(Block(text, level, kind=kind if kind != CODE else code_kind(text)))
            for tag, kind in ((f"{W}footnoteReference", "footnote"), (f"{W}endnoteReference", "endnote")):
                for ref in el.iter(tag):
                    note = (notes or {}).get((kind, ref.get(f"{W}id") or ""))
                    if note:
                        blocks.append(Block(note, kind=FOOTNOTE))
        elif el.tag == f"{W}tbl":
            blocks.extend(_table_rows(el))
        elif el.tag == f"{W}sdt":
            content = el.find(f"{W}sdtContent")
            if content is not None and not _is_toc(el):
                stack.extend(reversed(list(content)))
        elif el.tag not in _NOT_TEXT and el.tag != f"{W}sectPr" and isinstance(el.tag, str):
            stack.extend(reversed(list(el)))  # custom XML, a moved or inserted range: its paragraphs are read


def paragraph_text(p) -> str:
    """The text of a paragraph: its runs wherever they sit (hyperlinks, insertions, fields, smart tags), tabs as
    spaces, line breaks as line ends, entities as their characters."""
    parts: list[str] = []
    stack = list(reversed(list(p)))
    while stack:
        el = stack.pop()
        tag = el.tag
        if tag == f"{W}t":
            parts.append(_text_of(el))
        elif tag == f"{W}r" and _raised(el):
            text = "".join(_text_of(t) for t in el.iter(f"{W}t"))
            parts.append(superscript(text) if text.isdigit() and len(text) <= 6 else text)
        elif tag in _CHARACTERS:
            parts.append(" " if tag == f"{W}br" and el.get(f"{W}type") == "page" else _CHARACTERS[tag])
        elif tag not in _NOT_TEXT and isinstance(tag, str):
            stack.extend(reversed(list(el)))
    return "".join(parts)


def _raised(run) -> bool:
    align = run.find(f"{W}rPr/{W}vertAlign")
    return align is not None and align.get(f"{W}val") == "superscript"


def _text_of(t) -> str:
    """A ``w:t``'s text with the entity references a recovering parser kept (``&nbsp;``) as their characters."""
    parts = [t.text or ""]
    for child in t:
        if not isinstance(child.tag, str):  # an entity reference
            name = (child.text or "").strip("&;")
            parts.append(html.entities.html5.get(f"{name};", ""))
        parts.append(child.tail or "")
    return "".join(parts)


def _style_name(p, names: dict[str, str]) -> str:
    style = p.find(f"{W}pPr/{W}pStyle")
    style_id = style.get(f"{W}val") if style is not None else None
    return names.get(style_id, style_id or "") if style_id else "Normal"


def _heading_level(p, style: str) -> int:
    if style.lower() == "title":
        return 1
    m = _HEADING_STYLE.match(style)
    if m:
        return min(int(m.group(1)), 6) or 1
    level = p.find(f"{W}pPr/{W}outlineLvl")
    if level is not None:
        value = level.get(f"{W}val") or ""
        if value.isdigit() and int(value) < 9:
            return min(int(value) + 1, 6)
    return 0


def _is_toc(sdt) -> bool:
    gallery = sdt.find(f"{W}sdtPr/{W}docPartObj/{W}docPartGallery")
    return gallery is not None and "table of contents" in (gallery.get(f"{W}val") or "").lower()


def _table_rows(table) -> list[Block]:
    """One block a row, each cell labelled with its column's header (tables.py): the rows marked to repeat as
    headers, or else the first row of a table whose style marks a first row when its cells are short labels. A cell
    merged into the one above is left out, as are empty cells."""
    rows: list[tuple[list[tuple[str, int]], bool]] = []
    for row in _children(table, "tr"):
        cells = []
        for cell in _children(row, "tc"):
            merge = cell.find(f"{W}tcPr/{W}vMerge")
            span = cell.find(f"{W}tcPr/{W}gridSpan")
            columns = span.get(f"{W}val") if span is not None else "1"
            columns = min(int(columns), 64) if columns and columns.isdigit() and int(columns) > 0 else 1
            if merge is not None and merge.get(f"{W}val") in (None, "continue"):
                cells.append(("", columns))
                continue
            cells.append((" ".join(" ".join(t.split()) for t in _cell_texts(cell) if t.strip()), columns))
        rows.append((cells, row.find(f"{W}trPr/{W}tblHeader") is not None))
    header = [cells for cells, marked in rows if marked]
    body = [cells for cells, marked in rows if not marked]
    first_row = table_look_first_row(table.find(f"{W}tblPr/{W}tblLook"))
    if not header and first_row and len(body) > 1 and all(len(t) <= 40 and not t.endswith(".") for t, _ in body[0]):
        header, body = [body[0]], body[1:]
    return row_blocks(header, body)


def _children(el, name: str) -> list:
    """``el``'s ``w:name`` children, those inside content controls (``w:sdt``) included."""
    out = []
    for child in el:
        if child.tag == f"{W}{name}":
            out.append(child)
        elif child.tag == f"{W}sdt":
            content = child.find(f"{W}sdtContent")
            if content is not None:
                out.extend(_children(content, name))
    return out


def _cell_texts(cell) -> list[str]:
    blocks: list[Block] = []
    for child in cell:
        if child.tag != f"{W}tcPr":
            _element(child, {}, blocks)
    return [block.text for block in blocks]
