"""EPUB 2 and 3: the spine's documents in reading order, chapters from the navigation (Qt-free).

The archive is read with zipfile and lxml, not a whole-book library, so what real books do is
tolerated instead of refusing the book: manifest hrefs with ``#fragment`` parts (one file listed many
times is read once), spine entries naming missing items or files, damaged members, a document in an
odd or wrong encoding, a missing container.xml. Each skipped part is counted in one warning. Chapter
titles come from the EPUB 3 navigation document or else the NCX; the navigation document itself,
non-linear items and the contents lists of spine pages are not read. Content encrypted by DRM is refused.
"""

from __future__ import annotations

import posixpath
import zipfile
import zlib
from pathlib import Path
from urllib.parse import unquote

from engine.documents.html_markup import decode_markup, parse_markup
from engine.documents.html_reader import HtmlConverter, is_internal_link, local_name
from engine.documents.model import MAX_MARKUP_TAGS, MAX_UNPACKED_BYTES, Document, DocumentError, Parsed, TocEntry

HTML_MEDIA_TYPES = ("application/xhtml+xml", "text/html", "application/xml", "text/xml")
NCX_MEDIA_TYPE = "application/x-dtbncx+xml"
# what reading a damaged member raises (CRC, truncation, bad deflate data, unsupported compression)
DAMAGED_MEMBER = (zipfile.BadZipFile, OSError, EOFError, ValueError, RuntimeError, NotImplementedError, zlib.error)
FONT_OBFUSCATION = ("http://www.idpf.org/2008/embedding", "http://ns.adobe.com/pdf/enc#RC")


class _Archive:
    """Members of the zip read under one budget of unpacked bytes, so a zip bomb stops early."""

    def __init__(self, path: Path, doc: Document) -> None:
        self.zip = zipfile.ZipFile(path)
        self.doc = doc
        self.names = {info.filename: info for info in self.zip.infolist()}
        self.folded = {name.lower(): name for name in self.names}
        self.left = MAX_UNPACKED_BYTES

    def find(self, name: str) -> str | None:
        return name if name in self.names else self.folded.get(name.lower())

    def read(self, name: str) -> bytes:
        info = self.names[name]
        if info.file_size > self.left:
            raise DocumentError(f"“{self.doc.path.name}” unpacks to more than {MAX_UNPACKED_BYTES >> 20} MB, "
                                "more than Orator opens.")
        with self.zip.open(info) as member:
            data = member.read(self.left + 1)
        if len(data) > self.left:  # the size in the directory lied
            raise DocumentError(f"“{self.doc.path.name}” unpacks to more than {MAX_UNPACKED_BYTES >> 20} MB, "
                                "more than Orator opens.")
        self.left -= len(data)
        return data


def _xml(data: bytes):
    from lxml import etree

    parser = etree.XMLParser(recover=True, resolve_entities=False, no_network=True, load_dtd=False,
                             remove_comments=True, remove_pis=True)
    root = etree.fromstring(data, parser)
    if root is None:
        raise DocumentError("empty XML")
    return root


def _children(el, name: str) -> list:
    name = name.lower()
    return [c for c in el if local_name(c) == name]


def _descendants(el, name: str) -> list:
    name = name.lower()
    return [c for c in el.iter() if local_name(c) == name]


def _resolve(base_dir: str, href: str) -> tuple[str, str]:
    """The archive path and fragment that ``href`` (relative to ``base_dir``) points at."""
    href = href.strip()
    path, _, fragment = href.partition("#")
    path = unquote(path)
    if not path:
        return "", fragment
    return posixpath.normpath(posixpath.join(base_dir, path)).lstrip("/"), fragment


def read_epub(path: Path, doc: Document) -> Parsed:
    archive = _Archive(path, doc)
    try:
        return _read(archive, path, doc)
    finally:
        archive.zip.close()


def _read(archive: _Archive, path: Path, doc: Document) -> Parsed:
    _refuse_drm(archive)
    opf_name = _package_path(archive)
    if opf_name is None:
        raise DocumentError(f"“{path.name}” is not a valid EPUB file (it has no package document).")
    opf = _xml(archive.read(opf_name))
    opf_dir = posixpath.dirname(opf_name)
    metadata = next(iter(_descendants(opf, "metadata")), None)
    title = author = ""
    if metadata is not None:
        title = next((t.text.strip() for t in _descendants(metadata, "title") if t.text and t.text.strip()), "")
        author = ", ".join(c.text.strip() for c in _descendants(metadata, "creator") if c.text and c.text.strip())
    manifest: dict[str, tuple[str, str, str]] = {}  # id -> (archive path, media type, properties)
    for item in _descendants(opf, "item"):
        item_path, _ = _resolve(opf_dir, item.get("href") or "")
        if item.get("id") and item_path:
            manifest[item.get("id")] = (item_path, (item.get("media-type") or "").lower(), item.get("properties") or "")
    spine = next(iter(_descendants(opf, "spine")), None)
    nav_path = next((p for p, _, props in manifest.values() if "nav" in props.split()), None)
    ncx_id = spine.get("toc") if spine is not None else None
    ncx_path = manifest[ncx_id][0] if ncx_id in manifest else \
        next((p for p, media, _ in manifest.values() if media == NCX_MEDIA_TYPE), None)
    order, skipped = _reading_order(spine, manifest, nav_path)

    converter = HtmlConverter()
    tags_left = MAX_MARKUP_TAGS
    read_paths: set[str] = set()
    wrong_encoding: list[str] = []
    for item_path in order:
        name = archive.find(item_path)
        if name is None:
            skipped += 1
            continue
        try:
            data = archive.read(name)
        except DAMAGED_MEMBER:
            skipped += 1  # a damaged member costs that part only
            continue
        text = decode_markup(data, wrong_encoding)
        tags_left -= text.count("<")
        if tags_left < 0:
            raise DocumentError(f"“{path.name}” holds more than {MAX_MARKUP_TAGS:,} tags in its pages, more than "
                                "Orator reads.")
        root = parse_markup(text, xml_first=True, what=f"“{path.name}”")
        if root is None:
            continue
        converter.feed(root, item_path)
        read_paths.add(item_path)
    if skipped:
        doc.warnings.append(f"{skipped} part(s) of the book could not be read (missing or damaged) and were skipped.")
    if wrong_encoding:
        doc.warnings.append(f"{len(wrong_encoding)} chapter(s) not in the encoding they declare were read as "
                            "Windows-1252; some characters may be wrong.")
    toc = _entries_read(_navigation(archive, nav_path, ncx_path), read_paths, opf_dir)
    if len(toc) < 2:
        toc = []  # a contents that names one page of many (or none) says less than the pages' headings
    # an entry whose fragment names no element starts at its file's beginning
    fallback = {e.anchor: e.anchor.partition("#")[0] for e in toc if "#" in e.anchor}
    return Parsed(converter.finish(), title, author, toc or None, fallback)


def _entries_read(entries: list[TocEntry], read_paths: set[str], opf_dir: str) -> list[TocEntry]:
    """The contents entries that point at a page read, their paths resolved relative to the navigation document
    as the EPUB specification says or, where a book got that wrong, relative to its package document or by the
    page's file name when one page read has it."""
    by_name: dict[str, list[str]] = {}
    for read in read_paths:
        by_name.setdefault(posixpath.basename(read), []).append(read)
    out = []
    for entry in entries:
        path, _, fragment = entry.anchor.partition("#")
        if path not in read_paths:
            in_package = posixpath.normpath(posixpath.join(opf_dir, posixpath.basename(path)))
            named = by_name.get(posixpath.basename(path), [])
            path = in_package if in_package in read_paths else named[0] if len(named) == 1 else ""
        if path:
            out.append(TocEntry(entry.title, entry.level, path + (f"#{fragment}" if fragment else "")))
    return out


def _reading_order(spine, manifest: dict[str, tuple[str, str, str]], nav_path: str | None) -> tuple[list[str], int]:
    """The pages to read, each file once, and how many spine entries name no item; images and other
    non-HTML spine items, non-linear items and the navigation document are left out."""
    itemrefs = _descendants(spine, "itemref") if spine is not None else []
    if not itemrefs:  # no spine: the manifest's pages in their listed order
        return list(dict.fromkeys(p for p, media, _ in manifest.values() if _is_page(p, media))), 0
    order: list[str] = []
    missing = 0
    for ref in itemrefs:
        if (ref.get("linear") or "yes").strip().lower() == "no":
            continue
        item = manifest.get(ref.get("idref") or "")
        if item is None:
            missing += 1
        elif _is_page(item[0], item[1]) and item[0] not in order and item[0] != nav_path:
            order.append(item[0])
    return order, missing


def _is_page(path: str, media_type: str) -> bool:
    return media_type in HTML_MEDIA_TYPES or not media_type and path.lower().endswith((".xhtml", ".html", ".htm"))


def _refuse_drm(archive: _Archive) -> None:
    name = archive.find("META-INF/encryption.xml")
    if name is None:
        return
    try:
        root = _xml(archive.read(name))
    except DocumentError:
        return
    for data in _descendants(root, "EncryptedData"):
        method = next(iter(_descendants(data, "EncryptionMethod")), None)
        algorithm = method.get("Algorithm") if method is not None else ""
        uris = [ref.get("URI") or "" for ref in _descendants(data, "CipherReference")]
        if algorithm not in FONT_OBFUSCATION and any(u.lower().endswith((".html", ".xhtml", ".htm")) for u in uris):
            raise DocumentError(f"“{archive.doc.path.name}” is protected by DRM (its text is encrypted); "
                                "Orator can only open books without DRM.")


def _package_path(archive: _Archive) -> str | None:
    name = archive.find("META-INF/container.xml")
    if name is not None:
        try:
            for rootfile in _descendants(_xml(archive.read(name)), "rootfile"):
                found = archive.find((rootfile.get("full-path") or "").lstrip("/"))
                if found:
                    return found
        except DocumentError:
            pass
    return next((n for n in archive.names if n.lower().endswith(".opf")), None)


def _navigation(archive: _Archive, nav_path: str | None, ncx_path: str | None) -> list[TocEntry]:
    entries: list[TocEntry] = []
    for source, reader in ((nav_path, _nav_entries), (ncx_path, _ncx_entries)):
        name = archive.find(source) if source else None
        if name is None:
            continue
        try:
            data = archive.read(name)
        except DAMAGED_MEMBER:
            continue
        entries = reader(data, posixpath.dirname(source))
        if entries:
            break
    return entries


def _nav_entries(data: bytes, base_dir: str) -> list[TocEntry]:
    root = parse_markup(decode_markup(data), xml_first=True)
    if root is None:
        return []
    navs = _descendants(root, "nav")
    toc = next((n for n in navs if "toc" in (n.get("{http://www.idpf.org/2007/ops}type") or n.get("epub:type")
                                              or n.get("role") or "").replace("doc-toc", "toc").split()), None)
    toc = toc if toc is not None else (navs[0] if navs else None)
    if toc is None:
        return []
    entries: list[TocEntry] = []
    # depth first without recursion: an entry is taken before the sub-lists of its item
    stack: list = [(sub, 1) for sub in reversed(_children(toc, "ol") + _children(toc, "ul"))]
    while stack:
        top = stack.pop()
        if isinstance(top, TocEntry):
            entries.append(top)
            continue
        lst, level = top
        for li in reversed(_children(lst, "li")):
            stack.extend((sub, level + 1) for sub in reversed(_children(li, "ol") + _children(li, "ul")))
            link = next((c for c in li if local_name(c) in ("a", "span")), None)
            if link is not None and is_internal_link(link):
                path, fragment = _resolve(base_dir, link.get("href"))
                title = " ".join("".join(link.itertext()).split())
                if path and title:
                    stack.append(TocEntry(title, level, path + (f"#{fragment}" if fragment else "")))
    return entries


def _ncx_entries(data: bytes, base_dir: str) -> list[TocEntry]:
    try:
        root = _xml(data)
    except DocumentError:
        return []
    nav_map = next(iter(_descendants(root, "navMap")), None)
    if nav_map is None:
        return []
    entries: list[TocEntry] = []
    stack = [(point, 1) for point in reversed(_children(nav_map, "navPoint"))]
    while stack:
        point, level = stack.pop()
        label = next((t for lab in _children(point, "navLabel") for t in _children(lab, "text")), None)
        content = next(iter(_children(point, "content")), None)
        title = " ".join("".join(label.itertext()).split()) if label is not None else ""
        if content is not None and title:
            path, fragment = _resolve(base_dir, content.get("src") or "")
            if path:
                entries.append(TocEntry(title, level, path + (f"#{fragment}" if fragment else "")))
        stack.extend((child, level + 1) for child in reversed(_children(point, "navPoint")))
    return entries
