"""Every relative link of README.md and docs/*.md names a file that exists, and an anchor that page has.

Links are read with markdown-it-py, so text in code spans and blocks is not taken for a link. Anchors are
GitHub's: a heading's slug, or an explicit ``<a id="...">``.
"""

from __future__ import annotations

import re
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pytest
from markdown_it import MarkdownIt

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
PARSER = MarkdownIt("commonmark").enable("table")


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces as hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def anchors(page: Path) -> set[str]:
    text = page.read_text(encoding="utf-8")
    found = set(re.findall(r'<a\s+(?:id|name)="([^"]+)"', text))
    tokens = PARSER.parse(text)
    seen: dict[str, int] = {}
    for opening, inline in zip(tokens, tokens[1:], strict=False):
        if opening.type == "heading_open":
            base = slug("".join(child.content for child in inline.children or []))
            count = seen.get(base, 0)
            seen[base] = count + 1
            found.add(base if count == 0 else f"{base}-{count}")
    return found


def links(page: Path) -> list[str]:
    """The page's link and image targets, in order."""
    targets = []
    for block in PARSER.parse(page.read_text(encoding="utf-8")):
        for token in block.children or []:
            if token.type == "link_open":
                targets.append(token.attrGet("href"))
            elif token.type == "image":
                targets.append(token.attrGet("src"))
    return targets


def broken(page: Path) -> list[str]:
    """The page's relative links whose file or anchor is missing."""
    found = []
    for target in links(page):
        parts = urlsplit(target)
        if parts.scheme or parts.netloc:
            continue
        path = (page.parent / unquote(parts.path)).resolve() if parts.path else page
        if not path.exists():
            found.append(f"{target}: no such file")
        elif parts.fragment and path.suffix == ".md" and parts.fragment not in anchors(path):
            found.append(f"{target}: no such anchor in {path.name}")
    return found


@pytest.mark.parametrize("page", PAGES, ids=lambda page: page.name)
def test_every_relative_link_resolves(page):
    assert broken(page) == []


def test_a_missing_file_or_anchor_is_found(tmp_path):
    (tmp_path / "there.md").write_text("# A heading: `with code` (and more)\n\n<a id=\"row\"></a>text\n")
    page = tmp_path / "page.md"
    page.write_text("[ok](there.md#a-heading-with-code-and-more) [row](there.md#row) [self](#top)\n\n"
                    "# Top\n\n[gone](absent.md) [nowhere](there.md#nowhere) `[code](absent.md)` "
                    "[web](https://example.com/x.md)\n")
    assert broken(page) == ["absent.md: no such file", "there.md#nowhere: no such anchor in there.md"]


def test_the_readme_is_one_screen_of_pointers():
    assert len((ROOT / "README.md").read_text(encoding="utf-8").encode()) <= 12_000
