"""The Export dialog's chapter choice for a book of 600 chapters: All, None and a range typed as
``export --chapters`` takes it ("2-4", "1,3-5") check the chapters; each stays checkable by hand; with none checked
Add to queue is off and the dialog says why; the job queued exports exactly the chapters checked."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from PySide6.QtCore import Qt
from PySide6.QtTest import QTest

from engine.production.chapter_ranges import chapter_selection
from qtapp.export_requests import open_export_dialog

CHAPTERS = 600


@pytest.fixture
def dialog(qtbot, open_window, tmp_path):
    path = tmp_path / "book.md"
    path.write_text("\n".join(f"# Chapter {n}\n\nIt was day {n}.\n" for n in range(1, CHAPTERS + 1)))
    window = open_window(loaded=True)
    with qtbot.waitSignal(window.editor.loading_finished, timeout=10_000):
        assert window.open_path(path)
    dialog = open_export_dialog(window).dialog
    assert dialog.chapter_choice.count() == CHAPTERS
    yield dialog
    dialog.reject()


def checked(dialog) -> list[int]:
    return [i for i, item in enumerate(dialog.chapter_choice.items) if item.checkState(0) == Qt.CheckState.Checked]


def test_none_unchecks_all_and_turns_add_off_with_the_reason(dialog):
    assert checked(dialog) == list(range(CHAPTERS)) and dialog.ok.isEnabled()
    QTest.mouseClick(dialog.no_chapters, Qt.MouseButton.LeftButton)
    assert checked(dialog) == [] and dialog.chosen_chapters() == []
    assert not dialog.ok.isEnabled()
    assert dialog.error_label.isVisible() and "check at least one chapter" in dialog.error_label.text()
    QTest.keyClick(dialog, Qt.Key.Key_Return)  # Enter does not add a job of no chapter either
    assert dialog.isVisible() and dialog.parent().exports.jobs == []
    dialog.chapter_choice.items[7].setCheckState(0, Qt.CheckState.Checked)  # one by one, as before
    assert dialog.chosen_chapters() == [7] and dialog.ok.isEnabled() and dialog.error_label.isHidden()


def test_a_range_checks_exactly_those_chapters_and_all_checks_every_one(dialog):
    QTest.keyClicks(dialog.chapter_range, "2-4")
    assert checked(dialog) == [1, 2, 3] == dialog.chosen_chapters()
    assert dialog.ok.isEnabled()
    dialog.chapter_range.clear()
    QTest.keyClicks(dialog.chapter_range, "1,3-5, 600")
    assert dialog.chosen_chapters() == [0, 2, 3, 4, 599]
    dialog.chapter_choice.items[0].setCheckState(0, Qt.CheckState.Unchecked)  # by hand: the range no longer says it
    assert dialog.chosen_chapters() == [2, 3, 4, 599] and dialog.chapter_range.text() == ""
    QTest.mouseClick(dialog.all_chapters, Qt.MouseButton.LeftButton)
    assert checked(dialog) == list(range(CHAPTERS))
    assert dialog.chosen_chapters() is None  # all of them: the whole book


def test_a_range_that_does_not_parse_is_refused_with_its_reason(dialog):
    QTest.keyClicks(dialog.chapter_range, "2-4")
    QTest.keyClicks(dialog.chapter_range, "x")  # "2-4x"
    assert not dialog.ok.isEnabled()
    assert "'2-4x' is not a chapter number or range" in dialog.error_label.text()
    assert dialog.chosen_chapters() == [1, 2, 3]  # the last range that parsed
    dialog.chapter_range.clear()
    QTest.keyClicks(dialog.chapter_range, "599-601")
    assert not dialog.ok.isEnabled() and "the book has 600 chapters" in dialog.error_label.text()
    QTest.keyClick(dialog.chapter_range, Qt.Key.Key_Backspace)
    QTest.keyClicks(dialog.chapter_range, "0")  # "599-600"
    assert dialog.ok.isEnabled() and dialog.error_label.isHidden() and dialog.chosen_chapters() == [598, 599]


def test_the_queued_job_exports_the_range_typed(qtbot, dialog):
    window = dialog.parent()
    QTest.keyClicks(dialog.chapter_range, "2-4")
    QTest.keyClick(dialog.chapter_range, Qt.Key.Key_Return)  # Enter in the field adds the job
    assert not dialog.isVisible()
    [job] = window.exports.jobs
    assert job.chapters == [1, 2, 3]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(typed=st.text(alphabet="0123456789,- x", max_size=12))
def test_whatever_is_typed_the_checks_follow_the_parser_or_add_is_off(dialog, typed):
    QTest.mouseClick(dialog.all_chapters, Qt.MouseButton.LeftButton)
    dialog.chapter_range.clear()
    QTest.keyClicks(dialog.chapter_range, typed)
    try:
        expected = chapter_selection(typed, [1] * CHAPTERS) if typed.strip() else None
    except ValueError as e:
        assert not dialog.ok.isEnabled() and str(e) in dialog.error_label.text()
        return
    assert dialog.ok.isEnabled()
    if expected is not None:
        assert checked(dialog) == expected
