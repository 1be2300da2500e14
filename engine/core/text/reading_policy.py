"""The reading policy: what of a document is spoken, and how, decided when its text is planned for speech. Qt-free.

The document stays as written (the editor shows it, highlighting and subtitles use its spans); the policy changes
only what each segment is spoken as (``Segment.spoken``, which pronunciation rules then refine), so a change of
policy applies from the next reading or export, without importing the document again. ``ReadingPolicy`` holds the
choices; ``PolicySegmenter`` is ``engine.core.text.segments.Segmenter`` with the policy applied, used by the studio's
reading plan and by export (``policy_segments`` for a whole text). What it does:

- A URL is said as its site name ("https://docs.python.org/3/library/re.html" -> "docs.python.org"), unless
  ``read_urls``.
- A line that is only decoration (no letter or digit: "=====", "* * *", "+----+") is skipped, and a run of four
  or more of one symbol inside a line ("Contents ........ 5") is not said.
- Interactive sessions (lines after a ">>> ", "$ ", "# command" or "In [1]: " prompt, with their output, up to a
  line of prose or a blank line followed by something else), code lines no prose has ("#include <", a line
  ending with "{", "def f(x):") and box-drawing diagrams are announced once per run ("Code example.",
  "Diagram.") and skipped, unless ``read_code``: then they are read as written. The announcement's span is the
  whole run, so highlighting marks what it stands for.
- An unresolved Markdown reference or link ("[url.parse()][]", "[text](target)") is said as its text.
- A superscript after a number is a power ("2²⁵⁶": "2 to the power 256"), after a word a footnote mark, not said
  (``engine.core.text.spoken_symbols``).

What a block is (``engine.core.text.block_kinds``), where the document's reader says it, decides alone: a code block, a
session, a formula or a diagram is announced ("Code example.", "Session example.", "Formula.", "Diagram.") or,
with ``read_code``, read; a footnote is read with a lead ("Footnote: ...") where the reader placed it, after its
paragraph, or skipped (``footnotes``); a table row's cells of symbols only are said as words; any other kind is
prose and no line of it is guessed. Where the format says nothing (PARAGRAPH: plain text, PDF) the lines are
guessed as above. Ordinary prose (no URL, prompt, code line, box drawing, Markdown brackets or superscript) is
never changed: its segments are ``engine.core.text.segments.split_segments``'s and every word is said. A line is
classified on at most ``LINE_DECIDE`` characters, so memory stays bounded by the segmenter's, whatever the lines'
length.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from engine.core.text.block_kinds import (
    CODE,
    DIAGRAM,
    FOOTNOTE,
    FORMULA,
    PARAGRAPH,
    PROSE,
    SESSION,
    TABLE_ROW,
)
from engine.core.text.segments import DEFAULT_MAX_CHARS, Segment, Segmenter
from engine.core.text.spoken_symbols import say_powers, say_table_symbols

LINE_DECIDE = 1024  # characters of a line that decide its kind; a longer line is prose unless it starts a run
CODE_ANNOUNCEMENT = "Code example."
SESSION_ANNOUNCEMENT = "Session example."
DIAGRAM_ANNOUNCEMENT = "Diagram."
FORMULA_ANNOUNCEMENT = "Formula."
FOOTNOTE_LEAD = "Footnote: "  # said before a note read at its paragraph's end, so it is not heard as the text
FOOTNOTES_AT_PARAGRAPH_END = "paragraph-end"
FOOTNOTES_SKIP = "skip"
FOOTNOTE_CHOICES = (FOOTNOTES_AT_PARAGRAPH_END, FOOTNOTES_SKIP)


@dataclass(frozen=True, slots=True)
class ReadingPolicy:
    """What is read as written: URLs in full (else their site name), code, sessions, formulas and diagrams (else
    announced and skipped); footnotes at their paragraph's end (as the readers place them) or skipped."""

    read_urls: bool = False
    read_code: bool = False
    footnotes: str = FOOTNOTES_AT_PARAGRAPH_END

    def __post_init__(self):
        if self.footnotes not in FOOTNOTE_CHOICES:
            raise ValueError(f"footnotes: one of {', '.join(FOOTNOTE_CHOICES)}, not {self.footnotes!r}")

    def spoken(self, text: str, kind: str = PARAGRAPH) -> str:
        """What one segment of a block of ``kind`` is said as (see the module docstring); ``text`` itself when
        nothing changes."""
        said = _MARKDOWN_REFERENCE.sub(r"\1", text) if "[" in text else text
        if not self.read_urls and ("://" in said or "www." in said):
            said = _URL.sub(_site, said)
        said = _SYMBOL_RUN.sub(" ", said) if kind != TABLE_ROW else say_table_symbols(said)
        said = say_powers(said)
        return text if said == text else " ".join(said.split())


# ---- inline ---------------------------------------------------------------------------------------------------
# A URL with a scheme (repeated, as a typo can: "git://http://"), or starting "www.": its host is said. The
# punctuation that ends the sentence around it is no part of it.
_URL = re.compile(r"""\b(?:(?:[a-z][a-z0-9+.-]{0,15}://)++(?:[^\s/@<>"']*@)?|(?=www\.))"""
                  r"""([^\s/?#:<>"'()\[\]]+)(?::\d+)?(?:[/?#](?:[^\s<>"]*[^\s<>".,;:!?)\]'”’])?)?""", re.IGNORECASE)
# "[text][]", "[text][label]", "[text](target)": Markdown left unrendered; the text is said.
_MARKDOWN_REFERENCE = re.compile(r"\[([^\[\]\n]{1,200})\](?:\[[^\[\]\n]{0,200}\]|\([^()\s]{1,500}\))")
_SYMBOL_RUN = re.compile(r"([^\w\s!?])\1{3,}")  # "=====", "......", "****"; "No!!!!" keeps its voice


def _site(match: re.Match) -> str:
    host = match.group(1).rstrip(".")
    return host or match.group(0)


# ---- lines ----------------------------------------------------------------------------------------------------
_PROMPT = re.compile(r">>>(?:\s|$)|\$\s+[^\s\d]|#\s+[a-z/.~]\S*|In \[\d+\]:\s|PS(?: [^>\n]*)?>\s")
_CONTINUATION = re.compile(r"\.\.\.(?:\s|$)")  # a Python session's continuation line
_CODE_LINE = re.compile(r"#include\s*[<\"]|(?:async\s+)?def\s+\w+\s*\(.*\)\s*(?:->.*)?:$|class\s+\w+\s*(?:\(.*\))?:$"
                        r"|.*\{$|\}|.*\w\([^()]*\);$")
_BOX_DRAWING = re.compile("[\u2500-\u259f]")
# A line of prose: a capital (after an opening quote or bracket), four words or more, a sentence end.
_PROSE_LINE = re.compile(r"""["'“‘(]?[A-Z][^\s]*(?:\s+[^\s]+){3,}[.!?]["'”’)]*""")

# a line's kinds: the block kinds PROSE, CODE and DIAGRAM, and these
DECORATION, BLANK = "decoration", "blank"
_SKIP, _RUN = "skip", "run"  # what becomes of the rest of a line once its kind is decided (besides PROSE)


def line_kind(line: str, in_run: bool = False) -> str:
    """The kind of one line (stripped of its line end): ``BLANK``, ``DECORATION``, ``CODE`` (a prompt, a session's
    continuation or output when ``in_run``, a code line), ``DIAGRAM`` or ``PROSE``."""
    stripped = line.strip()
    if not stripped:
        return BLANK
    if not any(ch.isalnum() for ch in stripped):
        return DECORATION
    if _BOX_DRAWING.search(stripped):
        return DIAGRAM
    prompt = _PROMPT.match(stripped)
    if prompt is not None and not _PROSE_LINE.fullmatch(stripped[prompt.end():].strip()):
        return CODE
    if _CODE_LINE.match(stripped):
        return CODE
    if in_run and (_CONTINUATION.match(stripped) or not _PROSE_LINE.fullmatch(stripped)):
        return CODE  # a session's continuation or output
    return PROSE


def code_kind(text: str) -> str:
    """The kind of a block the markup calls code (engine.core.text.block_kinds): SESSION when its first line is a
    prompt, DIAGRAM when most of its lines draw boxes, else CODE."""
    lines = [line.strip() for line in text[:64 * LINE_DECIDE].split("\n") if line.strip()]
    if not lines:
        return CODE
    if _PROMPT.match(lines[0]):
        return SESSION
    if sum(bool(_BOX_DRAWING.search(line)) for line in lines) * 2 > len(lines):
        return DIAGRAM
    return CODE


_ANNOUNCEMENTS = {CODE: CODE_ANNOUNCEMENT, SESSION: SESSION_ANNOUNCEMENT, DIAGRAM: DIAGRAM_ANNOUNCEMENT,
                  FORMULA: FORMULA_ANNOUNCEMENT}


class PolicySegmenter:
    """``engine.core.text.segments.Segmenter`` (same arguments, same ``feed``/``finish``) with ``policy`` applied:
    prose lines are cut as the segmenter cuts them and said as ``policy.spoken`` says; decoration lines are skipped; a
    run of code or diagram lines is one segment spanning the run, said as its announcement (or, with ``read_code``, read
    as prose). A skipped line ends the segment before it, as a blank line does.

    ``kinds`` says what the text is (``engine.core.text.block_kinds``): one kind for all of it, or a function giving the
    kind at an offset (``engine.documents.Document.kind_at``); None: PARAGRAPH, whose lines are guessed. A line of
    a block whose kind the markup gave is decided by that kind alone."""

    def __init__(self, policy: ReadingPolicy | None = None, start: int = 0, max_chars: int = DEFAULT_MAX_CHARS,
                 target_chars: int | None = None, kinds: str | Callable[[int], str] | None = None):
        self.policy = policy or ReadingPolicy()
        self._kind_at = (lambda _at, kind=kinds: kind) if isinstance(kinds, str) else kinds
        self._note_starts: list[int] = []  # where footnotes not yet said start, for their lead
        self._after_note = False  # the last line decided was a footnote's (no blank line since)
        self._last_block = PARAGRAPH  # the kind of the last line with something on it
        self._after_blank = False  # a blank line came after it
        self.max_chars, self.target_chars = max_chars, target_chars
        Segmenter(start, max_chars, target_chars)  # the arguments checked now, as the segmenter checks them
        self._offset = start  # of the next character fed
        self._segmenter: Segmenter | None = None
        self._line = ""  # the current line while its kind is undecided
        self._line_start = start
        self._mode: str | None = None  # the rest of the current line: PROSE, _SKIP or _RUN; None: undecided
        self._run: list | None = None  # [kind, start, end, first line] of the code or diagram run being collected
        self._run_blank = False  # a blank line followed the run's last line

    def feed(self, piece: str) -> list[Segment]:
        out: list[Segment] = []
        at = 0
        while at < len(piece):
            newline = piece.find("\n", at)
            stop = len(piece) if newline < 0 else newline + 1
            self._take(piece[at:stop], out)
            if newline >= 0:
                self._end_line(out)
            at = stop
        return out

    def finish(self) -> list[Segment]:
        out: list[Segment] = []
        if self._mode is None and self._line:
            self._decide(out)
        self._close_run(out)
        if self._segmenter is not None:
            out += self._said(self._segmenter.finish())
            self._segmenter = None
        return out

    # ---- internals ------------------------------------------------------------------------------------------
    def _take(self, text: str, out: list[Segment]) -> None:
        """Part of one line (its end included, if it is there)."""
        if self._mode is None:  # the line's first LINE_DECIDE characters decide it, however they arrive
            head, text = text[:LINE_DECIDE - len(self._line)], text[LINE_DECIDE - len(self._line):]
            self._line += head
            self._offset += len(head)
            if head.endswith("\n") or len(self._line) >= LINE_DECIDE:
                self._decide(out)
            if not text:
                return
        start = self._offset
        self._offset += len(text)
        if self._mode == PROSE:
            out += self._said(self._prose(start).feed(text))
        elif self._mode == _RUN and text.strip():
            self._run[2] = start + len(text.rstrip())

    def _decide(self, out: list[Segment]) -> None:
        line, start = self._line, self._line_start
        self._line = ""
        run_kind = self._run[0] if self._run is not None else None
        block = self._kind_at(start) if self._kind_at is not None else PARAGRAPH
        note_goes_on, self._after_note = self._after_note, block == FOOTNOTE and bool(line.strip())
        if line.strip():
            # a block the reader marked ends where the next begins: no segment joins two (a paragraph ending without
            # a stop would otherwise run on into a note, a row or a listing after it)
            new_block = block != self._last_block or block != PARAGRAPH and self._after_blank
            if new_block and self._segmenter is not None and self._kind_at is not None:
                out += self._said(self._segmenter.finish())
                self._segmenter = None
            self._last_block, self._after_blank = block, False
        else:
            self._after_blank = True
        if not line.strip():
            kind = BLANK
        elif block == PARAGRAPH:
            kind = line_kind(line, in_run=run_kind == CODE and not self._run_blank)
        elif block in _ANNOUNCEMENTS:
            kind = block
        elif block == FOOTNOTE and self.policy.footnotes == FOOTNOTES_SKIP:
            kind = DECORATION  # skipped, as a line of symbols is
        else:
            kind = PROSE
            if block == FOOTNOTE and not note_goes_on:
                self._note_starts.append(start + len(line) - len(line.lstrip()))
        if kind in _ANNOUNCEMENTS and self.policy.read_code:
            kind = PROSE
        if kind == BLANK and run_kind is not None:
            self._run_blank, self._mode = True, _SKIP  # the run may go on after it
            return
        if kind in (BLANK, PROSE):
            self._close_run(out)
            self._mode = PROSE
            out += self._said(self._prose(start).feed(line))
            return
        if self._segmenter is not None:  # what came before is final: a skipped line ends it, as a blank line does
            out += self._said(self._segmenter.finish())
            self._segmenter = None
        end = start + len(line.rstrip())
        if kind == DECORATION:  # said by nothing; inside a run, part of it
            self._mode = _SKIP
            return
        self._mode = _RUN
        if run_kind == kind:
            self._run[2], self._run_blank = end, False
            return
        self._close_run(out)
        self._run, self._run_blank = [kind, start + len(line) - len(line.lstrip()), end, line.strip()], False

    def _end_line(self, out: list[Segment]) -> None:
        self._mode = None
        self._line_start = self._offset

    def _close_run(self, out: list[Segment]) -> None:
        if self._run is None:
            return
        kind, start, end, first = self._run
        self._run = None
        self._run_blank = False
        out.append(Segment(start, end, first[:self.max_chars].strip(), _ANNOUNCEMENTS[kind]))

    def _prose(self, start: int) -> Segmenter:
        if self._segmenter is None:
            self._segmenter = Segmenter(start, self.max_chars, self.target_chars)
        return self._segmenter

    def _said(self, segments: list[Segment]) -> list[Segment]:
        out = []
        for seg in segments:
            kind = self._kind_at(seg.start) if self._kind_at is not None else PARAGRAPH
            said = self.policy.spoken(seg.text, kind)
            if self._note_starts and self._note_starts[0] < seg.end:
                if any(seg.start <= at for at in self._note_starts if at < seg.end):
                    said = FOOTNOTE_LEAD + said
                self._note_starts = [at for at in self._note_starts if at >= seg.end]
            if said == seg.text:
                out.append(seg)
            elif said.strip():
                out.append(Segment(seg.start, seg.end, seg.text, said))
            # else: only symbols, nothing to say
        return out


def policy_segments(text: str, policy: ReadingPolicy | None = None, start: int = 0,
                    max_chars: int = DEFAULT_MAX_CHARS, target_chars: int | None = None,
                    kinds: str | Callable[[int], str] | None = None) -> list[Segment]:
    """The segments of ``text`` as speech gets them under ``policy`` (``PolicySegmenter``), offsets from ``start``;
    ``kinds``: what the text is (``PolicySegmenter``)."""
    segmenter = PolicySegmenter(policy, start, max_chars, target_chars, kinds)
    return segmenter.feed(text) + segmenter.finish()
