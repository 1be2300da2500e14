"""One chapter list on real documents opened as a user opens them: the chapter panel and the Export dialog list the
same chapters, numbered and nested alike (225 for Debian's developers-reference EPUB, not 10 in one and 225 in the
other); in the dialog, unchecking a part unchecks its chapters, checking it checks them again, a range brings a
part's chapters as ``export --chapters`` does, and the job queued exports what is checked. The KJV text's books
hold their chapters in the panel, and Enter on one goes there."""

from __future__ import annotations

from pathlib import Path

import pytest
from PySide6.QtCore import Qt
from PySide6.QtTest import QTest

from engine.documents.outline import with_descendants
from engine.production.chapter_ranges import chapter_selection
from qtapp.chapter_panel import INDEX_ROLE
from qtapp.export_requests import open_export_dialog

DOCUMENTS = Path(__file__).resolve().parents[1] / "data" / "documents"
CHECKED, UNCHECKED = Qt.CheckState.Checked, Qt.CheckState.Unchecked


def opened(qtbot, open_window, name: str):
    window = open_window(loaded=True)
    with qtbot.waitSignal(window.editor.loading_finished, timeout=20_000):
        assert window.open_path(DOCUMENTS / name)
    return window


def panel_rows(panel) -> list[tuple[str, int]]:
    """(text, depth) of every row of the panel's tree, in order."""
    rows = []

    def walk(parent, depth):
        for row in range(panel.filter.rowCount(parent)):
            index = panel.filter.index(row, 0, parent)
            rows.append((index.data(), depth))
            walk(index, depth + 1)

    walk(panel.tree.rootIndex(), 0)
    return rows


def dialog_rows(choice) -> list[tuple[str, int]]:
    def depth(item):
        return 0 if item.parent() is None else depth(item.parent()) + 1

    return [(item.text(0), depth(item)) for item in choice.items]


@pytest.fixture
def reference(qtbot, open_window):
    window = opened(qtbot, open_window, "developers-reference.epub")
    request = open_export_dialog(window)
    yield window, request.dialog
    request.dialog.reject()


def test_the_panel_and_the_export_dialog_list_the_same_nested_chapters(reference):
    window, dialog = reference
    panel_list = panel_rows(window.chapter_dock.panel)
    assert len(panel_list) == 225
    assert dialog_rows(dialog.chapter_choice) == panel_list
    assert [depth for _, depth in panel_list].count(0) == 10 and max(depth for _, depth in panel_list) == 2
    assert dialog.chapters.topLevelItemCount() == 10 and dialog.chapters.rootIsDecorated()


def test_a_part_checks_and_unchecks_its_chapters_and_a_range_brings_them(qtbot, reference):
    window, dialog = reference
    choice = dialog.chapter_choice
    part = next(i for i, item in enumerate(choice.items) if item.childCount() > 2)
    under = with_descendants([part], choice.levels)
    assert len(under) > 3
    choice.items[part].setCheckState(0, UNCHECKED)  # as a click on its box or Space does
    assert [i for i in range(choice.count()) if choice.items[i].checkState(0) == UNCHECKED] == under
    assert dialog.chosen_chapters() == [i for i in range(choice.count()) if i not in under]
    choice.items[under[1]].setCheckState(0, CHECKED)  # one chapter back alone: the part stays unchecked
    assert choice.items[part].checkState(0) == UNCHECKED and choice.items[under[2]].checkState(0) == UNCHECKED
    choice.items[part].setCheckState(0, CHECKED)
    assert dialog.chosen_chapters() is None  # every chapter checked again: the whole book

    QTest.mouseClick(dialog.no_chapters, Qt.MouseButton.LeftButton)
    QTest.keyClicks(dialog.chapter_range, f"{part + 1}")
    assert dialog.chosen_chapters() == under == chapter_selection(str(part + 1), choice.levels)
    QTest.keyClick(dialog.chapter_range, Qt.Key.Key_Return)
    [job] = window.exports.jobs
    assert job.chapters == under


def test_space_on_a_part_in_the_tree_unchecks_its_chapters(qtbot, reference):
    _, dialog = reference
    choice = dialog.chapter_choice
    part = next(i for i, item in enumerate(choice.items) if item.childCount())
    dialog.chapters.setFocus()
    dialog.chapters.setCurrentItem(choice.items[part])
    QTest.keyClick(dialog.chapters, Qt.Key.Key_Space)
    assert all(choice.items[i].checkState(0) == UNCHECKED for i in with_descendants([part], choice.levels))


def test_the_bible_books_hold_their_chapters_in_the_panel(qtbot, open_window):
    window = opened(qtbot, open_window, "kjv-obadiah-jonah-micah.txt")
    panel = window.chapter_dock.panel
    rows = panel_rows(panel)
    assert [text for text, depth in rows if depth == 0] == ["1. Obadiah", "3. Jonah", "8. Micah"]
    assert rows[3:8] == [("4. Jonah 1", 1), ("5. Jonah 2", 1), ("6. Jonah 3", 1), ("7. Jonah 4", 1), ("8. Micah", 0)]
    panel.focus_list()
    QTest.keyClicks(panel.search, "jonah 3")
    assert panel.shown_indexes() == [5]
    QTest.keyClick(panel.search, Qt.Key.Key_Return)
    assert window.editor.toPlainText()[window.editor.textCursor().position():].startswith("Jonah 3\n\n  1 And the")
    assert panel.tree.currentIndex().data(INDEX_ROLE) == 5
