"""The reading policy (``engine.core.text.reading_policy``): URLs said as their site, decoration skipped, code and
sessions announced or read, Markdown references said as their text; spans stay the document's; ordinary prose loses no
word and is cut as without a policy; the same segments however the text arrives; bounded memory on long lines."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.core.text.reading_policy import (
    CODE_ANNOUNCEMENT,
    DIAGRAM_ANNOUNCEMENT,
    LINE_DECIDE,
    PolicySegmenter,
    ReadingPolicy,
    policy_segments,
)
from engine.core.text.segments import split_segments
from engine.pronunciation import Lexicon, Rule, pronounce

DOCUMENTS = Path(__file__).resolve().parents[1] / "data" / "documents"
READ_ALL = ReadingPolicy(read_urls=True, read_code=True)


def said(text: str, policy: ReadingPolicy | None = None) -> list[str]:
    return [seg.speech for seg in policy_segments(text, policy)]


@pytest.mark.parametrize(("written", "spoken"), [
    ("See https://docs.python.org/3/library/re.html for more.", "See docs.python.org for more."),
    ("Read it at https://docs.python.org/3/library/re.html.", "Read it at docs.python.org."),
    ("The archive (http://deb.debian.org/debian/) is mirrored.", "The archive (deb.debian.org) is mirrored."),
    ("Mail list at <https://lists.debian.org/debian-live/>.", "Mail list at <lists.debian.org>."),
    ("Go to www.example.com/a/b?x=1, then stop.", "Go to www.example.com, then stop."),
    ("Log in as ftp://user:pw@files.example.org:2121/pub now.", "Log in as files.example.org now."),
    ("Use [url.parse()][] to parse it.", "Use url.parse() to parse it."),
    ("See [the guide][guide] and [this](guide.html).", "See the guide and this."),
    ("Clone git://http://anonscm.debian.org/git/x.git first.", "Clone anonscm.debian.org first."),
    ("Contents ............ 5", "Contents 5"),
    ("No!!!! Not that?!?!", "No!!!! Not that?!?!"),
])
def test_what_a_sentence_is_said_as(written, spoken):
    [segment] = policy_segments(written)
    assert (segment.text, segment.speech) == (written, spoken)
    assert said(written, READ_ALL) == [written if "://" in written or "www." in written else spoken]


def test_decoration_lines_are_skipped_and_end_the_sentence_before_them():
    text = "A Title\n=======\nThe text starts here.\n\n* * *\n\n+-----+\nAnd goes on."
    segments = policy_segments(text)
    assert [s.speech for s in segments] == ["A Title", "The text starts here.", "And goes on."]
    assert all(text[s.start:s.end] == s.text for s in segments)


def test_a_python_session_is_announced_once_and_skipped_or_read_by_choice():
    session = (">>> words = ['cat', 'window', 'defenestrate']\n>>> for w in words:\n...     print(w, len(w))\n"
               "...\ncat 3\nwindow 6\ndefenestrate 12")
    text = f"Loop over a list:\n\n{session}\n\nThe loop ends there."
    segments = policy_segments(text)
    assert [s.speech for s in segments] == ["Loop over a list:", CODE_ANNOUNCEMENT, "The loop ends there."]
    code = segments[1]
    assert text[code.start:code.end] == session  # highlighting marks the whole session
    read = said(text, READ_ALL)
    assert "cat 3 window 6 defenestrate 12" in " ".join(" ".join(read).split())


def test_a_shell_session_runs_to_the_prose_after_it():
    text = "$ ls -l /tmp\ntotal 4\ndrwx------ 2 me me 4096 Jan 1 tmpdir\nThat lists the folder and its contents.\n"
    assert said(text) == [CODE_ANNOUNCEMENT, "That lists the folder and its contents."]


def test_consecutive_code_blocks_are_one_announcement():
    text = "Two ways:\n\n# apt install package1 package2-\n\n# apt remove package1+ package2\n\nEither works."
    assert said(text) == ["Two ways:", CODE_ANNOUNCEMENT, "Either works."]


def test_code_lines_no_prose_has():
    text = "In C:\n\n#include <stdio.h>\nint main(void) {\n  printf(\"%d\", 3);\n}\n\nThat prints 3."
    assert said(text) == ["In C:", CODE_ANNOUNCEMENT, "That prints 3."]


def test_a_box_drawing_diagram_is_announced():
    text = ("The parts of a URL:\n┌────┬──────────┐\n│ href │ protocol │\n└────┴──────────┘\n"
            "Each part has a name.")
    assert said(text) == ["The parts of a URL:", DIAGRAM_ANNOUNCEMENT, "Each part has a name."]


@pytest.mark.parametrize("line", [
    ">>> I think we should meet on Monday at noon.",  # a mail quoted three deep, not a Python prompt
    "$ 5 is what it cost.",
    "# Introduction to the book",
    "The price is $ 5, or so they say.",
])
def test_prose_that_looks_a_little_like_a_prompt_is_read(line):
    assert said(line) == [" ".join(line.split())]


def test_a_real_manual_keeps_its_prose_and_skips_its_commands():
    """Debian's live-manual EPUB, as export reads it: its "$ make build" and "# apt-get install" lines are
    announced, its URLs said as their sites, and every sentence of its prose is said."""
    from engine.production.book_sources import load_book

    book = load_book(DOCUMENTS / "live-manual.en.epub")
    spoken = [seg.speech for c in book.chapters for p in c.passages for seg in policy_segments(p.text)]
    assert CODE_ANNOUNCEMENT in spoken
    assert not any(s.startswith(("$ make build", "# apt-get install")) or "://" in s for s in spoken)
    assert any("debian-live.alioth.debian.org" in s for s in spoken)
    prose = [p.text for c in book.chapters for p in c.passages if "://" not in p.text and "$" not in p.text
             and "#" not in p.text and "[" not in p.text and not re.search(r"[{}\u2500-\u259f]", p.text)]
    assert len(prose) > 100
    for text in prose:
        assert [s.text for s in policy_segments(text)] == [s.text for s in split_segments(text)]


def test_pronunciation_rules_apply_to_what_the_policy_says():
    segments = policy_segments("See https://docs.python.org/3/ now.")
    lexicon = Lexicon((Rule("docs.python.org", "the Python documentation"),))
    [segment] = pronounce(segments, lexicon, None)
    assert segment.speech == "See the Python documentation now."
    assert segment.text == "See https://docs.python.org/3/ now."


# ---- properties ---------------------------------------------------------------------------------------------
_WORDS = st.from_regex(r"[A-Za-z][a-z]{0,9}|[0-9]{1,4}|café|naïve|Æsir", fullmatch=True)
_PUNCT = st.sampled_from([" ", " ", " ", ", ", "; ", ": ", ". ", "! ", "? ", " — ", "--", " (", ") ", "'", '"',
                          "…", " - "])
# Ordinary prose: lines (hard-wrapped, or paragraphs apart) that start with a word, of words and punctuation.
_LINE = st.tuples(_WORDS, st.lists(st.one_of(_WORDS, _PUNCT), max_size=40)).map(lambda t: t[0] + "".join(t[1]))
_PROSE = st.lists(st.tuples(_LINE, st.sampled_from(["\n", "\n\n", "\n\n\n"])), max_size=12).map(
    lambda lines: "".join(line + end for line, end in lines))


@settings(max_examples=300, deadline=None)
@given(text=_PROSE, target=st.sampled_from([None, 0, 80]))
def test_the_policy_never_drops_a_word_of_ordinary_prose(text, target):
    segments = policy_segments(text, target_chars=target)
    spoken = " ".join(seg.speech for seg in segments)
    assert re.findall(r"\w+", spoken) == re.findall(r"\w+", text)
    # cut as without a policy (a segment of symbols alone, "……", may be left unsaid)
    assert [(s.start, s.end, s.text) for s in segments if re.search(r"\w", s.text)] == \
           [(s.start, s.end, s.text) for s in split_segments(text, target_chars=target) if re.search(r"\w", s.text)]


_LINES = st.sampled_from([">>> x = 1", "... y", "$ ls -l", "# apt install x", "total 4", "cat 3", "=====",
                          "│ box │", "int f() {", "}", "A sentence of plain prose here.", "see https://a.b/c.",
                          "[ref][]", "", "", "word " * 30, "x" * 50])


@settings(max_examples=300, deadline=None)
@given(lines=st.lists(_LINES, max_size=40), cuts=st.lists(st.integers(0, 3000), max_size=10),
       start=st.integers(0, 10**6), read_code=st.booleans())
def test_the_same_segments_however_the_text_arrives(lines, cuts, start, read_code):
    text = "\n".join(lines)
    policy = ReadingPolicy(read_code=read_code)
    whole = policy_segments(text, policy, start=start)
    bounds = sorted({min(c, len(text)) for c in cuts} | {0, len(text)})
    segmenter = PolicySegmenter(policy, start)
    got = []
    for a, b in zip(bounds, bounds[1:], strict=False):
        got += segmenter.feed(text[a:b])
    got += segmenter.finish()
    assert got == whole
    previous = start
    for seg in whole:  # in order, within the text, each with something to say
        assert previous <= seg.start < seg.end <= start + len(text)
        assert seg.speech.strip()
        previous = seg.end


@settings(max_examples=100, deadline=None)
@given(text=st.text(max_size=600))
def test_any_text_gives_ordered_segments_with_something_to_say(text):
    previous = 0
    for seg in policy_segments(text):
        assert previous <= seg.start < seg.end <= len(text) and seg.speech.strip()
        previous = seg.end


def test_memory_stays_bounded_on_an_endless_line():
    segmenter = PolicySegmenter()
    for piece in ("=" * 10_000, "x " * 5_000, "─" * 10_000):
        for _ in range(50):
            segmenter.feed(piece)
            assert len(segmenter._line) <= LINE_DECIDE
        segmenter.feed("\n")
    segmenter.finish()


# ---- by kind --------------------------------------------------------------------------------------------------
def test_a_block_the_markup_calls_code_is_announced_by_its_kind_whatever_its_lines():
    listing = "print('hello')\nx = compute(it)\nreturn x"  # no line of it looks like code to the guesser
    assert said(listing) == [listing]
    for kind, word in (("code", "Code example."), ("session", "Session example."), ("diagram", "Diagram."),
                       ("formula", "Formula.")):
        [segment] = policy_segments(listing, kinds=kind)
        assert (segment.start, segment.end, segment.speech) == (0, len(listing), word)
    assert [s.speech for s in policy_segments(listing, READ_ALL, kinds="code")] == said(listing)


def test_prose_the_markup_marks_is_not_guessed():
    line = "$ apt install foo"
    assert said(line) == [CODE_ANNOUNCEMENT]
    assert [s.speech for s in policy_segments(line, kinds="prose")] == [line]
    assert [s.speech for s in policy_segments(line, kinds="list-item")] == [line]


def test_kinds_at_offsets_decide_each_block():
    text = "Some prose here.\n\nint main() {\nreturn 0;\n}\n\nA note on it.\n\nMore prose."
    spans = [(0, 16, "prose"), (18, 42, "code"), (44, 57, "footnote"), (59, 70, "prose")]
    assert [text[s:e] for s, e, _ in spans] == text.split("\n\n")

    def kind_at(at: int) -> str:
        return next((k for s, e, k in spans if s <= at < e), "paragraph")

    segments = policy_segments(text, kinds=kind_at)
    assert [s.speech for s in segments] == ["Some prose here.", "Code example.", "Footnote: A note on it.",
                                            "More prose."]
    assert [text[s.start:s.end] for s in segments] == text.split("\n\n")  # the code's span is the whole block
    skipped = policy_segments(text, ReadingPolicy(footnotes="skip"), kinds=kind_at)
    assert [s.speech for s in skipped] == ["Some prose here.", "Code example.", "More prose."]


def test_a_table_row_says_a_word_for_a_cell_of_symbols():
    row = "Format: EPUB; Read: ✓; Write: ✗; Notes: —; Rating: ★"
    assert [s.speech for s in policy_segments(row, kinds="table-row")] == [
        "Format: EPUB; Read: yes; Write: no; Notes: none; Rating: black star"]
    assert said(row) == ["Format: EPUB; Read: ✓; Write: ✗; Notes: —; Rating: ★"]  # outside a table: as written


@pytest.mark.parametrize(("written", "spoken"), [
    ("A key of 2²⁵⁶ bits.", "A key of 2 to the power 256 bits."),
    ("It is 10⁻³ of it.", "It is 10 to the power minus 3 of it."),
    ("Then x² + y³ = 1.", "Then x squared + y cubed = 1."),
    ("An area of 3 km².", "An area of 3 km squared."),
    ("As Smith¹ wrote.", "As Smith wrote."),  # a mark: its note is read after the paragraph
    ("Plain 2256 digits.", "Plain 2256 digits."),
])
def test_superscripts_are_said_as_powers_after_a_number_and_as_nothing_after_a_word(written, spoken):
    assert said(written) == [spoken]


def test_a_footnote_choice_is_checked():
    with pytest.raises(ValueError, match="footnotes"):
        ReadingPolicy(footnotes="sometimes")


ANNOUNCEMENTS = {CODE_ANNOUNCEMENT, DIAGRAM_ANNOUNCEMENT, "Session example.", "Formula."}
_KINDS = st.sampled_from(["paragraph", "prose", "heading", "code", "session", "table-row", "formula", "diagram",
                          "footnote", "list-item", "definition"])


@settings(max_examples=200, deadline=None)
@given(blocks=st.lists(st.tuples(st.lists(_LINES.filter(lambda line: re.search(r"\w", line)), min_size=1,
                                          max_size=4), _KINDS), max_size=12),
       cuts=st.lists(st.integers(0, 3000), max_size=10), start=st.integers(0, 10**6),
       read_code=st.booleans(), skip_notes=st.booleans())
def test_blocks_of_any_kinds_give_the_same_segments_however_the_text_arrives(blocks, cuts, start, read_code,
                                                                             skip_notes):
    """Blocks as a document's text holds them (separated by blank lines, each of a kind, each with a word, as the
    readers' cleaning leaves them): the segments do not
    depend on how the text is fed, lie in order within their blocks, and say every word of each block the policy
    reads as prose (a note's lead aside), nothing of a skipped note."""
    text, spans, at = "", [], start
    for lines, kind in blocks:
        body = "\n".join(lines)
        if text:
            text, at = text + "\n\n", at + 2
        spans.append((at, at + len(body), kind))
        text, at = text + body, at + len(body)

    def kind_at(offset: int) -> str:
        return next((k for s, e, k in spans if s <= offset < e), "paragraph")

    policy = ReadingPolicy(read_urls=True, read_code=read_code, footnotes="skip" if skip_notes else "paragraph-end")
    whole = policy_segments(text, policy, start=start, kinds=kind_at)
    bounds = sorted({min(c, len(text)) for c in cuts} | {0, len(text)})
    segmenter = PolicySegmenter(policy, start, kinds=kind_at)
    got = []
    for a, b in zip(bounds, bounds[1:], strict=False):
        got += segmenter.feed(text[a:b])
    got += segmenter.finish()
    assert got == whole
    for seg in whole:
        block = next((s, e, k) for s, e, k in spans if s <= seg.start < e)
        # an announcement stands for a run of code blocks; anything else stays within its block, but where the format
        # says nothing of either block (plain text), as the segmenter cuts text without a policy
        spanned = {k for s, e, k in spans if s < seg.end and e > seg.start}
        assert seg.speech.strip() and (seg.end <= block[1] or seg.speech in ANNOUNCEMENTS or spanned == {"paragraph"})
        assert not (skip_notes and block[2] == "footnote")
    for s, e, kind in spans:
        said = " ".join(seg.speech for seg in whole if s <= seg.start < e)
        read = kind in ("prose", "heading", "list-item", "definition") or kind == "footnote" and not skip_notes \
            or read_code and kind in ("code", "session", "formula", "diagram")
        if read:  # every word as written (URLs in full here), a note's lead aside
            words = re.findall(r"\w+", said.removeprefix("Footnote: "))
            assert words == re.findall(r"\w+", text[s - start:e - start])
