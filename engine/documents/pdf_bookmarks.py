"""PDF bookmarks (Qt-free): the outline's entries that point at a page (``read_bookmarks``), and the blocks they
name made headings of their levels (``mark_bookmarks``); other large type takes the level bookmarks give to its
size."""

from __future__ import annotations

import re
from collections import Counter

from engine.documents.model import Block
from engine.documents.pdf_words import HYPHEN_MARK

_NUMBER_PREFIX = re.compile(r"^(?:(?:chapter|part|appendix|section)\s+)?(?:\d{1,4}\s+)*")  # of normalized text


def read_bookmarks(pdf) -> list[tuple[str, int, int]]:
    """(title, level from 1, page index) of the bookmarks that point at a page."""
    out = []
    try:
        for bookmark in pdf.get_toc(max_depth=8):
            dest = bookmark.get_dest()
            page = dest.get_index() if dest is not None else None
            title = " ".join((bookmark.get_title() or "").split())
            if page is not None and title:
                out.append((title, bookmark.level + 1, page))
    except Exception:  # a broken outline costs the chapters, not the book
        return []
    return out


def _normal(text: str) -> str:
    return " ".join(re.sub(r"[^\w\s]", " ", text.replace(HYPHEN_MARK, "").lower()).split())


def _merge_wrapped_title(blocks: list[Block], page_of: list[int], j: int, wanted: str) -> None:
    while j + 1 < len(blocks) and blocks[j + 1].size == blocks[j].size:
        joined = _NUMBER_PREFIX.sub("", _normal(f"{blocks[j].text} {blocks[j + 1].text}"))
        if not wanted.startswith(joined):
            return
        blocks[j].text = f"{blocks[j].text} {blocks[j + 1].text}"
        blocks[j].anchors.extend(blocks[j + 1].anchors)
        del blocks[j + 1], page_of[j + 1]


def mark_bookmarks(blocks: list[Block], bookmarks: list[tuple[str, int, int]]) -> None:
    """Each bookmark names the block on its page (or the next) that begins with its title, which becomes a
    heading of the bookmark's level; a bookmark with no such block points at its page."""
    page_of: list[int] = []
    page = -1
    for block in blocks:
        for anchor in block.anchors:
            if anchor.startswith("page"):
                page = int(anchor[4:])
        page_of.append(page)
    start = 0
    matched: set[int] = set()
    size_levels: Counter = Counter()
    for i, (title, level, page_index) in enumerate(bookmarks):
        wanted = _normal(title)
        if not wanted:
            continue
        for j in range(start, len(blocks)):
            if page_of[j] < page_index:
                continue
            if page_of[j] > page_index + 1:
                break
            text = _normal(blocks[j].text)
            core = _NUMBER_PREFIX.sub("", text)
            if blocks[j].level and len(core) >= len(wanted) // 2 and wanted.startswith(core):
                _merge_wrapped_title(blocks, page_of, j, wanted)  # a title the layout broke into blocks
                text = _normal(blocks[j].text)
            if text.startswith(wanted) or re.match(rf"^(?:\w{{1,12}} ){{0,4}}{re.escape(wanted)}\b", text):
                if len(text) <= len(wanted) + 40:
                    blocks[j].level = min(level, 6)
                    matched.add(j)
                    size_levels[(blocks[j].size, blocks[j].level)] += 1
                blocks[j].anchors.append(f"bookmark{i}")
                start = j
                break
    # other large type takes the level bookmarks give to its size, or none (a "Note", a table title)
    level_of_size: dict[float, int] = {}
    for (size, level), _ in size_levels.most_common():
        level_of_size.setdefault(size, level)
    for j, block in enumerate(blocks):
        if j not in matched and block.level:
            block.level = level_of_size.get(block.size, 0)
