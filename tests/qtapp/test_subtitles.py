"""SRT timestamps, wrapping and the streaming writer."""

from __future__ import annotations

import io
import re

import pytest

from qtapp.subtitles import Cue, SrtWriter, format_timestamp, wrap_cue_text


@pytest.mark.parametrize("seconds, text", [
    (0.0, "00:00:00,000"),
    (1.2345, "00:00:01,234"),
    (59.9996, "00:01:00,000"),
    (3661.5, "01:01:01,500"),
    (-0.2, "00:00:00,000"),
])
def test_format_timestamp(seconds, text):
    assert format_timestamp(seconds) == text


def test_wrap_keeps_lines_short_and_words_whole():
    text = "A fairly long sentence   that\nclearly needs more than one line of subtitle text to show."
    lines = wrap_cue_text(text).split("\n")
    assert len(lines) == 3  # 86 characters
    assert all(len(line) <= 42 for line in lines)
    assert " ".join(lines) == " ".join(text.split())


def test_writer_numbers_cues_and_writes_them_at_once():
    buffer = io.StringIO()
    writer = SrtWriter(buffer)
    writer.write(Cue(0.0, 1.5, "Hello there."))
    assert buffer.getvalue() == "1\n00:00:00,000 --> 00:00:01,500\nHello there.\n\n"
    writer.write(Cue(1.5, 62.25, "How are you?"))
    blocks = buffer.getvalue().strip().split("\n\n")
    assert [b.split("\n")[0] for b in blocks] == ["1", "2"]
    assert re.fullmatch(r"00:00:01,500 --> 00:01:02,250", blocks[1].split("\n")[1])
    assert writer.count == 2


def test_writer_refuses_a_cue_that_ends_before_it_starts():
    with pytest.raises(ValueError):
        SrtWriter(io.StringIO()).write(Cue(2.0, 1.0, "backwards"))
