"""Voice marks (engine.core.text.voice_marks) read as before, and a mark that never closes costs time linear in its
line."""

from __future__ import annotations

import pytest

from engine.core.text.voice_marks import mark_names, parse_mark


@pytest.mark.parametrize(("line", "expected"), [
    ("[voice: Ann] Who is there?", ("Ann", 13)),
    ("  [Voice:Old Tom]  Only me.", ("Old Tom", 19)),
    ("[voice:   Ann   ]", ("Ann", 17)),
    ("[voice: ] Nobody.", (None, 0)),
    ("[voice: Ann", (None, 0)),
    ("Text [voice: Ann] inside.", (None, 0)),
    ("[voice: Ann\n] split over lines", (None, 0)),
])
def test_marks_are_read_at_a_line_start(line, expected):
    assert parse_mark(line) == expected


def test_a_mark_that_never_closes_over_a_long_line_is_no_mark():
    # a hundred thousand spaces: read once, as a pattern that backtracks over them would not finish
    for filler in (" " * 100_000, " \t" * 50_000, "a " * 50_000):
        assert parse_mark("[voice:" + filler) == (None, 0)
    assert mark_names("[voice:" + " " * 100_000 + "\n[voice: Ann] Hi.") == {"Ann"}
