"""SubRip and WebVTT: timestamps, escaping, long cues cut into two-line pieces, chapters, and files that parse."""

from __future__ import annotations

import io
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.production.subtitles import (
    LINE_WIDTH,
    MAX_LINES,
    Cue,
    SrtWriter,
    VttWriter,
    chapters_vtt,
    split_cue,
    srt_timestamp,
    subtitle_writer,
    vtt_timestamp,
    wrap_cue_text,
)

SRT_BLOCK = re.compile(r"(\d+)\n(\d\d:\d\d:\d\d,\d\d\d) --> (\d\d:\d\d:\d\d,\d\d\d)\n((?:.+\n)+)\n")
VTT_CUE = re.compile(r"(\d+)\n(\d\d:\d\d:\d\d\.\d\d\d) --> (\d\d:\d\d:\d\d\.\d\d\d)\n((?:.+\n)+)\n")


def seconds(stamp: str) -> float:
    h, m, s = stamp.replace(",", ".").split(":")
    return int(h) * 3600 + int(m) * 60 + float(s)


@pytest.mark.parametrize("value, srt, vtt", [
    (0.0, "00:00:00,000", "00:00:00.000"),
    (1.2345, "00:00:01,234", "00:00:01.234"),
    (59.9996, "00:01:00,000", "00:01:00.000"),
    (3661.5, "01:01:01,500", "01:01:01.500"),
    (-0.2, "00:00:00,000", "00:00:00.000"),
    (360_000.0, "100:00:00,000", "100:00:00.000"),
])
def test_timestamps(value, srt, vtt):
    assert srt_timestamp(value) == srt and vtt_timestamp(value) == vtt


def test_srt_cues_are_numbered_wrapped_and_parse_back():
    out = io.StringIO()
    writer = SrtWriter(out)
    writer.write(Cue(0.0, 1.5, "Hello there."))
    writer.chapter("Chapter Two", 1.5)  # SubRip has no place for it
    writer.write(Cue(2.0, 4.0, "A somewhat longer\nsentence   that wraps onto a second line --> here."))
    blocks = SRT_BLOCK.findall(out.getvalue())
    assert len(blocks) == writer.count == 2 and SRT_BLOCK.sub("", out.getvalue()) == ""
    assert [b[0] for b in blocks] == ["1", "2"]
    assert all(len(line) <= LINE_WIDTH for b in blocks for line in b[3].splitlines())
    assert "-->" not in blocks[1][3] and "Chapter" not in out.getvalue()


@pytest.mark.parametrize("kind", ["srt", "vtt"])
def test_a_numbered_cue_keeps_its_number_and_stays_whole(kind):
    out = io.StringIO()
    writer = subtitle_writer(kind, out)
    long = "A line of a voiceover far longer than two subtitle lines can hold, so an export would split it."
    writer.write(Cue(0.5, 2.0, "First.", 1))
    writer.write(Cue(4.0, 9.0, long, 5))
    text = out.getvalue()
    assert writer.count == 2
    assert re.findall(r"^(\d+)\n\d\d:", text, re.MULTILINE) == ["1", "5"]
    assert " ".join(text.split("\n5\n", 1)[1].split("\n")[1:]).split() == long.split()


def test_vtt_has_its_header_escapes_markup_and_notes_chapters():
    out = io.StringIO()
    writer = subtitle_writer("vtt", out)
    writer.chapter("Part <One> & all", 0.0)
    writer.write(Cue(0.0, 1.0, "Fish & chips <b>now</b>"))
    text = out.getvalue()
    assert text.startswith("WEBVTT\n\n")
    assert "NOTE Chapter at 00:00:00.000: Part <One> & all\n\n" in text  # a comment: read by no parser
    cue = VTT_CUE.findall(text)[0]
    assert cue[3] == "Fish &amp; chips &lt;b&gt;now&lt;/b&gt;\n"


def test_a_cue_that_ends_before_it_starts_is_refused():
    with pytest.raises(ValueError):
        SrtWriter(io.StringIO()).write(Cue(2.0, 1.0, "Backwards."))
    with pytest.raises(ValueError):
        subtitle_writer("ass", io.StringIO())


def test_a_long_sentence_becomes_several_two_line_cues_covering_its_time():
    text = ("It was the best of times, it was the worst of times, it was the age of wisdom, it was the age of "
            "foolishness, it was the epoch of belief, it was the epoch of incredulity.")
    out = io.StringIO()
    writer = VttWriter(out)
    writer.write(Cue(10.0, 20.0, text))
    cues = VTT_CUE.findall(out.getvalue())
    assert len(cues) == writer.count >= 2
    assert all(len(c[3].splitlines()) <= MAX_LINES for c in cues)
    assert seconds(cues[0][1]) == 10.0 and seconds(cues[-1][2]) == 20.0
    assert all(seconds(a[2]) == seconds(b[1]) for a, b in zip(cues, cues[1:], strict=False))
    assert cues[0][3].replace("\n", " ").strip().endswith(",")  # cut after a clause, not mid-phrase
    assert " ".join(c[3].replace("\n", " ").strip() for c in cues) == text


@settings(max_examples=80, deadline=None)
@given(st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=400),
       st.floats(0, 1e5), st.floats(0, 100))
def test_split_cue_keeps_every_word_in_order_and_the_time_span(text, start, length):
    cue = Cue(start, start + length, text)
    pieces = split_cue(cue)
    assert " ".join(p.text for p in pieces) == " ".join(text.split())
    assert pieces[0].start_s == start and abs(pieces[-1].end_s - cue.end_s) < 1e-6
    for piece in pieces:
        assert piece.start_s <= piece.end_s
        assert len(piece.text) <= LINE_WIDTH * MAX_LINES or " " not in piece.text
    for kind in ("srt", "vtt"):
        out = io.StringIO()
        subtitle_writer(kind, out).write(cue)
        assert "\n\n\n" not in out.getvalue()  # no cue text makes a blank line, which would end the cue early


def test_wrap_collapses_whitespace_and_an_empty_text_shows_an_ellipsis():
    assert wrap_cue_text("  one \n two\t") == "one two"
    assert wrap_cue_text("   ") == "…"


def test_chapters_track():
    track = chapters_vtt([("One", 0.0, 61.5), ("Two & more", 61.5, 3700.25)])
    assert track.startswith("WEBVTT\n\n")
    cues = VTT_CUE.findall(track)
    assert [(c[1], c[2], c[3]) for c in cues] == [("00:00:00.000", "00:01:01.500", "One\n"),
                                                  ("00:01:01.500", "01:01:40.250", "Two &amp; more\n")]
