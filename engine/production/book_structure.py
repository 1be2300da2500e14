"""What a document says, in the structure it is spoken in: ``Book`` (title, author, cover, chapters of passages),
and the pauses that structure gets (``Pauses``). Qt-free.

``book_from_text`` reads plain text or Markdown; ``book_from_document`` takes a document the studio imported
(``engine.documents``: its chapters and headings as spans of its text). The rules, each so that pauses follow the
text's structure and never its line breaks:

- A paragraph ends at a blank line. Inside one, a line break is a hard wrap and the lines are joined with a space
  (after a hyphen, with none), unless the next line starts a voice mark, or a list item after a line that ends
  a sentence or clause (or another item), or the line ends a sentence and the next line's first word would have
  fit on it: a line broken early on purpose, as in text that marks paragraphs with line breaks alone. The wrap
  width is the document's 95th-percentile line length.
- Chapters: those of ``engine.documents.outline``, the list the studio shows (a document's contents or headings at
  every level, nested; in plain text, its chapter labels: "PART ONE", "Chapter 3", "Prologue"..., volumes, books
  and parts holding the chapters after them), each with its passages up to the next chapter of any level; text
  before the first chapter is a chapter of its own, named after the book. A chapter's heading is spoken as one.
  Markdown read here (without the studio's readers) gets its chapters at the highest ``#`` level that occurs at
  least twice (a lone top heading names the book).
- Voice marks (``engine.core.text.voice_marks``, the studio's rule too): a line that starts with ``[voice: NAME]`` is
spoken
  by the voice NAME (the mark is not spoken), to the next blank line or the next mark; the rest by the default
  voice.
- Markdown markup is not read: emphasis and code marks, link targets, images, HTML tags, rules and fenced code
  are dropped; a YAML front matter gives the title and author.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from engine.core.text.block_kinds import ANNOUNCED
from engine.core.text.voice_marks import parse_mark
from engine.documents.model import Chapter as DocumentChapter
from engine.documents.outline import book_title, outline
from engine.documents.text_chapters import SENTENCE_END as _SENTENCE_END
from engine.documents.text_chapters import paragraphs as _paragraphs
from engine.errors import TextError

_LIST_ITEM = re.compile(r"^\s*(?:[-*+•]|\d{1,3}[.)])\s+\S")
_ATX = re.compile(r"^\s{0,3}(#{1,6})\s+(.*?)\s*#*\s*$")
_SETEXT = re.compile(r"^\s{0,3}(=+|-+)\s*$")
_RULE = re.compile(r"^\s{0,3}(?:(?:\*\s*){3,}|(?:-\s*){3,}|(?:_\s*){3,})$")
_FENCE = re.compile(r"^\s{0,3}(```|~~~)")
_FRONT_MATTER = re.compile(r"\A---[ \t]*\n(.*?)\n(?:---|\.\.\.)[ \t]*(?:\n|\Z)", re.DOTALL)
_FRONT_FIELD = re.compile(r"^(title|author)\s*:\s*(.+?)\s*$", re.IGNORECASE | re.MULTILINE)
_HAS_WORD = re.compile(r"\w")


@dataclass(frozen=True)
class Passage:
    text: str  # what is spoken: one paragraph or heading, its lines joined (a code block's lines kept)
    kind: str = "paragraph"  # "heading", or what the document's reader says it is (engine.core.text.block_kinds)
    voice: str | None = None  # the voice mark's name; None: the default voice
    joined: bool = False  # a later span of the paragraph before it, in another voice (engine.production.casting)


@dataclass(frozen=True)
class Chapter:
    title: str
    passages: tuple[Passage, ...]
    level: int = 1  # 1 for a top chapter or part, 2 for a chapter in a part... (engine.documents.outline)


@dataclass
class Book:
    title: str
    chapters: list[Chapter]
    author: str = ""
    cover: bytes | None = None  # a JPEG or PNG image
    warnings: list[str] = field(default_factory=list)

    @property
    def voices(self) -> set[str]:
        """The voice-mark names the book uses."""
        return {p.voice for c in self.chapters for p in c.passages if p.voice is not None}


@dataclass(frozen=True)
class Pauses:
    """Seconds of silence between sentences of one paragraph, between paragraphs, around a heading, and between
    chapters (in one file; per-chapter files start and end without it)."""

    sentence: float = 0.25
    paragraph: float = 0.6
    heading: float = 1.0
    chapter: float = 2.0

    def __post_init__(self):
        for name in ("sentence", "paragraph", "heading", "chapter"):
            value = getattr(self, name)
            if not isinstance(value, (int, float)) or not 0 <= value <= 60:
                raise ValueError(f"the {name} pause must be between 0 and 60 seconds, not {value!r}")

    def between(self, before: Passage, after: Passage) -> float:
        """The pause between two passages of one chapter."""
        if after.joined:
            return self.sentence
        return self.heading if "heading" in (before.kind, after.kind) else self.paragraph


# ---- reading ------------------------------------------------------------------------------------------------
def decode_text(data: bytes, name: str, warnings: list[str] | None = None) -> str:
    """UTF-8 (with or without BOM) or UTF-16 with BOM; anything else is read as Windows-1252 with a warning, and a
    file with NUL bytes is refused as binary."""
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        text = data.decode("utf-16", errors="replace")
    else:
        try:
            text = data.decode("utf-8-sig")
        except UnicodeDecodeError:
            if b"\x00" in data[:65536]:
                raise TextError(f"{name} looks like a binary file, not text") from None
            if warnings is not None:
                warnings.append(f"{name} is not UTF-8; it was read as Windows-1252, some characters may be wrong")
            text = data.decode("cp1252", errors="replace")
    return text.replace("\r\n", "\n").replace("\r", "\n")


def book_from_text(text: str, title: str, markdown: bool = False) -> Book:
    """A book from plain text or Markdown (see the module doc); ``TextError`` if there is nothing to speak. Plain
    text gets its chapters as the studio does (``engine.documents.outline``)."""
    if not markdown:
        return book_from_document(_PlainText(text, " ".join(title.split()) or "Untitled"))
    author, titled = "", False
    front = _FRONT_MATTER.match(text)
    if front:
        for key, value in _FRONT_FIELD.findall(front.group(1)):
            value = value.strip().strip("\"'")
            if key.lower() == "title" and value:
                title, titled = value, True
            elif value:
                author = author or value
        text = text[front.end():]
    return _assemble(_markdown_blocks(text), title, author, titled=titled)


def book_from_document(document, warnings: list[str] | None = None) -> Book:
    """A book from a ``engine.documents.Document`` (or anything with its ``text``, ``title``, ``chapters`` and
    ``headings``): one chapter for each of its outline's (``engine.documents.outline``: the chapters the studio
    lists, every level, numbered alike), holding the passages from its start to the next chapter's, its heading
    spoken as a heading; a document without chapters is one chapter named after it. A part whose first chapter
    starts where it does holds no passage of its own."""
    title = book_title(document) or "Untitled"
    author = " ".join((getattr(document, "author", "") or "").split())
    text = document.text
    shape = outline(document)
    entries = shape.chapters or [DocumentChapter(title, 1, 0, len(text))]
    headings: dict[int, tuple[str, int]] = {}
    for heading in shape.headings:
        headings.setdefault(heading.start, (heading.title, heading.end))
    width = _wrap_width(text)
    chapters = []
    for i, entry in enumerate(entries):
        stop = entries[i + 1].start if i + 1 < len(entries) else len(text)
        passages: list[Passage] = []
        skip_to = -1
        for at, paragraph in _paragraphs(text, entry.start, stop):
            if at < skip_to:
                continue  # the title paragraph of a heading already spoken ("CHAPTER I" then its title)
            heading = headings.get(at)
            opens = at == entry.start and shape.chapters and not (i == 0 and shape.front_matter)
            if heading is not None or opens:
                said, skip_to = heading if heading is not None else (" ".join(paragraph.split()), -1)
                passages.append(Passage(said, "heading"))
                continue
            kind = document.kind_at(at) if hasattr(document, "kind_at") else "paragraph"
            if kind in ANNOUNCED:  # a listing's lines are its own: not joined as a hard wrap would be
                passages.append(Passage(paragraph.strip("\n"), kind))
            else:
                passages.extend(Passage(b.text, kind, b.voice) for b in _split_paragraph(paragraph, width))
        chapters.append(Chapter(entry.title, tuple(passages), entry.level))
    if not any(p.text.strip() for c in chapters for p in c.passages):
        raise TextError(f"“{title}” has no text to speak")
    book = Book(title=title, chapters=chapters, author=author)
    book.warnings.extend(getattr(document, "warnings", None) or [])
    if warnings is not None:
        book.warnings.extend(warnings)
    cover = getattr(document, "cover", None)
    if isinstance(cover, bytes):
        book.cover = cover
    return book


# ---- internals ----------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class _PlainText:
    """Plain text in the shape of a document without structure: its chapters come from its labels."""

    text: str
    title: str


@dataclass
class _Block:
    text: str
    level: int  # 0 for a paragraph, 1-6 for a heading
    voice: str | None
    kind: str = "paragraph"  # what the document's reader says the paragraph is (engine.core.text.block_kinds)



def _wrap_width(text: str) -> int:
    lengths = sorted(len(line.rstrip()) for line in text.split("\n") if line.strip())
    if not lengths:
        return 80
    return max(20, lengths[min(len(lengths) - 1, int(len(lengths) * 0.95))])


def _split_paragraph(paragraph: str, width: int) -> list[_Block]:
    """One blank-line paragraph as blocks: hard-wrapped lines joined, deliberate breaks and marks kept apart."""
    lines = [line.rstrip() for line in paragraph.split("\n") if line.strip()]
    groups: list[list[str]] = []
    for i, line in enumerate(lines):
        if groups and not _breaks(lines[i - 1], line, width):
            groups[-1].append(line)
        else:
            groups.append([line])
    blocks = []
    voice = None  # a mark holds to the end of its blank-line paragraph, or to the next mark
    for group in groups:
        text = _join_lines(group)
        marked, length = parse_mark(text)
        voice = marked if marked is not None else voice
        text = text[length:].strip()
        if _HAS_WORD.search(text):
            blocks.append(_Block(text, 0, voice))
    return blocks


def _breaks(line: str, following: str, width: int) -> bool:
    """Whether the line break between ``line`` and ``following`` ends a paragraph (see the module doc)."""
    if parse_mark(following)[0] is not None:
        return True
    # a list item starts a paragraph after a line that ends a sentence or clause, or another item: "under section
    # 7. This requirement" wraps one sentence around a number
    if _LIST_ITEM.match(following) and (re.search(r"""[.!?…:;,)"'”’]$""", line) or _LIST_ITEM.match(line)):
        return True
    first_word = following.split()[0] if following.split() else ""
    return bool(_SENTENCE_END.search(line)) and len(line.strip()) + 1 + len(first_word) <= width


def _join_lines(lines: list[str]) -> str:
    out = lines[0].strip()
    for line in lines[1:]:
        line = line.strip()
        if re.search(r"\w-$", out) and line[:1].isalpha():
            out += line  # a word or compound broken at its hyphen: the hyphen stays, no space
        else:
            out += " " + line
    return " ".join(out.split())  # runs of spaces (justified or indented text) are one space


def _markdown_blocks(text: str) -> list[_Block]:
    """Markdown as blocks: headings with their levels, paragraphs with markup removed, code and rules dropped."""
    blocks: list[_Block] = []
    paragraph: list[str] = []
    fence: str | None = None
    lines = text.split("\n")
    width = _wrap_width(text)

    def flush() -> None:
        if paragraph:
            blocks.extend(_split_paragraph(_strip_inline("\n".join(paragraph)), width))
            paragraph.clear()

    for i, line in enumerate(lines):
        if fence is not None:
            if line.strip().startswith(fence):
                fence = None
            continue
        opening = _FENCE.match(line)
        if opening:
            flush()
            fence = opening.group(1)
            continue
        atx = _ATX.match(line)
        if atx:
            flush()
            heading = _strip_inline(atx.group(2))
            if _HAS_WORD.search(heading):
                blocks.append(_Block(" ".join(heading.split()), len(atx.group(1)), None))
            continue
        if _SETEXT.match(line) and paragraph and len(paragraph) == 1 and i > 0 and lines[i - 1].strip():
            heading = _strip_inline(paragraph.pop())
            flush()
            if _HAS_WORD.search(heading):
                blocks.append(_Block(" ".join(heading.split()), 1 if line.strip()[0] == "=" else 2, None))
            continue
        if _RULE.match(line) or not line.strip():
            flush()
            continue
        if _LIST_ITEM.match(line) and paragraph:
            flush()
        paragraph.append(re.sub(r"^\s{0,3}>\s?", "", line))  # a quote's marker is not read
    flush()
    return blocks


def _strip_inline(text: str) -> str:
    text = re.sub(r"<!--.*?-->", "", text, flags=re.DOTALL)
    text = re.sub(r"!\[[^\]]*\]\([^)]*\)", "", text)  # images
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", text)  # links: their text
    text = re.sub(r"\[([^\]]*)\]\[[^\]]*\]", r"\1", text)
    text = re.sub(r"</?[A-Za-z][^>\n]*>", "", text)  # HTML tags
    text = re.sub(r"`+([^`]*)`+", r"\1", text)
    text = re.sub(r"(\*\*|__)(?=\S)(.+?)(?<=\S)\1", r"\2", text)
    text = re.sub(r"(?<![\w*])([*_])(?=\S)(.+?)(?<=\S)\1(?![\w*])", r"\2", text)
    text = re.sub(r"^\s*(?:[-*+]|\d{1,3}[.)])\s+", "", text, flags=re.MULTILINE)  # list markers
    return text


def _assemble(blocks: list[_Block], title: str, author: str, titled: bool = False) -> Book:
    """Markdown's blocks as a book, where the studio's readers are missing (``engine.production.book_sources``)."""
    # titled: the title comes from the document's metadata, so a lone top heading does not replace it
    title = " ".join(title.split()) or "Untitled"
    levels = sorted({b.level for b in blocks if b.level})
    lone = None  # a top heading that names the book: spoken as a heading, not a chapter of its own
    chapter_level = None
    if levels:
        counts = {lv: sum(b.level == lv for b in blocks) for lv in levels}
        chapter_level = next((lv for lv in levels if counts[lv] >= 2), levels[-1])
        if counts[levels[0]] == 1 and chapter_level != levels[0]:
            lone = next(b for b in blocks if b.level == levels[0])
            if blocks.index(lone) == 0 and not titled:
                title = lone.text
    chapters: list[tuple[str, list[Passage]]] = []
    for block in blocks:
        if chapter_level is not None and block.level and block.level <= chapter_level and block is not lone:
            chapters.append((block.text, [Passage(block.text, "heading")]))
            continue
        if not chapters:
            chapters.append((title, []))
        chapters[-1][1].append(Passage(block.text, "heading" if block.level else block.kind, block.voice))
    book_chapters = [Chapter(name, tuple(passages)) for name, passages in chapters if passages]
    if not any(p.text.strip() for c in book_chapters for p in c.passages):
        raise TextError(f"“{title}” has no text to speak")
    return Book(title=title, chapters=book_chapters, author=" ".join(author.split()))
