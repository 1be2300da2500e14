"""The studio's export queue: jobs added from the Export dialog run one after another in the background while the
editor stays usable; progress, pause and resume, cancel leaving no file, reorder, and a queue and a half-done job
that survive a restart and finish into the file an uninterrupted export writes."""

from __future__ import annotations

import numpy as np
import pytest
import soundfile
from PySide6.QtCore import Qt
from PySide6.QtGui import QTextCursor
from PySide6.QtTest import QTest

from engine import Voice
from engine.production.export_jobs import CANCELLED, DONE, PAUSED, QUEUED, RUNNING, Job, Snapshot
from engine.production.export_queue import QUEUE_FILE
from engine.production.time_left import format_time_left
from engine.voices.library import data_dir
from qtapp.export_panel import FILE, FORMAT, PROGRESS, STATE, TITLE
from qtapp.export_queue import ExportQueueController
from qtapp.export_requests import open_export_dialog
from tests.qtapp.conftest import FakeEngine

TEXT = "\n\n".join(f"Sentence {n} of the book. And one more, number {n}." for n in range(1, 9))


class SlowEngine(FakeEngine):
    """Slow enough (10 ms a frame) that a test can act while a job runs; counts the segments it speaks."""

    def __init__(self):
        super().__init__(frame_delay_s=0.01)


@pytest.fixture
def fake_engine_class():
    return SlowEngine


@pytest.fixture(autouse=True)
def one_sentence_a_segment(isolated_data_dir):
    """These tests count the sentences spoken, so each sentence is its own segment (merging is tested apart)."""
    from qtapp.settings import Settings

    settings = Settings.load()
    settings.segment_chars = 0
    settings.save()


def queue_text(window, title, text=TEXT, fmt="flac", **kw) -> Job:
    out = window.settings.root().parent / "out"
    output = out / title if kw.get("per_chapter") else out / f"{title}.{fmt}"
    job = Job(title=title, output=str(output), format=fmt, voice="ryan", source=None, snapshot="0" * 32, **kw)
    return window.exports.add(job, Snapshot(text, title))


def state(window, job) -> str:
    return window.exports.queue.get(job.id).state


def spoken(window) -> list[str]:
    return [text for text, _ in window.worker.engine_for(Voice.preset("ryan")).spoken]


def decoded(path) -> np.ndarray:
    samples, rate = soundfile.read(str(path), dtype="float32")
    assert rate == 24000
    return samples


def no_hidden_files(folder) -> bool:
    return not [p for p in folder.rglob(".*")] if folder.exists() else True


def test_two_jobs_run_in_order_in_the_background_while_the_editor_is_usable(qtbot, open_window):
    window = open_window(loaded=True)
    first = queue_text(window, "First", TEXT)
    second = queue_text(window, "Second", "A short one. Two sentences.")
    assert state(window, first) == RUNNING and state(window, second) == QUEUED
    assert window.export_dock.isVisible()
    QTest.keyClicks(window.editor, "Typed while exporting.")  # the window answers: nothing modal, no wait
    assert window.editor.toPlainText() == "Typed while exporting."
    assert state(window, first) == RUNNING
    qtbot.waitUntil(lambda: state(window, second) == DONE, timeout=20_000)
    assert state(window, first) == DONE
    said = spoken(window)
    assert said.index("A short one.") > said.index("And one more, number 8.")  # one job after the other
    for job in (first, second):
        assert decoded(job.output).size > 0
    assert no_hidden_files(window.settings.root().parent / "out")
    panel = window.export_panel
    assert [panel.list.topLevelItem(i).text(STATE) for i in range(2)] == ["Done", "Done"]


def test_a_row_shows_the_whole_title_the_format_and_the_file(qtbot, open_window):
    window = open_window(loaded=True)
    title = "The Remarkably Long Title of a Book Nobody Reads to the End"
    one = queue_text(window, title, "A short one.", fmt="mp3")
    per_chapter = queue_text(window, "Chapters", "Another one.", fmt="opus", per_chapter=True)
    panel = window.export_panel
    window.export_dock.show()
    rows = [panel.list.topLevelItem(i) for i in range(2)]
    assert [(r.text(TITLE), r.text(FORMAT), r.text(FILE)) for r in rows] == [
        (title, "MP3", f"{title}.mp3"), ("Chapters", "OPUS", "Chapters/")]
    assert one.output in rows[0].toolTip(FILE) and one.output in rows[0].toolTip(TITLE)
    assert per_chapter.output in rows[1].toolTip(PROGRESS) and "per chapter" in rows[1].toolTip(FILE)
    metrics = panel.list.fontMetrics()
    for column, text in ((TITLE, title), (FILE, f"{title}.mp3")):  # nothing cut short
        assert panel.list.columnWidth(column) >= metrics.horizontalAdvance(text), column
    qtbot.waitUntil(lambda: state(window, per_chapter) == DONE, timeout=20_000)


def test_a_job_keeps_the_segment_target_it_was_queued_with(qtbot, open_window):
    """Changing "Speak together" while a job waits changes nothing it says: a resumed job must cut its text as it
    began (its finished segments are keyed by their text)."""
    window = open_window(loaded=True)
    first = queue_text(window, "First", TEXT)
    second = queue_text(window, "Second", "A short one. Two sentences.")
    assert window.exports.queue.get(second.id).segment_chars == 0  # the studio's target when it was queued
    window.exports.runner.segment_chars = 200  # the setting changed: later jobs merge sentences
    third = queue_text(window, "Third", "Merged one. Merged two.")
    qtbot.waitUntil(lambda: state(window, third) == DONE, timeout=20_000)
    assert state(window, first) == DONE and window.exports.queue.get(third.id).segment_chars == 200
    said = spoken(window)
    assert "A short one." in said and "Two sentences." in said  # one sentence a segment, as queued
    assert "Merged one. Merged two." in said


def test_progress_per_job_and_overall_with_time_left(qtbot, open_window):
    window = open_window(loaded=True)
    seen = []
    window.exports.runner.progress.connect(lambda job_id, p: seen.append(p))
    job = queue_text(window, "Progress")
    queue_text(window, "Later", "Waiting its turn.")
    qtbot.waitUntil(lambda: len(seen) >= 3 and window.exports.progress.get(job.id) in seen[2:], timeout=10_000)
    fraction, eta = window.exports.overall()
    assert 0 < fraction < 1 and eta is not None and eta > 0
    assert "left" in window.export_panel.overall_label.text()
    row = window.export_panel.list.topLevelItem(0).text(PROGRESS)
    shown = window.exports.progress[job.id].eta_s  # the exporter's one smoothed estimate
    assert "sentence" in row and format_time_left(shown) in row
    qtbot.waitUntil(lambda: state(window, job) == DONE, timeout=20_000)
    done = [p.done_segments for p in seen if str(p.output) == job.output]
    assert done == list(range(1, 17)) and seen[0].total_segments == 16
    # none from the first two sentences (the first holds one-off costs), then one every sentence
    assert [p.eta_s is None for p in seen if str(p.output) == job.output] == [True, True] + [False] * 14
    assert window.exports.queue.get(job.id).audio_s == pytest.approx(decoded(job.output).size / 24000, abs=0.01)


def test_pause_keeps_what_was_said_and_resume_finishes_it(qtbot, open_window):
    window = open_window(loaded=True)
    job = queue_text(window, "Paused")
    qtbot.waitUntil(lambda: window.exports.queue.get(job.id).done_segments >= 3, timeout=10_000)
    window.export_panel.select(job.id)
    QTest.mouseClick(window.export_panel.pause_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: state(window, job) == PAUSED, timeout=10_000)
    before = len(spoken(window))
    out = window.settings.root().parent / "out"
    assert not list(out.rglob("*")) if out.exists() else True  # no partial file, hidden or not
    assert window.export_panel.pause_button.accessibleName() == "Resume"
    QTest.mouseClick(window.export_panel.pause_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: state(window, job) == DONE, timeout=20_000)
    assert len(spoken(window)) - before == 16 - before  # only the sentences not made before the pause
    assert decoded(job.output).size > 0


def test_cancel_removes_every_file_of_the_job(qtbot, open_window):
    window = open_window(loaded=True)
    text = "\n\n".join(f"Chapter {n}\n\nThe text of chapter {n}. It goes on." for n in range(1, 5))
    job = queue_text(window, "Chapters", text, fmt="wav", per_chapter=True)
    folder = window.settings.root().parent / "out" / "Chapters"
    qtbot.waitUntil(lambda: len(window.exports.queue.get(job.id).written) >= 2, timeout=20_000)
    assert len(list(folder.glob("*.wav"))) >= 2  # finished chapters are there while it runs
    window.export_panel.select(job.id)
    QTest.mouseClick(window.export_panel.cancel_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: state(window, job) == CANCELLED, timeout=10_000)
    assert list(folder.iterdir()) == []


def test_reorder_and_remove_decide_what_runs_next(qtbot, open_window):
    window = open_window(loaded=True)
    first = queue_text(window, "One")
    second = queue_text(window, "Two", "Second job speaks.")
    third = queue_text(window, "Three", "Third job speaks.")
    window.export_panel.select(third.id)
    QTest.mouseClick(window.export_panel.up_button, Qt.MouseButton.LeftButton)
    assert [j.title for j in window.exports.jobs] == ["One", "Three", "Two"]
    window.export_panel.select(second.id)
    window.export_panel.list.setFocus()
    QTest.keyClick(window.export_panel.list, Qt.Key.Key_Delete)
    assert [j.title for j in window.exports.jobs] == ["One", "Three"]
    assert not window.exports.remove(first.id)  # running: cancel it first
    qtbot.waitUntil(lambda: state(window, third) == DONE, timeout=20_000)
    assert "Second job speaks." not in spoken(window)
    assert spoken(window).index("Third job speaks.") > spoken(window).index("And one more, number 8.")


def test_a_half_done_job_survives_a_restart_and_writes_the_uninterrupted_file(qtbot, open_window, tmp_path,
                                                                              monkeypatch):
    monkeypatch.setenv("ORATOR_CACHE_DIR", str(tmp_path / "cache-whole"))
    window = open_window(loaded=True)
    whole = queue_text(window, "Whole")
    qtbot.waitUntil(lambda: state(window, whole) == DONE, timeout=20_000)
    window.exports.remove(whole.id)
    assert window.close()

    monkeypatch.setenv("ORATOR_CACHE_DIR", str(tmp_path / "cache-resumed"))
    window = open_window(loaded=True)
    job = queue_text(window, "Resumed")
    waiting = queue_text(window, "Waiting", "Still to come.")
    qtbot.waitUntil(lambda: window.exports.queue.get(job.id).done_segments >= 5, timeout=10_000)
    made = len(spoken(window))  # begun before the quit; the last may be cut off, and is made again
    assert window.close()  # quitting while it runs: nothing partial is left, the job stays in the queue
    out = tmp_path / "out"
    assert sorted(p.name for p in out.iterdir()) == ["Whole.flac"]

    window = open_window(loaded=True)
    assert [j.title for j in window.exports.jobs] == ["Resumed", "Waiting"]
    qtbot.waitUntil(lambda: state(window, waiting) == DONE, timeout=20_000)
    assert state(window, job) == DONE
    said = spoken(window)
    assert 17 - made <= len(said) <= 17 - made + 1  # those made before the restart came from the cache
    assert said[-1] == "Still to come."
    np.testing.assert_array_equal(decoded(job.output), decoded(whole.output))


def test_a_damaged_queue_file_is_reported_and_the_studio_works(qtbot, open_window):
    data_dir().mkdir(parents=True, exist_ok=True)
    (data_dir() / QUEUE_FILE).write_text("{not json", encoding="utf-8")
    window = open_window(loaded=True)
    assert "damaged" in window.banner.label.text()
    job = queue_text(window, "After", "It still exports.")
    qtbot.waitUntil(lambda: state(window, job) == DONE, timeout=10_000)


def test_export_dialog_queues_a_job_and_returns_at_once(qtbot, open_window, tmp_path, monkeypatch):
    monkeypatch.setattr("qtapp.export_requests.music_folder", lambda: tmp_path / "Music")
    window = open_window(loaded=True)
    window.editor.setPlainText("Chapter 1\n\nFirst words.\n\nChapter 2\n\nSecond words.\n\nChapter 3\n\nThird.")
    QTest.keyClick(window, Qt.Key.Key_E, Qt.KeyboardModifier.ControlModifier)
    request = window.export_request
    dialog = request.dialog
    assert dialog.isVisible() and not dialog.isModal()
    output = dialog.output()
    assert output.parent == (tmp_path / "Music" / "Orator").resolve()  # no document: the Music folder
    assert not output.resolve().is_relative_to(data_dir().resolve())
    assert dialog.chapter_choice.count() == 3
    dialog.chapter_choice.items[1].setCheckState(0, Qt.CheckState.Unchecked)
    dialog.format.setCurrentIndex(dialog.format.findData("wav"))
    assert dialog.output().suffix == ".wav"
    dialog.voice.setCurrentText("aiden")
    for widget in (dialog.format, dialog.voice, dialog.path_field, dialog.chapters, dialog.subtitles):
        assert widget.accessibleName()
    dialog.subtitles.setCurrentIndex(dialog.subtitles.findData("srt"))
    QTest.keyClick(dialog, Qt.Key.Key_Return)
    assert not dialog.isVisible()
    [job] = window.exports.jobs
    assert (job.chapters, job.format, job.voice, job.subtitles) == ([0, 2], "wav", "aiden", "srt")
    window.editor.setPlainText("Changed after queueing.")  # the job speaks its snapshot
    qtbot.waitUntil(lambda: state(window, job) == DONE, timeout=20_000)
    said = " ".join(spoken(window))
    assert "First words." in said and "Third." in said and "Second words." not in said and "Changed" not in said
    engine = window.worker.engine_for(Voice.preset("aiden"))
    assert {voice.speaker for _, voice in engine.spoken} == {"aiden"}
    assert "Third." in (tmp_path / "Music" / "Orator" / "Untitled.srt").read_text()


def test_the_dialog_refuses_what_cannot_be_queued(qtbot, open_window):
    window = open_window(loaded=True)
    window.editor.setPlainText("Some words.")
    dialog = open_export_dialog(window).dialog
    QTest.keyClicks(dialog.path_field, "x")  # typed over: the user's path from now on
    dialog.path_field.setText("relative/out.m4b")
    QTest.keyClick(dialog, Qt.Key.Key_Return)
    assert dialog.isVisible() and "full path" in dialog.error_label.text()
    assert window.exports.jobs == []
    dialog.reject()


def test_default_output_beside_an_opened_document(qtbot, open_window, tmp_path):
    book = tmp_path / "books" / "tale.txt"
    book.parent.mkdir()
    book.write_text("Once upon a time. The end.", encoding="utf-8")
    window = open_window(loaded=True)
    assert window.open_path(book)
    qtbot.waitUntil(lambda: not window.editor.is_loading, timeout=5000)
    request = open_export_dialog(window)
    assert request.source == str(book.resolve())  # the unchanged document is the source
    assert request.dialog.output() == (tmp_path / "books" / "tale.m4b").resolve()
    request.dialog.reject()


@pytest.mark.parametrize("edited", [False, True])
def test_a_selection_is_exported_under_a_name_of_its_own_with_the_author(qtbot, open_window, tmp_path, edited):
    import mutagen

    book = tmp_path / "books" / "tale.md"
    book.parent.mkdir()
    book.write_text("---\ntitle: The Tale\nauthor: Ann Author\n---\n\n# One\n\nOnce upon a time. The end.\n",
                    encoding="utf-8")
    window = open_window(loaded=True)
    assert window.open_path(book)
    qtbot.waitUntil(lambda: not window.editor.is_loading, timeout=5000)
    text = window.editor.toPlainText()
    if edited:  # a changed text is exported from a snapshot, which keeps the author too
        window.editor.textCursor().insertText("Foreword. ")
        text = window.editor.toPlainText()
    cursor = window.editor.textCursor()
    cursor.setPosition(text.index("Once"))
    cursor.setPosition(text.index("The end."), QTextCursor.MoveMode.KeepAnchor)
    window.editor.setTextCursor(cursor)
    request = open_export_dialog(window)
    dialog = request.dialog
    assert dialog.selection_only.isChecked()
    dialog.format.setCurrentIndex(dialog.format.findData("flac"))
    assert dialog.output() == (tmp_path / "books" / "tale (selection).flac").resolve()
    dialog.selection_only.setChecked(False)  # the whole text keeps the document's name
    assert dialog.output() == (tmp_path / "books" / "tale.flac").resolve()
    dialog.selection_only.setChecked(True)
    QTest.keyClick(dialog, Qt.Key.Key_Return)
    [job] = window.exports.jobs
    qtbot.waitUntil(lambda: state(window, job) == DONE, timeout=20_000)
    assert spoken(window) == ["Once upon a time."]
    tags = mutagen.File(job.output).tags
    assert tags["artist"] == ["Ann Author"] and tags["title"] == ["The Tale"]


def test_controller_without_a_window_resumes_a_job_left_running(qtbot, tmp_path):
    folder = tmp_path / "data"
    engine = SlowEngine()
    first = ExportQueueController(folder, lambda v, cancel=None: engine, lambda name: Voice.preset("ryan"),
                                  cache_folder=tmp_path / "cache")
    job = first.add(Job(title="T", output=str(tmp_path / "t.flac"), format="flac", source=None,
                        snapshot="0" * 32), Snapshot("One. Two. Three.", "T"))
    qtbot.waitUntil(lambda: first.queue.get(job.id).done_segments >= 1, timeout=10_000)
    first.shutdown()
    second = ExportQueueController(folder, lambda v, cancel=None: engine, lambda name: Voice.preset("ryan"),
                                   cache_folder=tmp_path / "cache")
    qtbot.waitUntil(lambda: second.queue.get(job.id).state == DONE, timeout=10_000)
    second.shutdown()
    assert decoded(tmp_path / "t.flac").size > 0


def test_open_folder_opens_where_the_job_writes(qtbot, open_window, monkeypatch):
    opened = []
    monkeypatch.setattr("qtapp.export_queue.QDesktopServices.openUrl", lambda url: opened.append(url) or True)
    window = open_window(loaded=True)
    job = queue_text(window, "Folder", "Short.")
    qtbot.waitUntil(lambda: state(window, job) == DONE, timeout=10_000)
    window.export_panel.select(job.id)
    QTest.mouseClick(window.export_panel.folder_button, Qt.MouseButton.LeftButton)
    assert [url.toLocalFile() for url in opened] == [str(window.settings.root().parent / "out")]
    for button in (window.export_panel.pause_button, window.export_panel.cancel_button,
                   window.export_panel.up_button, window.export_panel.folder_button):
        assert button.accessibleName()


def test_cancelling_a_job_a_kill_interrupted_removes_its_temporary_files(qtbot, tmp_path):
    """A killed run leaves its temporary files, recorded in the cache; cancelling the job removes those and
    nothing else in the folder."""
    import json

    from engine.production.encode import create_temp_beside
    from engine.production.export_leftovers import pending_record
    from engine.production.segment_cache import SegmentCache

    out = tmp_path / "out"
    out.mkdir()
    target = out / "Killed.m4b"
    temp = create_temp_beside(target)
    keep = out / "mine.txt"
    keep.write_text("not the export's")
    record = pending_record(SegmentCache(tmp_path / "cache"), target)
    record.parent.mkdir(parents=True, exist_ok=True)
    record.write_text(json.dumps([str(temp)]))
    queue = ExportQueueController(tmp_path / "data", lambda v, cancel=None: None, lambda name: None,
                                  cache_folder=tmp_path / "cache")
    try:
        job = Job(title="Killed", output=str(target), source=str(tmp_path / "gone.txt"), state=PAUSED,
                  targets=[str(target)])
        queue.queue.add(job)
        queue.cancel(job.id)
        assert queue.queue.get(job.id).state == CANCELLED
        assert sorted(p.name for p in out.iterdir()) == ["mine.txt"] and not record.exists()
    finally:
        queue.shutdown()


def test_a_job_whose_document_is_gone_fails_with_its_name_and_the_next_runs(qtbot, open_window, tmp_path):
    window = open_window(loaded=True)
    gone = Job(title="Lost book", output=str(tmp_path / "out" / "lost.m4b"), source=str(tmp_path / "lost.txt"))
    window.exports.add(gone)
    after = queue_text(window, "After", "Still exported.")
    qtbot.waitUntil(lambda: state(window, after) == DONE, timeout=10_000)
    failed = window.exports.queue.get(gone.id)
    assert failed.state == "failed" and "lost.txt" in failed.error
    assert "Lost book" in window.banner.label.text()
    assert window.export_panel.list.topLevelItem(0).text(STATE) == "Failed"
