"""HTML and XHTML to blocks: the visible words only, one block per paragraph, headings kept (Qt-free).

Parsing is lxml's (libxml2), in html_markup: XHTML is tried as XML first (an HTML parser would swallow the rest
of a page after a self-closed ``<title/>``), anything else through the forgiving HTML parser. Doctype, XML
declaration, comments and processing instructions never reach the text; scripts, styles, forms,
images, navigation (``nav``, contents lists, "Prev | Next" bars, permalink signs) and footnote markers
are skipped. A table row becomes one paragraph with its cells separated by commas, unless the table
only lays out blocks. The walk is iterative, so deep nesting costs no recursion (libxml2 keeps 2048 levels).
"""

from __future__ import annotations

import re
from itertools import islice

from engine.core.text.reading_policy import code_kind
from engine.documents.html_markup import parse_markup
from engine.documents.html_structure import (
    block_kind,
    gather_texinfo_notes,
    note_reference,
    notes_by_id,
    one_line,
    raised_digits,
    table_rows,
)
from engine.documents.model import CODE, FOOTNOTE, FORMULA, PROSE, Block, DocumentError, Parsed

SKIPPED_TAGS = frozenset({
    "script", "style", "head", "noscript", "svg", "math", "template", "iframe", "object", "embed", "canvas",
    "audio", "video", "button", "select", "option", "textarea", "input", "nav", "map", "img", "picture",
    "source", "track", "frame", "frameset", "applet", "datalist", "output", "progress", "meter", "dialog",
    "title",  # in the body too: browsers do not show it (the document's title is read apart)
})
BLOCK_TAGS = frozenset({
    "address", "article", "aside", "blockquote", "body", "caption", "center", "dd", "details", "dir", "div",
    "dl", "dt", "fieldset", "figcaption", "figure", "footer", "form", "header", "hgroup", "hr", "html",
    "legend", "li", "listing", "main", "menu", "ol", "p", "pre", "section", "summary", "table", "tbody",
    "thead", "tfoot", "tr", "td", "th", "ul", "xmp", "plaintext", "h1", "h2", "h3", "h4", "h5", "h6",
})
HEADING_LEVELS = {f"h{n}": n for n in range(1, 7)}
# Classes that generators (DocBook, Sphinx, Texinfo, sisu, wikis) give to navigation and contents lists.
NAVIGATION_CLASSES = frozenset({
    "navheader", "navfooter", "toc", "list-of-tables", "list-of-figures", "list-of-examples",
    "list-of-equations", "list-of-procedures", "sphinxsidebar", "sphinxsidebarwrapper", "related", "breadcrumb",
    "breadcrumbs", "headerlink", "nav-panel", "contents", "shortcontents", "short-toc",
    "mini-toc", "navigation", "skip-link", "mw-editsection", "printfooter", "catlinks", "footnote-reference",
    "footnote-ref", "footnote-backref", "footnote-back", "footnotes-heading", "noprint", "docnav", "footer", "header",
})
NAVIGATION_IDS = frozenset({"banner", "toc", "navigation", "sidebar", "breadcrumbs"})
NAVIGATION_ROLES = frozenset({"navigation", "doc-toc", "doc-pagelist", "doc-noteref", "doc-backlink", "banner",
                              "contentinfo"})
NAVIGATION_EPUB_TYPES = frozenset({"toc", "landmarks", "page-list", "noteref", "backlink", "lot", "loi"})
PERMALINK_SIGNS = frozenset({"¶", "§", "#", "🔗", "⚓", "†"})
LIST_CONTAINERS = frozenset({"ul", "ol", "dl", "table", "menu", "dir"})
LINK_PAGE_CONTAINERS = frozenset({"body", "div", "section", "article", "aside"})
_TESTED_WITHOUT_ATTRIBUTES = LIST_CONTAINERS | LINK_PAGE_CONTAINERS | {"a", "sup"}
_FOOTNOTE_MARK = re.compile(r"^[\[(]?(?:\d{1,3}|[*†‡§a-z])[\])]?$")
_EXTERNAL_LINK = re.compile(r"^[a-z][a-z0-9+.-]*:", re.IGNORECASE)
_SPACE = re.compile(r"\s+")
_NOT_ALNUM = re.compile(r"[\W_]+")
_HIDDEN_STYLE = re.compile(r"display\s*:\s*none")
_LOCAL_NAMES: dict[str, str] = {}
EPUB_NS = "{http://www.idpf.org/2007/ops}"


# ---- element tests ----------------------------------------------------------------------------------
def local_name(el) -> str | None:
    """``p`` for ``<p>`` and ``<{http://www.w3.org/1999/xhtml}p>``; ``None`` for comments and the like."""
    tag = el.tag
    if not isinstance(tag, str):
        return None
    name = _LOCAL_NAMES.get(tag)
    if name is None:
        name = tag.rsplit("}", 1)[-1].rsplit(":", 1)[-1].lower()
        if len(_LOCAL_NAMES) < 4096:  # a page of invented tag names does not grow the cache for good
            _LOCAL_NAMES[tag] = name
    return name


def _attr(el, name: str) -> str:
    value = el.get(name)
    if value is None and name == "epub:type":
        value = el.get(EPUB_NS + "type")
    return value or ""


def _text_content(el) -> str:
    return "".join(t for t in el.itertext() if isinstance(t, str))


def _short_text(el, limit: int = 8) -> str:
    """``el``'s text stripped, or "" when it holds more than four elements or ``limit`` characters: a mark or a
    sign is that small, and looking no further keeps nested links and superscripts linear."""
    if sum(1 for _ in islice(el.iter(), 5)) > 4:
        return ""
    text = _text_content(el).strip()
    return text if len(text) <= limit else ""


def is_internal_link(el) -> bool:
    href = _attr(el, "href").strip()
    return bool(href) and not _EXTERNAL_LINK.match(href)


def link_stats(root) -> dict:
    """For every element: (letters and digits in it, those inside internal links, internal links), in one
    pass from the leaves up, so testing each container for being a list of links costs nothing."""
    stats: dict = {}
    for el in reversed(list(root.iter())):
        total = len(_NOT_ALNUM.sub("", el.text)) if isinstance(el.tag, str) and el.text else 0
        linked = links = 0
        for child in el:
            child_total, child_linked, child_links = stats.get(child, (0, 0, 0))
            total += child_total + (len(_NOT_ALNUM.sub("", child.tail)) if child.tail else 0)
            linked += child_linked
            links += child_links
        if local_name(el) == "a" and is_internal_link(el):
            linked, links = total, links + 1
        stats[el] = (total, linked, links)
    return stats


def is_skipped(el, name: str, stats: dict) -> bool:
    """Elements that are not part of what a reader reads: see the module docstring."""
    if name in SKIPPED_TAGS:
        return True
    if not el.attrib and name not in _TESTED_WITHOUT_ATTRIBUTES:
        return False  # most elements: nothing below could apply
    style = el.get("style")
    if el.get("hidden") is not None or el.get("aria-hidden") == "true" or style and _HIDDEN_STYLE.search(style):
        return True
    classes = set((el.get("class") or "").split())
    if classes & NAVIGATION_CLASSES or (el.get("role") or "") in NAVIGATION_ROLES or el.get("id") in NAVIGATION_IDS:
        return True
    if name == "a" and el.get("accesskey"):
        return True  # "Prev", "Next", "Up", "Home": the keyboard links of a navigation bar
    if set(_attr(el, "epub:type").split()) & NAVIGATION_EPUB_TYPES:
        return True
    if name in ("a", "sup"):
        text = _short_text(el)
        link = el if name == "a" else next((a for a in islice(el.iter(), 8) if local_name(a) == "a"), None)
        internal = link is not None and _attr(link, "href").startswith("#")
        if internal and (text in PERMALINK_SIGNS or _FOOTNOTE_MARK.match(text)):
            return True  # a permalink sign or a footnote marker ("[1]") read mid-sentence is noise
    if name in LIST_CONTAINERS or name in LINK_PAGE_CONTAINERS:
        total, linked, count = stats.get(el, (0, 0, 0))
        share = linked / total if total else 0.0
        if name in LIST_CONTAINERS and count >= 3 and share >= 0.85 or count >= 5 and share >= 0.9:
            return True  # a list or a page of links within the document is its contents or a navigation bar
        if name in LIST_CONTAINERS and count >= 5 and total - linked <= 12:
            return True  # links under a short label: an index's "Jump to: A B C ..." letters
    return False


def is_layout_table(table) -> bool:
    """A table whose cells hold paragraphs, lists or tables lays out the page; its cells are read as blocks."""
    for el in table.iter():
        if el is not table and local_name(el) in ("p", "div", "table", "ul", "ol", "dl", "pre", "blockquote",
                                                  "h1", "h2", "h3", "h4", "h5", "h6"):
            return True
    return False


# ---- conversion -------------------------------------------------------------------------------------
class HtmlConverter:
    """Collects blocks from one or more parsed pages (an EPUB's chapters share one converter, so anchors of
    an empty page carry over to the next page's first block)."""

    def __init__(self) -> None:
        self.blocks: list[Block] = []
        self.title = ""
        self.author = ""
        self._parts: list[tuple[str, bool]] = []  # (text, preformatted)
        self._anchors: list[str] = []
        self._level = 0
        self._stats: dict = {}
        self._kinds: list[str] = []  # the kinds the open block elements give, innermost last
        self._notes: dict = {}  # this page's footnotes by id
        self._pending_notes: list[str] = []  # notes referred to in the block being collected
        self._placed_notes: set[str] = set()  # notes read already (after their paragraph, or where they stand)
        self._prefix = ""

    def feed(self, root, prefix: str = "") -> None:
        """Adds the blocks of ``root``; ``prefix`` names the page in anchors (``prefix#id``, and ``prefix``
        itself for the page's start)."""
        if root is None:
            return
        if prefix:
            self._anchors.append(prefix)
        self._read_metadata(root)
        body = next((el for el in root.iter() if local_name(el) == "body"), root)
        gather_texinfo_notes(body)
        self._stats = link_stats(body)
        self._notes, self._pending_notes, self._placed_notes, self._prefix = notes_by_id(body), [], set(), prefix
        self._walk(body, prefix)
        self._flush()

    def _read_metadata(self, root) -> None:
        for el in root.iter():
            name = local_name(el)
            if name == "title" and not self.title:
                self.title = _SPACE.sub(" ", _text_content(el)).strip()
            elif name == "meta" and not self.author and (el.get("name") or "").lower() in (
                    "author", "dc.creator", "dcterms.creator"):
                self.author = (el.get("content") or "").strip()
            elif name == "body":
                break

    def _walk(self, root, prefix: str) -> None:
        pre_depth = 0
        heading_depth = 0
        stack: list[tuple[object, bool]] = [(root, False)]
        while stack:
            el, closing = stack.pop()
            name = local_name(el)
            if closing:
                if name == "pre":
                    pre_depth -= 1
                if name in HEADING_LEVELS:
                    heading_depth -= 1
                    if heading_depth == 0:
                        self._flush()
                        self._level = 0
                elif name in BLOCK_TAGS and not heading_depth:
                    self._flush()
                if name in BLOCK_TAGS and block_kind(el, name) is not None:
                    self._kinds.pop()
                if el is not root and el.tail:
                    self._parts.append((el.tail, pre_depth > 0))
                continue
            if name == "math":
                self._math(el, pre_depth > 0)
                continue
            if name == "sup" and (raised := raised_digits(el)) is not None and not is_skipped(el, name, self._stats):
                self._parts.append((raised + (el.tail or ""), pre_depth > 0))
                continue
            if name is None or is_skipped(el, name, self._stats):
                note = note_reference(el, name, self._notes) if name else None
                if note is not None and note not in self._pending_notes:
                    self._pending_notes.append(note)  # its note is read after this paragraph
                if el is not root and el.tail:
                    self._parts.append((el.tail, pre_depth > 0))
                continue
            if el.get("id") in self._placed_notes and block_kind(el, name) == FOOTNOTE:
                if el.tail:  # read after the paragraph that refers to it
                    self._parts.append((el.tail, pre_depth > 0))
                continue
            if name in HEADING_LEVELS:
                if heading_depth == 0:
                    self._flush()
                    self._level = HEADING_LEVELS[name]
                heading_depth += 1
            elif name in BLOCK_TAGS and not heading_depth:
                self._flush()
            if name in BLOCK_TAGS:
                kind = block_kind(el, name)
                if kind is not None:
                    self._kinds.append(kind)
                    if kind == FOOTNOTE and el.get("id"):
                        self._placed_notes.add(el.get("id"))  # read where it stands: not again after a reference
            for key in ("id", "name") if name == "a" else ("id",):
                if el.get(key):
                    self._anchors.append(f"{prefix}#{el.get(key)}")
            if name == "table" and not is_layout_table(el):
                self._table(el)
                if block_kind(el, name) is not None:
                    self._kinds.pop()
                if el.tail:
                    self._parts.append((el.tail, pre_depth > 0))
                continue
            if name == "br":
                self._parts.append(("\n", True))
            elif name == "pre":
                pre_depth += 1
            if el.text:
                self._parts.append((el.text, pre_depth > 0))
            stack.append((el, True))
            stack.extend((child, False) for child in reversed(el))

    def _table(self, table) -> None:
        """Each row one block, its cells labelled with their headers (html_structure.table_rows)."""
        self._flush()
        self.blocks.extend(table_rows(table, self._inline))

    def _math(self, el, pre: bool) -> None:
        """A formula: its ``alttext`` or its characters; a displayed one is a block of its own, an inline one is
        part of its sentence."""
        text = one_line(el.get("alttext") or _text_content(el))
        if (el.get("display") or "").lower() == "block":
            self._flush()
            if text:
                self.blocks.append(Block(text, kind=FORMULA))
        elif text:
            self._parts.append((f" {text} ", pre))
        if el.tail:
            self._parts.append((el.tail, pre))

    def _inline(self, el) -> str:
        """The visible text of ``el`` on one line (skipped elements left out)."""
        parts: list[str] = []
        stack = [(el, False)]
        while stack:
            node, closing = stack.pop()
            if closing:
                if node is not el and node.tail:
                    parts.append(node.tail)
                continue
            name = local_name(node)
            if name is None or is_skipped(node, name, self._stats):
                if node is not el and node.tail:
                    parts.append(node.tail)
                continue
            if name in BLOCK_TAGS or name == "br":
                parts.append(" ")
            if node.text:
                parts.append(node.text)
            stack.append((node, True))
            stack.extend((child, False) for child in reversed(node))
        return _SPACE.sub(" ", "".join(parts)).strip()

    def _flush(self) -> None:
        if not self._parts:
            return
        text = "".join(part if pre else _SPACE.sub(" ", part) for part, pre in self._parts)
        self._parts = []
        if text.strip():
            kind = self._kinds[-1] if self._kinds else PROSE
            if kind == CODE:
                kind = code_kind(text)
            self.blocks.append(Block(text, self._level, self._anchors, kind))
            self._anchors = []
        self._place_notes()

    def _place_notes(self) -> None:
        """The notes referred to in the block just read, each after it (once)."""
        pending, self._pending_notes = self._pending_notes, []
        for note_id in pending:
            if note_id in self._placed_notes:
                continue
            self._placed_notes.add(note_id)
            text = self._inline(self._notes[note_id])
            if text:
                self.blocks.append(Block(text, 0, [f"{self._prefix}#{note_id}"], FOOTNOTE))

    def finish(self) -> list[Block]:
        self._flush()
        if self._anchors:
            self.blocks.append(Block("", 0, self._anchors))
            self._anchors = []
        return self.blocks


def html_parsed(text: str, xml_first: bool = False, what: str = "The page") -> Parsed:
    converter = HtmlConverter()
    converter.feed(parse_markup(text, xml_first, what))
    return Parsed(converter.finish(), converter.title, converter.author)


def html_to_text(html: str) -> str:
    """Visible text of an HTML page, one paragraph per block, blank lines between them."""
    from engine.documents.model import clean_blocks

    if not isinstance(html, str):
        raise DocumentError("The page is not text.")
    return "\n\n".join(b.text for b in clean_blocks(html_parsed(html).blocks) if b.text)
