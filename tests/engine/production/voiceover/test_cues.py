"""Subtitle files read for a voiceover (engine.production.voiceover.cues): what real files hold is read, what cannot be
voiced is refused with a SubtitleError that says where, and no input makes the parser fail any other way."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engine.production.voiceover.cues import (
    MAX_CUES,
    MAX_FILE_BYTES,
    MAX_TOTAL_CHARS,
    SubtitleError,
    clean_text,
    parse_subtitles,
    read_subtitles,
)

SRT = ("\ufeff1\r\n00:00:01,000 --> 00:00:02,500\r\n<i>Hello</i> there,\r\nfriend &amp; co.\r\n\r\n"
       "2\r\n00:00:02,000 --> 00:00:03,000 X1:10 X2:20\r\n[voice: Ryan] Overlap.\r\n\r\n"
       "3\r\n00:00:4,00 --> 00:00:05,000\r\nBad timing.\r\n\r\n"
       "4\r\n00:00:06.000 --> 00:00:06,500\r\n{\\an8}<font color=\"red\">Café 日本</font>\r\n")
VTT = ("WEBVTT - a title\n\nNOTE written by hand\n\nSTYLE\n::cue { color: red }\n\n"
       "intro\n00:01.000 --> 00:02.000 align:start position:10%\n<v.loud Mary Jane>Hi <c.x>there</c></v>\n\n"
       "00:00:03.000 --> 00:00:04.000\n<00:00:03.500>Two &lt;lines&gt;\nhere\n")


def test_a_real_world_srt_is_read():
    subtitles = parse_subtitles(SRT.encode("utf-8"), "srt")
    assert [(c.number, c.start_s, c.end_s, c.text, c.voice) for c in subtitles.cues] == [
        (1, 1.0, 2.5, "Hello there, friend & co.", None),
        (2, 2.0, 3.0, "Overlap.", "Ryan"),
        (4, 6.0, 6.5, "Café 日本", None)]
    assert len(subtitles.warnings) == 1 and "cue 3" in subtitles.warnings[0] and "line 11" in subtitles.warnings[0]


def test_a_real_world_vtt_is_read():
    subtitles = parse_subtitles(VTT, "vtt")
    assert [(c.start_s, c.end_s, c.text, c.voice) for c in subtitles.cues] == [
        (1.0, 2.0, "Hi there", "Mary Jane"), (3.0, 4.0, "Two <lines> here", None)]


def test_windows_1252_and_utf16_files_are_read(tmp_path):
    path = tmp_path / "old.srt"
    path.write_bytes("1\n00:00:01,000 --> 00:00:02,000\nCafé déjà vu\n".encode("cp1252"))
    assert read_subtitles(path).cues[0].text == "Café déjà vu"
    path.write_bytes("1\n00:00:01,000 --> 00:00:02,000\n日本語\n".encode("utf-16"))
    assert read_subtitles(path).cues[0].text == "日本語"


def test_a_voice_mark_wins_over_a_v_tag_and_neither_is_spoken():
    assert clean_text("[voice: Ryan] <v Anna>Hello</v>") == ("Hello", "Ryan")
    assert clean_text("<v   Anna  Lee >Hi") == ("Hi", "Anna Lee")
    assert clean_text("a [voice: Ryan] b") == ("a [voice: Ryan] b", None)  # a mark inside a line is text


@pytest.mark.parametrize(("data", "said"), [
    (b"\x00\x01\x02binary" * 100, "binary"),
    (b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 4, "binary"),
    (b"1\n00:00:02,000 --> 00:00:03,000\nB\n\n2\n00:00:01,000 --> 00:00:04,000\nA\n", "out of order"),
    (b"1\n00:00:03,000 --> 00:00:02,000\nBackwards\n", "ends before it starts"),
    (b"1\n-00:00:01,000 --> 00:00:02,000\nNegative\n", "negative"),
    (b"1\n100:00:00,000 --> 100:00:02,000\nA hundred hours in\n", "hour limit"),
    (b"1\n00:00:01,000 --> 00:00:75,000\nSeventy-five seconds\n", "run to 59"),
    (b"just some text\nwith no timings at all\n", "no cue"),
    (b"", "no cue"),
])
def test_files_that_cannot_be_voiced_are_refused_saying_why(data, said):
    with pytest.raises(SubtitleError, match=said):
        parse_subtitles(data, "srt")


def test_the_text_of_all_cues_together_is_bounded():
    per_cue = 1_000

    def srt(count: int, extra: str = "") -> str:
        return "".join(f"{i + 1}\n00:{i // 60:02d}:{i % 60:02d},000 --> 00:{i // 60:02d}:{i % 60:02d},500\n"
                       f"{'x' * per_cue}{extra if i == count - 1 else ''}\n\n" for i in range(count))

    count = MAX_TOTAL_CHARS // per_cue
    assert sum(len(c.text) for c in parse_subtitles(srt(count), "srt").cues) == MAX_TOTAL_CHARS
    with pytest.raises(SubtitleError, match=rf"line {4 * count - 2} \(cue {count}\).*more than 120,000 characters"):
        parse_subtitles(srt(count, "y"), "srt")


def test_a_vtt_without_its_header_is_refused():
    with pytest.raises(SubtitleError, match="WEBVTT"):
        parse_subtitles(b"00:01.000 --> 00:02.000\nHi\n", "vtt")


def test_a_huge_file_is_refused_before_it_is_read_whole(tmp_path):
    path = tmp_path / "huge.srt"
    block = b"1\n00:00:01,000 --> 00:00:02,000\nHello.\n\n"
    path.write_bytes(block * (MAX_FILE_BYTES // len(block) + 10))
    with pytest.raises(SubtitleError, match="larger than"):
        read_subtitles(path)


def test_too_many_cues_are_refused():
    blocks = "".join(f"{_stamp(i * 100)} --> {_stamp(i * 100 + 50)}\nx\n\n" for i in range(MAX_CUES + 1))
    with pytest.raises(SubtitleError, match="more than"):
        parse_subtitles(blocks, "srt")


def test_a_cue_of_a_million_spaces_after_an_open_mark_is_refused_as_too_long():
    # the voice mark's pattern backtracks quadratically over such a run: it is never given one
    data = "1\n00:00:01,000 --> 00:00:02,000\n[voice:" + " " * 1_000_000 + "x\n"
    with pytest.raises(SubtitleError, match="characters"):
        parse_subtitles(data, "srt")
    mark = "1\n00:00:01,000 --> 00:00:02,000\n[voice:" + " " * 5000 + "\nHello.\n"
    assert parse_subtitles(mark, "srt").cues[0].voice is None


def test_other_suffixes_are_refused(tmp_path):
    path = tmp_path / "script.txt"
    path.write_text("1\n00:00:01,000 --> 00:00:02,000\nHi\n")
    with pytest.raises(SubtitleError, match=".srt or .vtt"):
        read_subtitles(path)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.binary(max_size=2000), st.sampled_from(["srt", "vtt"]))
def test_any_bytes_give_cues_or_a_subtitle_error(data, kind):
    try:
        subtitles = parse_subtitles(data, kind)
    except SubtitleError as e:
        assert str(e)
    else:
        assert subtitles.cues


_time = st.integers(min_value=-5_000, max_value=400 * 3600 * 1000)


def _stamp(millis: int) -> str:
    sign, millis = ("-" if millis < 0 else ""), abs(millis)
    return f"{sign}{millis // 3_600_000:02d}:{millis // 60_000 % 60:02d}:{millis // 1000 % 60:02d},{millis % 1000:03d}"


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(_time, _time, st.text(max_size=30)), min_size=1, max_size=8))
def test_timed_cues_are_kept_only_when_in_order_and_in_range(cues):
    text = "".join(f"{i}\n{_stamp(a)} --> {_stamp(b)}\n{words}\n\n" for i, (a, b, words) in enumerate(cues, 1))
    try:
        subtitles = parse_subtitles(text, "srt")
    except SubtitleError as e:
        assert str(e)
        return
    starts = [c.start_s for c in subtitles.cues]
    assert starts == sorted(starts)
    for cue in subtitles.cues:
        assert 0 <= cue.start_s <= cue.end_s <= 2 * 3600
        assert cue.text and "\n" not in cue.text
