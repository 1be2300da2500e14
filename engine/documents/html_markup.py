"""HTML and XHTML bytes to a parsed tree: the text's encoding found (decode_markup), then lxml's tree, XML first
where asked, within the tag budget (parse_markup). html_reader and epub_reader read the tree. Qt-free.
"""

from __future__ import annotations

import codecs
import re

from engine.documents.model import MAX_MARKUP_TAGS, DocumentError

_CHARSET = re.compile(rb"""<\?xml[^>]*?encoding\s*=\s*["']([\w.:-]+)|<meta[^>]+?charset\s*=\s*["']?([\w.:-]+)""",
                      re.IGNORECASE)
_XML_DECLARATION = re.compile(r"^\s*<\?xml[^>]*\?>", re.IGNORECASE)
_NOT_XML_CHARS = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")


# ---- decoding ---------------------------------------------------------------------------------------
def decode_markup(data: bytes, warnings: list[str] | None = None, what: str = "The file") -> str:
    """Text of an HTML/XHTML file: a BOM wins, then valid UTF-8 (the encoding real files carry even when they
    declare Latin-1), then the declared charset, then Windows-1252 with a warning."""
    for bom, codec in ((codecs.BOM_UTF8, "utf-8-sig"), (codecs.BOM_UTF32_LE, "utf-32"), (codecs.BOM_UTF32_BE, "utf-32"),
                       (codecs.BOM_UTF16_LE, "utf-16"), (codecs.BOM_UTF16_BE, "utf-16")):
        if data.startswith(bom):
            return data.decode(codec, errors="replace")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        pass
    m = _CHARSET.search(data[:4096])
    declared = (m.group(1) or m.group(2)).decode("ascii", "replace") if m else None
    if declared:
        try:
            return data.decode(codecs.lookup(declared).name)
        except (LookupError, UnicodeDecodeError):
            pass
    if warnings is not None:
        warnings.append(f"{what} is not in the encoding it declares; it was read as Windows-1252, "
                        "some characters may be wrong.")
    return data.decode("cp1252", errors="replace")


def parse_markup(text: str, xml_first: bool = False, what: str = "The page"):
    """The root element of an HTML or XHTML text, or ``None`` when it holds no element; ``DocumentError`` (naming
    ``what``) for more than ``MAX_MARKUP_TAGS`` tags."""
    from lxml import etree

    tags = text.count("<")
    if tags > MAX_MARKUP_TAGS:
        raise DocumentError(f"{what} holds {tags:,} tags, more than the {MAX_MARKUP_TAGS:,} Orator reads.")
    text = _NOT_XML_CHARS.sub("", _XML_DECLARATION.sub("", text, count=1))
    if xml_first:
        parser = etree.XMLParser(remove_comments=True, remove_pis=True, resolve_entities=False, no_network=True,
                                 load_dtd=False, huge_tree=False)
        try:
            return etree.fromstring(text, parser)
        except (etree.XMLSyntaxError, ValueError):
            pass  # not well-formed (an HTML entity, an unclosed tag): the HTML parser takes what is there
    # huge_tree lifts libxml2's 10 MB bound on one text node (a book in one <pre>) and its 256-deep nesting
    # bound (2048 then); HTML has no entity expansion to guard against
    parser = etree.HTMLParser(remove_comments=True, remove_pis=True, no_network=True, huge_tree=True)
    try:
        return etree.fromstring(text, parser)
    except (etree.XMLSyntaxError, ValueError):
        return None
