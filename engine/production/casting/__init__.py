"""Casting a book: narration in one voice, quoted speech in another, and the characters the text names as
speakers each in a voice of their own. Qt-free; ``orator export`` and the studio's export queue cast a ``Book``
with ``cast_book`` before planning it.

``Cast(dialogue, characters)``: the voice of quoted speech (None: the narrator's) and (character, voice) pairs.
``cast_book(book, cast)`` cuts each unmarked paragraph at its quotations (``engine.production.casting.quotes``) into
passages of one voice each; the second and later passages of a paragraph are ``joined`` to it, so the pause
before them is a sentence's, not a paragraph's, and each is cut into segments of its own: subtitles,
``--list-segments`` and highlighting follow the spans. A paragraph with a voice mark keeps its mark's voice: a
mark is the writer's own choice. ``paragraph_spans`` is the cut itself, over text offsets.

A speaker is matched to a character when the character's words occur together in the name the text gives,
ignoring case and full stops ("Darcy" matches "Mr. Darcy"; "Mr. Bennet" does not match "Mrs. Bennet"); the
longest match wins. A quotation with no named speaker takes the speaker of another quotation of its paragraph,
and a speech over several paragraphs takes the speaker named in any of them.
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass
from pathlib import Path

from engine.errors import UnsupportedError
from engine.production.casting.quotes import Quote, find_quotes, opens_paragraph, quote_style, speaker

MAX_CHARACTERS = 200
MAX_NAME_CHARS = 100
MAX_CAST_FILE_BYTES = 64 << 10
_HAS_WORD = re.compile(r"\w")


@dataclass(frozen=True)
class Cast:
    dialogue: str | None = None  # the voice of quoted speech; None: the narrator's (a character's voice still applies)
    characters: tuple[tuple[str, str], ...] = ()  # (character, voice)

    def __bool__(self) -> bool:
        return bool(self.dialogue or self.characters)

    @property
    def voices(self) -> set[str]:
        return ({self.dialogue} if self.dialogue else set()) | {voice for _, voice in self.characters}

    def voice_of(self, name: str | None) -> str | None:
        """The voice of a quotation whose speaker the text names ``name`` (None: unnamed)."""
        if name and self.characters:
            words = _words(name)
            best = None
            for character, voice in self.characters:
                key = _words(character)
                if key and _contains(words, key) and (best is None or len(key) > best[0]):
                    best = (len(key), voice)
            if best is not None:
                return best[1]
        return self.dialogue


@dataclass(frozen=True, slots=True)
class Span:
    start: int
    end: int
    voice: str | None  # None: the narrator's (the passage's own voice)
    quoted: bool
    speaker: str | None = None  # as the text names it


def parse_cast(spec: str) -> tuple[tuple[str, str], ...]:
    """``"Elizabeth=Vivian, Mr. Darcy=Ryan"`` (commas, semicolons or line ends between; ``#`` starts a comment in
    a line) -> pairs; ``UnsupportedError`` saying what is wrong."""
    pairs: list[tuple[str, str]] = []
    seen: set[str] = set()
    for line in str(spec).splitlines() or [""]:
        for part in re.split(r"[,;]", line.split("#", 1)[0]):
            if not part.strip():
                continue
            if "=" not in part:
                raise UnsupportedError(f"cast {part.strip()!r}: write CHARACTER=VOICE, e.g. Elizabeth=Vivian")
            name, voice = (" ".join(s.split()) for s in part.split("=", 1))
            if not name or not voice or len(name) > MAX_NAME_CHARS or len(voice) > MAX_NAME_CHARS:
                raise UnsupportedError(f"cast {part.strip()!r}: a character and a voice of 1 to {MAX_NAME_CHARS} "
                                       "characters each")
            if " ".join(_words(name)) in seen:
                raise UnsupportedError(f"cast: {name!r} is given twice")
            seen.add(" ".join(_words(name)))
            pairs.append((name, voice))
            if len(pairs) > MAX_CHARACTERS:
                raise UnsupportedError(f"cast: at most {MAX_CHARACTERS} characters")
    if not pairs:
        raise UnsupportedError("the cast is empty: write CHARACTER=VOICE, e.g. Elizabeth=Vivian")
    return tuple(pairs)


def cast_argument(value: str) -> tuple[tuple[str, str], ...]:
    """``--cast``: pairs as ``parse_cast`` reads them, or a cast file of them (one a line) where ``value`` has no
    ``=``."""
    if "=" in value:
        return parse_cast(value)
    path = Path(value)
    try:
        with open(path, "rb") as f:
            data = f.read(MAX_CAST_FILE_BYTES + 1)
    except OSError as e:
        raise UnsupportedError(f"cast file {value}: {e.strerror or e}") from None
    if len(data) > MAX_CAST_FILE_BYTES:
        raise UnsupportedError(f"cast file {value}: larger than {MAX_CAST_FILE_BYTES >> 10} KiB")
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise UnsupportedError(f"cast file {value}: not UTF-8 text") from None
    if "\x00" in text:
        raise UnsupportedError(f"cast file {value}: not a text file")
    return parse_cast(text)


def paragraph_spans(paragraphs: list[str], cast: Cast, style: str | None = None) -> list[list[Span]]:
    """Each paragraph (consecutive paragraphs of one chapter, in order) as spans that cover it end to end, in
    order, each of one voice; ``style``: the quotation marks (``quotes.DOUBLE`` / ``SINGLE``; None: as the
    paragraphs use them)."""
    style = style or quote_style(paragraphs)
    found: list[list[Quote]] = []
    named: list[list[str | None]] = []
    groups: list[list[tuple[int, int]]] = []  # a speech over several paragraphs: its (paragraph, quote) parts
    for p, text in enumerate(paragraphs):
        open_before = bool(p and found[-1] and found[-1][-1].open_end)
        quotes = find_quotes(text, style, going_on=open_before)
        names = [speaker(text, q, quotes[i - 1].end if i else 0, quotes[i + 1].start if i + 1 < len(quotes)
                         else len(text)) for i, q in enumerate(quotes)]
        shared = next((n for n in names if n), None)  # a paragraph is one speaker's, unless it names several
        names = [n or shared for n in names]
        going_on = open_before and opens_paragraph(text, quotes)
        for i in range(len(quotes)):
            if i == 0 and going_on:
                groups[-1].append((p, 0))
            else:
                groups.append([(p, i)])
        found.append(quotes)
        named.append(names)
    for group in groups:
        name = next((named[p][i] for p, i in group if named[p][i]), None)
        for p, i in group:
            named[p][i] = name
    return [_spans(text, found[p], named[p], cast) for p, text in enumerate(paragraphs)]


def cast_book(book, cast: Cast):
    """``book`` (an ``engine.production.book_structure.Book``) with its unmarked paragraphs cut into passages by voice
    (see the module doc); the book itself when ``cast`` casts nothing."""
    if not cast:
        return book
    from engine.production.book_structure import Chapter, Passage

    style = quote_style(p.text for c in book.chapters for p in c.passages if p.kind == "paragraph")
    chapters = []
    for chapter in book.chapters:
        cast_here = [p for p in chapter.passages if p.kind == "paragraph" and p.voice is None]
        spans = iter(paragraph_spans([p.text for p in cast_here], cast, style))
        passages = []
        for passage in chapter.passages:
            if passage.kind != "paragraph" or passage.voice is not None:
                passages.append(passage)
                continue
            for n, span in enumerate(next(spans)):
                passages.append(Passage(passage.text[span.start:span.end].strip(), passage.kind, span.voice,
                                        joined=passage.joined or n > 0))
        chapters.append(Chapter(chapter.title, tuple(passages)))
    return dataclasses.replace(book, chapters=chapters, warnings=list(book.warnings))


def _spans(text: str, quotes: list[Quote], names: list[str | None], cast: Cast) -> list[Span]:
    """Spans covering ``text``: narration, quotations; a piece with nothing to say joins the one before it (or
    after, at the start), and neighbours of one voice are one span."""
    raw: list[Span] = []
    at = 0
    for quote, name in zip(quotes, names, strict=True):
        if quote.start > at:
            raw.append(Span(at, quote.start, None, False))
        raw.append(Span(quote.start, quote.end, cast.voice_of(name), True, name))
        at = quote.end
    if at < len(text) or not raw:
        raw.append(Span(at, len(text), None, False))
    spans: list[Span] = []
    for span in raw:
        if spans and (span.voice == spans[-1].voice or not _HAS_WORD.search(text, span.start, span.end)):
            spans[-1] = dataclasses.replace(spans[-1], end=span.end)
        elif spans and not _HAS_WORD.search(text, spans[-1].start, spans[-1].end):
            spans[-1] = dataclasses.replace(span, start=spans[-1].start)
        else:
            spans.append(span)
    return spans


def _words(name: str) -> list[str]:
    return name.replace(".", " ").lower().split()


def _contains(words: list[str], key: list[str]) -> bool:
    return any(words[i:i + len(key)] == key for i in range(len(words) - len(key) + 1))
