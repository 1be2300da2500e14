"""Books to audio files with the tiny synthetic model: chapters where the chapters start, tags, per-chapter files,
subtitles on the audio written, resume after an interruption to the same file, and nothing partial left behind."""

from __future__ import annotations

import json
import os
import re
import textwrap
import threading
from dataclasses import replace

import av
import mutagen
import numpy as np
import pytest

from engine import Voice
from engine.atomic_files import TEMP_PREFIX
from engine.core.text.segments import split_segments
from engine.production.book_export import BookExporter, ExportCancelled, segment_seed
from engine.production.book_structure import Pauses, book_from_text
from engine.production.export_leftovers import pending_record
from engine.production.export_plan import ExportOptions, chapter_file_name
from engine.production.segment_cache import SegmentCache
from tests.engine.production.test_encode import png
from tests.plans import PRECISIONS

RATE = 24000
BOOK = ("Chapter 1\n\nIt was late. The night was cold.\n\n"
        "Chapter 2\n\nMorning came. [voice: ryan] is not a mark here.\n\n[voice: ryan] Ryan speaks now.\n\n"
        "Chapter 3\n\nThe end came soon.\n")
OPTIONS = ExportOptions(format="m4b", max_frames=3, pauses=Pauses(0.1, 0.3, 0.5, 1.0))
SRT = re.compile(r"\d+\n(\d\d):(\d\d):(\d\d),(\d\d\d) --> (\d\d):(\d\d):(\d\d),(\d\d\d)\n((?:.+\n)+)\n")


class CountingEngine:
    """The engine, counting the segments it is asked to speak."""

    def __init__(self, engine):
        self._engine = engine
        self.calls: list[str] = []

    def stream(self, text, *args, **kwargs):
        # export gives each call its one planned segment; its written text is recorded
        self.calls.append(text if isinstance(text, str) else " ".join(seg.text for seg in text))
        return self._engine.stream(text, *args, **kwargs)

    def __getattr__(self, name):
        return getattr(self._engine, name)


@pytest.fixture
def engine(tiny_engine):
    return CountingEngine(tiny_engine("custom_voice"))


def voices():
    return {None: Voice.preset("vivian"), "ryan": Voice.preset("ryan")}


def export(engine, text, output, options=OPTIONS, cache=None, seed=5, progress=None, cancel=None, title="The Book"):
    book = book_from_text(text, title)
    book.author = "Ann Author"
    exporter = BookExporter(lambda voice: engine, sampling=replace(engine.defaults, seed=seed), cache=cache,
                            progress=progress, cancel=cancel)
    return exporter.run(exporter.plan(book, output, options, voices()), book, options)


def cues(path) -> list[tuple[float, float, str]]:
    out = []
    for m in SRT.finditer(path.read_text(encoding="utf-8")):
        g = [int(x) for x in m.groups()[:8]]
        out.append((g[0] * 3600 + g[1] * 60 + g[2] + g[3] / 1000, g[4] * 3600 + g[5] * 60 + g[6] + g[7] / 1000,
                    " ".join(m.group(9).split())))
    return out


def decoded_samples(path) -> int:
    with av.open(str(path)) as container:
        return sum(f.samples for f in container.decode(audio=0)) * RATE // container.streams.audio[0].sample_rate


def leftovers(folder) -> list[str]:
    return sorted(p.name for p in folder.rglob("*") if p.name.startswith(TEMP_PREFIX) or p.suffix == ".part")


def test_an_m4b_with_chapters_where_they_are_spoken_tags_cover_and_subtitles(engine, tmp_path):
    options = replace(OPTIONS, subtitles="srt", cover=png())
    [path] = export(engine, BOOK, tmp_path / "book.m4b", options)
    mp4 = mutagen.File(path)
    assert [c.title for c in mp4.chapters] == ["Chapter 1", "Chapter 2", "Chapter 3"]
    timed = cues(path.with_suffix(".srt"))
    heading_starts = [start for start, _, text in timed if re.fullmatch(r"Chapter \d", text)]
    np.testing.assert_allclose([c.start for c in mp4.chapters], heading_starts, atol=0.001)
    assert mp4.tags["©nam"] == ["The Book"] and mp4.tags["©ART"] == ["Ann Author"]
    assert mp4.tags["©wrt"] == ["vivian, ryan"] and mp4.tags["©gen"] == ["Audiobook"]
    assert bytes(mp4.tags["covr"][0]) == png()
    # one cue per sentence, in order, none for the mark; the audio ends with the last one
    assert [text for _, _, text in timed] == ["Chapter 1", "It was late. The night was cold.", "Chapter 2",
                                              "Morning came. [voice: ryan] is not a mark here.", "Ryan speaks now.",
                                              "Chapter 3", "The end came soon."]
    assert all(a[1] <= b[0] for a, b in zip(timed, timed[1:], strict=False))
    end = round(timed[-1][1] * RATE)
    assert end <= decoded_samples(path) <= end + 1024
    umask = os.umask(0)
    os.umask(umask)
    assert leftovers(tmp_path) == [] and path.stat().st_mode & 0o777 == 0o666 & ~umask


def test_per_chapter_mp3_files_for_a_chapter_selection(engine, tmp_path):
    options = replace(OPTIONS, format="mp3", per_chapter=True, chapters=(0, 2))
    paths = export(engine, BOOK, tmp_path / "out", options)
    assert [p.name for p in paths] == ["01 - Chapter 1.mp3", "02 - Chapter 3.mp3"]
    for number, path in enumerate(paths, 1):
        id3 = mutagen.File(path).tags
        assert id3["TRCK"].text == [f"{number}/2"] and id3["TALB"].text == ["The Book"]
        assert id3["TIT2"].text == [f"Chapter {2 * number - 1}"]
        assert decoded_samples(path) > 0
    assert not any("Chapter 2" in call or "Ryan" in call for call in engine.calls)


def test_opus_and_wav_last_as_long_as_what_was_written(engine, tmp_path):
    for fmt, extra in (("opus", 480), ("wav", 0), ("flac", 0)):
        [path] = export(engine, BOOK, tmp_path / f"book.{fmt}", replace(OPTIONS, format=fmt, subtitles="srt"))
        end = round(cues(path.with_suffix(".srt"))[-1][1] * RATE)
        assert end <= decoded_samples(path) <= end + extra, fmt


def test_a_hard_wrapped_text_exports_one_call_per_segment(engine, tmp_path):
    paragraph = ("The first sentence of this paragraph is long enough to wrap at seventy-two columns. The second "
                 "one follows it, and it too runs over the end of one line. A third ends it.")
    text = "\n\n".join([textwrap.fill(paragraph, 72)] * 2)
    [path] = export(engine, text, tmp_path / "wrapped.wav", replace(OPTIONS, format="wav", subtitles="srt"))
    segments = [s.text for s in split_segments(paragraph)] * 2
    assert len(segments) == 2  # a paragraph's three sentences are one segment
    assert engine.calls == segments
    # a segment longer than a cue holds is cut into several (engine.production.subtitles.split_cue)
    assert " ".join(text for _, _, text in cues(path.with_suffix(".srt"))) == " ".join(segments)


@pytest.fixture(params=PRECISIONS)
def plan_counting_engine(request, plan_engine):
    """``CountingEngine`` over each plan's engine."""
    return CountingEngine(plan_engine(request.param))


def test_an_interrupted_export_resumes_with_only_what_is_missing_and_gives_the_same_file(plan_counting_engine,
                                                                                           tmp_path):
    """On every plan: the segments kept are keyed on it (``segment_cache.model_key``), and resuming gives the file
    an uninterrupted export gives."""
    engine = plan_counting_engine
    [whole] = export(engine, BOOK, tmp_path / "whole" / "book.m4b", cache=SegmentCache(tmp_path / "cache-a"))
    total = len(engine.calls)
    engine.calls.clear()

    cache = SegmentCache(tmp_path / "cache-b")
    target = tmp_path / "resumed" / "book.m4b"

    def interrupt(progress):
        if progress.done_segments == 4:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        export(engine, BOOK, target, cache=cache, progress=interrupt)
    assert list(target.parent.iterdir()) == [] and len(engine.calls) == 4
    assert not list((cache.folder / "pending").glob("*"))
    engine.calls.clear()

    seen = []
    [resumed] = export(engine, BOOK, target, cache=cache, progress=seen.append)
    assert len(engine.calls) == total - 4
    assert resumed.read_bytes() == whole.read_bytes()
    assert seen[-1].done_segments == seen[-1].total_segments == total and seen[-1].eta_s == 0.0
    audio_s = [p.audio_s for p in seen]  # the audio written so far, pauses included
    assert audio_s == sorted(audio_s) and audio_s[0] > 0
    assert abs(audio_s[-1] - decoded_samples(resumed) / RATE) < 0.1  # the encoder's padding aside
    engine.calls.clear()

    edited = BOOK.replace("The end came soon.", "The end came at last.")
    export(engine, edited, target, cache=cache)
    assert engine.calls == ["The end came at last."]


def test_the_seed_of_a_segment_depends_on_its_text_not_its_place():
    assert segment_seed(5, "Hello.") == segment_seed(5, "Hello.") != segment_seed(5, "Hello!")
    assert segment_seed(5, "Hello.") != segment_seed(6, "Hello.")


def test_a_cancelled_export_leaves_nothing(engine, tmp_path):
    cancel = threading.Event()
    with pytest.raises(ExportCancelled):
        export(engine, BOOK, tmp_path / "book.mp3", replace(OPTIONS, format="mp3", subtitles="vtt"),
               progress=lambda p: cancel.set(), cancel=cancel)
    assert list(tmp_path.iterdir()) == []


def test_an_engine_failure_midway_leaves_nothing_and_keeps_what_was_done(engine, tmp_path):
    cache = SegmentCache(tmp_path / "cache")
    real = engine.stream

    def failing(text, *args, **kwargs):
        if len(engine.calls) == 3:
            raise RuntimeError("the device fell over")
        return real(text, *args, **kwargs)

    engine.stream = failing
    with pytest.raises(RuntimeError, match="fell over"):
        export(engine, BOOK, tmp_path / "out" / "book.m4b", replace(OPTIONS, subtitles="srt"), cache=cache)
    assert list((tmp_path / "out").iterdir()) == []
    assert len(list(cache.folder.glob("*/*.flac"))) == 3


def test_what_a_killed_export_left_is_removed_by_the_next(engine, tmp_path):
    cache = SegmentCache(tmp_path / "cache")
    target = tmp_path / "out" / "book.opus"
    target.parent.mkdir()
    orphan = target.parent / f"{TEMP_PREFIX}deadbeef.tmp"
    orphan.write_bytes(b"half a book")
    stranger = target.parent / f"{TEMP_PREFIX}someone-else.tmp"  # not recorded: another program's, kept
    stranger.write_bytes(b"not ours")
    record = pending_record(cache, target)
    record.parent.mkdir(parents=True)
    record.write_text(json.dumps([str(orphan), "/etc/passwd"]))
    export(engine, "Short text.", target, replace(OPTIONS, format="opus"), cache=cache)
    assert not orphan.exists() and stranger.exists() and target.exists() and not record.exists()


def test_chapter_file_names_are_safe_numbered_and_short():
    assert chapter_file_name(3, 12, "Part 1: The <Start>?", ".mp3") == "03 - Part 1 The Start.mp3"
    assert chapter_file_name(7, 120, "   ...   ", ".m4b") == "007 - Chapter 7.m4b"
    long = chapter_file_name(1, 2, "Ж" * 500 + "/" + "x" * 500, ".opus")
    assert len(long.encode("utf-8")) < 200 and long.startswith("01 - Ж") and "/" not in long
    assert chapter_file_name(1, 1, "a\x00b\nc", ".wav") == "01 - a b c.wav"


def test_a_book_whose_title_is_huge_still_exports(engine, tmp_path):
    title = "T" * 20_000
    text = f"Chapter {'Y' * 5000}\n\nWords here."
    paths = export(engine, text, tmp_path / "out", replace(OPTIONS, per_chapter=True), title=title)
    assert len(paths) == 1 and paths[0].exists()
    assert len(mutagen.File(paths[0]).tags["©alb"][0]) <= 1000


def test_planning_refuses_a_selection_outside_the_book(engine, tmp_path):
    book = book_from_text(BOOK, "b")
    exporter = BookExporter(lambda voice: engine)
    with pytest.raises(ValueError, match="3 chapters"):
        exporter.plan(book, tmp_path / "x.m4b", replace(OPTIONS, chapters=(3,)), voices())
    with pytest.raises(ValueError, match="no chapter"):
        exporter.plan(book, tmp_path / "x.m4b", replace(OPTIONS, chapters=()), voices())
    with pytest.raises(ValueError, match="no voice is given for 'ryan'"):
        exporter.plan(book, tmp_path / "x.m4b", OPTIONS, {None: Voice.preset("vivian")})


def test_pronunciation_changes_what_is_said_not_the_subtitles_and_keys_the_cache(engine, tmp_path):
    from engine.pronunciation import Lexicon, Rule

    text = "Chapter 1\n\nCats vs. dogs.\n\nThe night was cold.\n"  # three paragraphs: three segments
    options = replace(OPTIONS, format="wav", subtitles="srt")
    cache = SegmentCache(tmp_path / "cache")
    book = book_from_text(text, "B")

    def run(lexicon, name):
        exporter = BookExporter(lambda voice: engine, sampling=replace(engine.defaults, seed=5), cache=cache,
                                pronunciation=lexicon)
        plans = exporter.plan(book, tmp_path / name, options, voices())
        return exporter.run(plans, book, options)[0], [s.spoken for s in plans[0].speeches]

    versus = Lexicon((Rule("vs.", "versus"),))
    path, spoken = run(versus, "a.wav")
    assert spoken == ["Chapter 1", "Cats versus dogs.", "The night was cold."]
    assert [t for _, _, t in cues(path.with_suffix(".srt"))] == ["Chapter 1", "Cats vs. dogs.", "The night was cold."]
    engine.calls.clear()
    run(Lexicon((Rule("vs.", "against"),)), "b.wav")  # one rule edited: only the sentence it changes is spoken
    assert engine.calls == ["Cats vs. dogs."]
    engine.calls.clear()
    run(versus, "c.wav")  # back to the first rule: all from the cache, the same file
    assert engine.calls == []
    assert (tmp_path / "c.wav").read_bytes() == path.read_bytes()


def test_the_reading_policy_changes_what_is_said_not_the_subtitles_and_keys_the_cache(engine, tmp_path):
    from engine.core.text.reading_policy import CODE_ANNOUNCEMENT, ReadingPolicy
    from engine.pronunciation import Lexicon, Rule

    text = ("Chapter 1\n\nSee https://docs.python.org/3/library/re.html today.\n\n$ python3 -m venv env\n\n"
            "The night was cold.\n")
    options = replace(OPTIONS, format="wav", subtitles="srt")
    cache = SegmentCache(tmp_path / "cache")
    book = book_from_text(text, "B")
    lexicon = Lexicon((Rule("docs.python.org", "the Python docs"),))  # applies to what the policy says

    def run(policy, name):
        exporter = BookExporter(lambda voice: engine, sampling=replace(engine.defaults, seed=5), cache=cache,
                                pronunciation=lexicon, reading_policy=policy)
        plans = exporter.plan(book, tmp_path / name, options, voices())
        return exporter.run(plans, book, options)[0], [(s.said, s.spoken) for s in plans[0].speeches]

    path, said = run(None, "a.wav")
    assert said == [("Chapter 1", "Chapter 1"), ("See docs.python.org today.", "See the Python docs today."),
                    (CODE_ANNOUNCEMENT, CODE_ANNOUNCEMENT), ("The night was cold.", "The night was cold.")]
    assert [t for _, _, t in cues(path.with_suffix(".srt"))] == [
        "Chapter 1", "See https://docs.python.org/3/library/re.html today.", "$ python3 -m venv env",
        "The night was cold."]
    engine.calls.clear()
    _, said = run(ReadingPolicy(read_code=True), "b.wav")  # only the sentence the change touches is spoken again
    assert said[2] == ("$ python3 -m venv env", "$ python3 -m venv env")
    assert engine.calls == ["$ python3 -m venv env"]
