"""The export queue's jobs and file: kept in order across a restart, a running job back as queued, snapshots kept
apart from the editor, a damaged or hand-edited file never stopping the app, and default outputs that never lie in
the app's data folder."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engine.production.export_jobs import (
    QUEUED,
    RUNNING,
    Job,
    JobError,
    Snapshot,
    SnapshotChapter,
    default_output,
)
from engine.production.export_queue import QUEUE_FILE, ExportQueue


def job(tmp_path, title="Book", **kw) -> Job:
    kw.setdefault("source", str(tmp_path / f"{title}.txt"))
    return Job(title=title, output=str(tmp_path / "out" / f"{title}.m4b"), **kw)


def test_jobs_come_back_in_order_after_a_restart(tmp_path):
    queue = ExportQueue(tmp_path / "data")
    first = queue.add(job(tmp_path, "One"))
    second = queue.add(job(tmp_path, "Two", source=None, snapshot="0" * 32),
                       Snapshot("Chapter 1\n\nHello there.", "Two", chapters=[SnapshotChapter("Chapter 1", 0)]))
    third = queue.add(job(tmp_path, "Three", per_chapter=True, chapters=[2, 0], format="mp3"))
    assert queue.move(third.id, -5) and not queue.move(third.id, -1)
    queue.update(first, state=RUNNING, done_segments=4, total_segments=9, audio_s=12.5)

    again = ExportQueue(tmp_path / "data")
    assert [j.title for j in again.jobs] == ["Three", "One", "Two"]
    assert again.warnings == []
    back = again.get(first.id)
    assert back.state == QUEUED  # it was running when the app stopped: it runs again, from the cache
    assert (back.done_segments, back.total_segments, back.audio_s) == (4, 9, 12.5)
    assert again.get(third.id).chapters == [0, 2] and again.get(third.id).format == "mp3"
    assert again.get(second.id).seed == second.seed  # the same seed: a resumed job says the same
    book = again.book(again.get(second.id))
    assert [c.title for c in book.chapters] == ["Chapter 1"]


def test_a_snapshot_belongs_to_its_job_and_goes_with_it(tmp_path):
    queue = ExportQueue(tmp_path)
    texts = ["First text.", "Second text."]
    jobs = [queue.add(job(tmp_path, f"J{i}", source=None, snapshot="0" * 32), Snapshot(t, f"J{i}"))
            for i, t in enumerate(texts)]
    assert jobs[0].snapshot != jobs[1].snapshot
    assert [queue.read_snapshot(j.snapshot).text for j in jobs] == texts
    queue.remove(jobs[0].id)
    assert queue.read_snapshot(jobs[0].snapshot) is None
    assert len(list(queue.snapshot_folder.glob("*.json"))) == 1


def test_a_queue_file_that_is_not_json_is_set_aside(tmp_path):
    (tmp_path / QUEUE_FILE).write_text('{"jobs": [ {"title": "x",', encoding="utf-8")
    queue = ExportQueue(tmp_path)
    assert queue.jobs == [] and "damaged" in queue.warnings[0]
    assert (tmp_path / f"{QUEUE_FILE}.damaged").exists()
    queue.add(job(tmp_path))  # and the queue works on
    assert len(ExportQueue(tmp_path).jobs) == 1


def test_unreadable_jobs_are_dropped_and_the_rest_kept(tmp_path):
    queue = ExportQueue(tmp_path)
    good = queue.add(job(tmp_path, "Good"))
    data = json.loads((tmp_path / QUEUE_FILE).read_text())
    bad = [dict(data["jobs"][0], id="f" * 32, snapshot="../../etc/passwd", source=None),  # out of its folder
           dict(data["jobs"][0], id="e" * 32, state="exploded"),
           dict(data["jobs"][0], id="d" * 32, output="relative/out.m4b"),
           dict(data["jobs"][0], id="c" * 32, chapters=[-1]),
           dict(data["jobs"][0], id="b" * 32, format="exe"),
           data["jobs"][0],  # the same id twice
           "a job", None, 7]
    data["jobs"] += bad
    (tmp_path / QUEUE_FILE).write_text(json.dumps(data))
    again = ExportQueue(tmp_path)
    assert [j.id for j in again.jobs] == [good.id]
    assert again.warnings == [f"{len(bad)} export jobs in the queue could not be read and were dropped."]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.dictionaries(st.sampled_from(["title", "output", "format", "state", "chapters", "seed", "snapshot",
                                        "source", "audio_s", "per_chapter", "id", "written", "segment_chars",
                                        "loudness", "dialogue_voice", "cast", "levels"]),
                       st.recursive(st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20),
                                    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5),
                                                                                               inner, max_size=3),
                                    max_leaves=6)))
def test_any_hand_edit_of_a_job_is_read_or_dropped_never_raised(tmp_path, changes):
    folder = tmp_path / "hyp"
    folder.mkdir(exist_ok=True)
    base = json.loads(json.dumps({"version": 1, "jobs": [vars(job(tmp_path))]}))
    base["jobs"][0].update(changes)
    (folder / QUEUE_FILE).write_text(json.dumps(base), encoding="utf-8")
    queue = ExportQueue(folder)
    assert len(queue.jobs) + (1 if queue.warnings else 0) == 1
    for kept in queue.jobs:
        Job.from_dict(vars(kept))  # what is kept reads back


@pytest.mark.parametrize("content", ["[]", '{"jobs": 5}', "null", '"text"'])
def test_a_queue_file_without_a_list_of_jobs_starts_empty(tmp_path, content):
    (tmp_path / QUEUE_FILE).write_text(content)
    queue = ExportQueue(tmp_path)
    assert queue.jobs == [] and queue.warnings


def test_a_job_made_with_bad_values_is_refused(tmp_path):
    with pytest.raises(JobError, match="absolute"):
        Job(title="x", output="out.m4b", source="/a.txt")
    with pytest.raises(JobError, match="either"):
        Job(title="x", output="/out.m4b")
    with pytest.raises(JobError, match="format"):
        Job(title="x", output="/out.m4b", source="/a.txt", format="doc")
    for target in (5, 301, True, "200", 2.5):
        with pytest.raises(JobError, match="segment target"):
            Job(title="x", output="/out.m4b", source="/a.txt", segment_chars=target)


def test_a_jobs_loudness_and_cast_come_back_and_bad_ones_are_refused(tmp_path):
    queue = ExportQueue(tmp_path)
    made = queue.add(job(tmp_path, loudness="audiobook", dialogue_voice="Ryan", cast=[["Elizabeth", "Vivian"]]))
    [again] = ExportQueue(tmp_path).jobs
    assert (again.loudness, again.dialogue_voice, again.cast) == ("audiobook", "Ryan", [["Elizabeth", "Vivian"]])
    assert again.id == made.id
    for bad, says in (({"loudness": "very loud"}, "loudness"), ({"loudness": "-90"}, "between"),
                      ({"cast": [["Jane"]]}, "pairs"), ({"cast": [["Jane", ""]]}, "pairs"),
                      ({"cast": [["J", "V"]] * 201}, "pairs"), ({"cast": "Jane=Vivian"}, "pairs"),
                      ({"dialogue_voice": "x" * 5000}, "dialogue voice")):
        with pytest.raises(JobError, match=says):
            job(tmp_path, **bad)


def test_a_jobs_segment_target_comes_back_after_a_restart(tmp_path):
    queue = ExportQueue(tmp_path)
    kept = queue.add(Job(title="a", output=str(tmp_path / "a.m4b"), source=str(tmp_path / "a.txt"),
                         segment_chars=0))
    default = queue.add(Job(title="b", output=str(tmp_path / "b.m4b"), source=str(tmp_path / "b.txt")))
    again = ExportQueue(tmp_path)
    assert [(j.id, j.segment_chars) for j in again.jobs] == [(kept.id, 0), (default.id, None)]


def test_default_output_beside_the_document_else_in_music(tmp_path):
    data, music = tmp_path / "data", tmp_path / "Music"
    doc = tmp_path / "books" / "Moby Dick.epub"
    assert default_output(doc, "ignored", "m4b", False, data, music) == (tmp_path / "books" / "Moby Dick.m4b").resolve()
    assert default_output(doc, "x", "mp3", True, data, music) == (tmp_path / "books" / "Moby Dick").resolve()
    assert default_output(None, "A: B/C?", "opus", False, data, music) == (music / "Orator" / "A B C.opus").resolve()
    inside = data / "autosave.txt"  # a text of the app's own: never exported into the data folder
    assert default_output(inside, "Notes", "wav", False, data, music).parent == (music / "Orator").resolve()


@settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(title=st.text(max_size=300), inside=st.booleans(), music_inside=st.booleans(), per_chapter=st.booleans(),
       fmt=st.sampled_from(["m4b", "mp3", "opus", "flac", "wav", "m4a"]))
def test_default_output_is_never_in_the_data_folder(tmp_path, title, inside, music_inside, per_chapter, fmt):
    data = tmp_path / "data"
    music = data / "Music" if music_inside else tmp_path / "Music"
    source = data / "x.txt" if inside else None
    out = default_output(source, title, fmt, per_chapter, data, music)
    assert not out.resolve().is_relative_to(data.resolve())
    assert out.is_absolute() and "/" not in out.name and out.name.strip(" .")
    assert len(out.name.encode()) <= 255


def test_a_snapshot_file_that_was_tampered_with_reads_as_missing(tmp_path):
    queue = ExportQueue(tmp_path)
    j = queue.add(job(tmp_path, source=None, snapshot="0" * 32), Snapshot("Hello.", "T"))
    Path(queue.snapshot_folder / f"{j.snapshot}.json").write_text('{"text": 5}')
    from engine.errors import TextError

    with pytest.raises(TextError, match="no longer"):
        queue.book(j)
