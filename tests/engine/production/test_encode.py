"""Encoders and containers: every format decodes back to its length, with its tags, chapters and cover read back
by independent readers (PyAV's demuxers, mutagen); files appear whole with the umask's permissions or not at all."""

from __future__ import annotations

import io
import os
import struct
import zlib
from pathlib import Path

import av
import mutagen
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.atomic_files import TEMP_PREFIX
from engine.errors import UnsupportedError
from engine.production import encode
from engine.production.audio_formats import FORMATS, audio_format
from engine.production.audio_metadata import (
    MAX_CHAPTER_TITLE_BYTES,
    MAX_TAG_CHARS,
    ChapterMark,
    Cover,
    Tags,
    clean_tag,
    normalized_chapters,
)
from engine.production.encode import FileEncoder, StreamEncoder, encode_bytes
from engine.production.mux_pipeline import MuxPipeline

RATE = 24000
# Samples a decoder may add: the last codec frame's padding (AAC 1024, MP3 1152, Opus 20 ms at 48 kHz), and for
# ADTS the encoder's 1024-sample delay too, which only MP4 has a field (its edit list) to skip.
FRAME = {"aac": 2048, "m4a": 1024, "m4b": 1024, "mp3": 1152, "opus": 480}
TAGS = Tags(title="The Book", author="Ann Author", narrator="vivian", genre="Audiobook", track=(2, 7))
MARKS = [ChapterMark("Opening", 0.0), ChapterMark("The Middle", 1.25), ChapterMark("The End", 2.5)]
WITH_CHAPTERS = ("flac", "mp3", "opus", "m4a", "m4b")
WITH_COVER = ("flac", "mp3", "opus", "m4a", "m4b")


def tone(seconds: float = 3.0) -> np.ndarray:
    t = np.arange(int(RATE * seconds)) / RATE
    return (0.3 * np.sin(2 * np.pi * 220 * t)).astype(np.float32)


def png(width: int = 3, height: int = 2) -> bytes:
    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    rows = b"".join(b"\0" + b"\x10\x80\xf0" * width for _ in range(height))
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(rows)) + chunk(b"IEND", b""))


def decoded(path_or_bytes, name: str) -> tuple[int, int, list[tuple[float, str]]]:
    """(samples at the stream's own rate, that rate, chapters) as FFmpeg's demuxers read them."""
    source = io.BytesIO(path_or_bytes) if isinstance(path_or_bytes, bytes) else str(path_or_bytes)
    with av.open(source) as container:
        rate = container.streams.audio[0].sample_rate
        count = sum(frame.samples for frame in container.decode(audio=0))
        chapters = [(float(c["start"] * c["time_base"]), c["metadata"].get("title", "")) for c in container.chapters()]
    return count, rate, chapters


def assert_duration(name: str, count: int, rate: int, expected: int) -> None:
    extra = FRAME.get(name, 0) * rate // RATE
    assert expected * rate // RATE <= count <= expected * rate // RATE + extra, (name, count, expected)


def encode_file(path: Path, samples: np.ndarray, late: bool, **kwargs) -> Path:
    with FileEncoder(path, chapters=None if late else MARKS, **kwargs) as encoder:
        for at in range(0, len(samples), 5000):  # chunks unrelated to any codec frame
            encoder.write(samples[at:at + 5000])
        return encoder.finish(MARKS if late else None)


def leftovers(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name.startswith(TEMP_PREFIX) or p.suffix == ".part")


# ---- formats, lengths, chapters, tags, cover -------------------------------------------------------------------
@pytest.mark.parametrize("name", sorted(FORMATS))
def test_every_format_decodes_to_its_length(name, tmp_path):
    samples = tone()
    path = encode_file(tmp_path / f"book.{name}", samples, late=False, tags=TAGS)
    count, rate, _ = decoded(path, name)
    assert_duration(name, count, rate, len(samples))
    assert leftovers(tmp_path) == []


@pytest.mark.parametrize("name", WITH_CHAPTERS)
@pytest.mark.parametrize("late", [False, True], ids=["known-first", "given-at-finish"])
def test_chapters_read_back_with_titles_and_start_times(name, late, tmp_path):
    path = encode_file(tmp_path / f"book.{name}", tone(), late=late, tags=TAGS)
    _, _, chapters = decoded(path, name)
    assert [title for _, title in chapters] == [m.title for m in MARKS]
    np.testing.assert_allclose([start for start, _ in chapters], [m.start_s for m in MARKS], atol=0.001)
    assert leftovers(tmp_path) == []


def test_m4b_chapters_tags_and_cover_through_mutagen(tmp_path):
    image = png()
    path = encode_file(tmp_path / "book.m4b", tone(), late=True, tags=TAGS, cover=Cover.from_bytes(image))
    mp4 = mutagen.File(path)
    assert type(mp4).__name__ == "MP4" and path.read_bytes()[8:12] == b"M4B "
    assert [(c.title, round(c.start, 3)) for c in mp4.chapters] == [(m.title, m.start_s) for m in MARKS]
    assert mp4.tags["©nam"] == ["The Book"] and mp4.tags["©ART"] == ["Ann Author"]
    assert mp4.tags["©wrt"] == ["vivian"] and mp4.tags["trkn"] == [(2, 7)] and mp4.tags["©gen"] == ["Audiobook"]
    assert bytes(mp4.tags["covr"][0]) == image
    assert abs(mp4.info.length - 3.0) <= 1024 / RATE + 1e-9


def test_mp3_chapters_tags_and_cover_through_mutagen(tmp_path):
    image = png()
    path = encode_file(tmp_path / "book.mp3", tone(), late=True, tags=TAGS, cover=Cover.from_bytes(image))
    id3 = mutagen.File(path).tags
    chapters = sorted(id3.getall("CHAP"), key=lambda c: c.start_time)
    assert [(c.sub_frames["TIT2"].text[0], c.start_time) for c in chapters] == [
        ("Opening", 0), ("The Middle", 1250), ("The End", 2500)]
    assert chapters[-1].end_time == 3000
    assert id3["TIT2"].text == ["The Book"] and id3["TPE1"].text == ["Ann Author"]
    assert id3["TCOM"].text == ["vivian"] and id3["TXXX:narrator"].text == ["vivian"]
    assert id3.getall("APIC")[0].data == image


@pytest.mark.parametrize("name", ["opus", "flac"])
def test_vorbis_comment_formats_carry_tags_chapters_and_cover(name, tmp_path):
    image = png(5, 4)
    path = encode_file(tmp_path / f"book.{name}", tone(), late=True, tags=TAGS, cover=Cover.from_bytes(image))
    audio = mutagen.File(path)
    tags = audio.tags
    assert tags["title"] == ["The Book"] and tags["artist"] == ["Ann Author"] and tags["narrator"] == ["vivian"]
    assert tags["chapter002"] == ["00:00:01.250"] and tags["chapter002name"] == ["The Middle"]
    if name == "flac":
        picture = audio.pictures[0]
    else:
        from base64 import b64decode

        from mutagen.flac import Picture

        picture = Picture(b64decode(tags["metadata_block_picture"][0]))
    assert (picture.data, picture.mime, picture.width, picture.height, picture.type) == (image, "image/png", 5, 4, 3)


def test_formats_without_chapters_or_cover_take_them_and_leave_them_out(tmp_path):
    for name in ("wav", "aac"):
        path = encode_file(tmp_path / f"book.{name}", tone(1.0), late=True, tags=TAGS, cover=Cover.from_bytes(png()))
        count, rate, chapters = decoded(path, name)
        assert chapters == []
        assert_duration(name, count, rate, RATE)


def test_the_same_audio_gives_the_same_bytes(tmp_path):
    """No encoder version or time in the output: a resumed export can equal an uninterrupted one."""
    for name in ("m4b", "mp3", "opus", "flac"):
        for late in (False, True):
            first = encode_file(tmp_path / f"a.{name}", tone(1.0), late=late, tags=TAGS).read_bytes()
            again = encode_file(tmp_path / f"b.{name}", tone(1.0), late=late, tags=TAGS).read_bytes()
            assert again == first, (name, late)


def test_jpeg_cover_size_is_read_from_its_frame_header():
    jpeg = (b"\xff\xd8\xff\xe0" + struct.pack(">H", 16) + b"JFIF\0" + bytes(9)
            + b"\xff\xc0" + struct.pack(">HBHHB", 11, 8, 48, 64, 1) + bytes(3) + b"\xff\xd9")
    cover = Cover.from_bytes(jpeg)
    assert (cover.mime, cover.width, cover.height) == ("image/jpeg", 64, 48)


@pytest.mark.parametrize("data", [b"GIF89a....", b"", b"not an image at all"])
def test_a_cover_that_is_no_jpeg_or_png_is_refused(data, tmp_path):
    with pytest.raises(UnsupportedError, match="JPEG or PNG"):
        Cover.from_bytes(data)
    (tmp_path / "cover.gif").write_bytes(data)
    with pytest.raises(UnsupportedError):
        Cover.from_file(tmp_path / "cover.gif")
    with pytest.raises(UnsupportedError, match="cannot read"):
        Cover.from_file(tmp_path / "missing.png")


# ---- files: permissions, atomic rename, nothing left after a failure -------------------------------------------
@pytest.mark.parametrize("umask", [0o022, 0o027])
def test_files_get_the_umasks_permissions(umask, tmp_path):
    old = os.umask(umask)
    try:
        path = encode_file(tmp_path / "book.mp3", tone(0.5), late=True, tags=TAGS)
    finally:
        os.umask(old)
    assert path.stat().st_mode & 0o777 == 0o666 & ~umask


def test_an_encoder_failing_midway_leaves_no_file_and_the_old_target_intact(tmp_path, monkeypatch):
    target = tmp_path / "book.m4b"
    target.write_bytes(b"the previous export")
    writes = 0
    real_write = MuxPipeline.write

    def failing_write(self, samples):
        nonlocal writes
        writes += 1
        if writes == 3:
            raise OSError(28, "No space left on device")
        real_write(self, samples)

    monkeypatch.setattr(MuxPipeline, "write", failing_write)
    with pytest.raises(OSError, match="No space"):
        encode_file(target, tone(), late=True, tags=TAGS)
    assert target.read_bytes() == b"the previous export"
    assert leftovers(tmp_path) == []


@pytest.mark.parametrize("name", ["mp3", "m4b"])
def test_a_failure_while_finishing_leaves_nothing(name, tmp_path, monkeypatch):
    def broken(*args, **kwargs):
        raise RuntimeError("remux failed")

    monkeypatch.setattr(encode, "remux", broken)
    monkeypatch.setattr(MuxPipeline, "set_chapters", broken)
    with pytest.raises(RuntimeError, match="remux failed"):
        encode_file(tmp_path / f"book.{name}", tone(1.0), late=True)
    assert list(tmp_path.iterdir()) == []


def test_ctrl_c_inside_the_block_removes_the_temporary_file(tmp_path):
    with pytest.raises(KeyboardInterrupt), FileEncoder(tmp_path / "book.opus") as encoder:
        encoder.write(tone(0.5))
        assert len(leftovers(tmp_path)) == 1 and encoder.temp_paths[0].exists()
        raise KeyboardInterrupt
    assert list(tmp_path.iterdir()) == []


def test_an_unwritable_folder_fails_at_once(tmp_path):
    (tmp_path / "a-file").write_text("not a folder")
    with pytest.raises(OSError):
        FileEncoder(tmp_path / "a-file" / "book.mp3")


def test_unknown_formats_are_refused_with_the_list(tmp_path):
    with pytest.raises(UnsupportedError, match="m4b"):
        FileEncoder(tmp_path / "book.ogg")
    assert audio_format("x.M4B").name == "m4b" and audio_format("mp3").name == "mp3"
    assert list(tmp_path.iterdir()) == []


def test_writing_after_finish_is_an_error(tmp_path):
    encoder = FileEncoder(tmp_path / "a.wav")
    encoder.finish()
    with pytest.raises(ValueError, match="closed"):
        encoder.write(tone(0.1))


# ---- streams --------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", ["wav", "mp3", "opus", "aac"])
def test_streams_send_before_the_end_and_decode_to_their_length(name):
    samples = tone(2.0)
    encoder = StreamEncoder(name)
    parts = [encoder.encode(samples[at:at + 1920]) for at in range(0, len(samples), 1920)]
    data = b"".join(parts) + encoder.finish()
    assert sum(len(p) for p in parts[:len(parts) // 2]) > 0
    count, rate, _ = decoded(data, name)
    # a streamed mp3 has no LAME tag to say its encoder delay (it would be written at the end, over its start)
    assert_duration("aac" if name == "mp3" else name, count, rate, len(samples))


def test_a_stream_of_a_seekable_only_format_is_refused():
    for name in ("flac", "m4b"):
        with pytest.raises(UnsupportedError, match="encode_bytes"):
            StreamEncoder(name)


@pytest.mark.parametrize("name", sorted(FORMATS))
def test_empty_and_nonfinite_audio_still_make_a_file(name):
    assert isinstance(encode_bytes(name, np.zeros(0, np.float32)), bytes)
    noisy = np.array([0.1, np.nan, np.inf, -np.inf, 3.0] * 2000, dtype=np.float32)
    count, rate, _ = decoded(encode_bytes(name, noisy), name)
    assert_duration(name, count, rate, len(noisy))


# ---- hostile tags and chapter lists ---------------------------------------------------------------------------
def test_huge_and_control_character_titles_are_cut_and_cleaned(tmp_path):
    title = "Chapter\x00 one\n\tof\x1b" + "x" * 50_000 + "\ud800"
    tags = Tags(title=title, author="A" * 100_000, narrator="n\x00")
    marks = [ChapterMark(title, 0.0), ChapterMark("é" * 70_000, 0.5)]
    path = tmp_path / "book.m4b"
    with FileEncoder(path, tags=tags) as encoder:
        encoder.write(tone(1.0))
        encoder.finish(marks)
    mp4 = mutagen.File(path)
    assert mp4.tags["©nam"][0].startswith("Chapter one of x") and len(mp4.tags["©nam"][0]) == MAX_TAG_CHARS
    assert mp4.tags["©wrt"] == ["n"]
    assert [len(c.title.encode()) for c in mp4.chapters] == [MAX_CHAPTER_TITLE_BYTES] * 2
    assert mp4.chapters[1].title.endswith("é…")
    assert clean_tag("a\ud800b") == "a\ufffdb"


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.floats(allow_nan=True, allow_infinity=True, width=32), st.text(max_size=30)),
                max_size=12),
       st.integers(0, 10 * RATE))
def test_normalized_chapters_are_ordered_inside_the_audio_and_never_empty(marks, total):
    chapters = normalized_chapters([ChapterMark(title, start) for start, title in marks], total)
    for title, start, end in chapters:
        assert 0 <= start < end <= total and title
    assert [c[1] for c in chapters] == sorted({c[1] for c in chapters})
    if chapters:
        assert chapters[-1][2] == total


@settings(max_examples=8, deadline=None)
@given(st.lists(st.tuples(st.floats(-5, 5), st.text(min_size=1, max_size=20)), max_size=6),
       st.sampled_from(["m4b", "mp3", "opus", "flac"]))
def test_any_chapter_list_writes_a_file_whose_chapters_read_back(marks, name):
    samples = tone(2.0)
    wanted = [ChapterMark(title, start) for start, title in marks]
    data = encode_bytes(name, samples, chapters=wanted)
    _, _, chapters = decoded(data, name)
    expected = normalized_chapters(wanted, len(samples))
    assert [title for _, title in chapters] == [title for title, _, _ in expected]


def test_without_pyav_encoding_is_refused_with_how_to_install_it(monkeypatch, tmp_path):
    import sys

    monkeypatch.setitem(sys.modules, "av", None)
    with pytest.raises(UnsupportedError, match=r"pip install 'orator\[audio\]'"):
        FileEncoder(tmp_path / "book.mp3")
    assert list(tmp_path.iterdir()) == []


def test_a_folder_named_like_a_protocol_and_non_ascii_names(tmp_path):
    folder = tmp_path / "http:odd" / "Ünïcødé 書"
    path = encode_file(folder / "book — 1.mp3", tone(0.5), late=True, tags=TAGS)
    assert path.exists() and decoded(path, "mp3")[0] >= 0.5 * RATE
