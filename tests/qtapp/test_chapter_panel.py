"""The chapter panel with a book of 600 chapters (a Markdown file opened as a user opens one): it lists them all,
the search narrows the list to the matching titles as you type, Enter goes to the chosen chapter, the chapter
holding the cursor is the one marked, and Ctrl+Shift+C opens the panel with the keys in its search field."""

from __future__ import annotations

import pytest
from PySide6.QtCore import Qt
from PySide6.QtTest import QTest

from qtapp.chapter_panel import CURRENT_NOTE, INDEX_ROLE

CHAPTERS = 600


def title(number: int) -> str:
    return f"Chapter {number}: {'Storm' if number % 50 == 0 else 'Calm'} day"


@pytest.fixture
def book(qtbot, open_window, tmp_path):
    path = tmp_path / "book.md"
    path.write_text("\n".join(f"# {title(n)}\n\nIt was day {n}. Nothing happened.\n" for n in range(1, CHAPTERS + 1)))
    window = open_window(loaded=True)
    window.activateWindow()
    with qtbot.waitSignal(window.editor.loading_finished, timeout=10_000):
        assert window.open_path(path)
    assert len(window.document_chapters) == CHAPTERS
    return window


def listed(panel) -> list[int]:
    return [panel.filter.index(row, 0).data(INDEX_ROLE) for row in range(panel.filter.rowCount())]


def test_the_panel_lists_every_chapter_flat(book):
    panel = book.chapter_dock.panel
    assert book.chapter_dock.isVisible()
    assert listed(panel) == list(range(CHAPTERS))
    assert not panel.tree.rootIsDecorated()  # one level: a list, no branches
    assert panel.filter.index(599, 0).data() == f"600. {title(600)}"
    assert panel.count_label.text() == "600 chapters"


def test_search_narrows_to_the_matches_and_enter_goes_there(qtbot, book):
    panel = book.chapter_dock.panel
    QTest.keyClick(book.editor, Qt.Key.Key_C, Qt.KeyboardModifier.ControlModifier | Qt.KeyboardModifier.ShiftModifier)
    qtbot.waitUntil(panel.search.hasFocus, timeout=2000)
    QTest.keyClicks(panel.search, "sto")
    storms = [n - 1 for n in range(50, CHAPTERS + 1, 50)]
    assert listed(panel) == storms == panel.shown_indexes()
    assert panel.count_label.text() == f"{len(storms)} of 600 chapters match"
    QTest.keyClicks(panel.search, "rm day")  # "storm day": still the same twelve
    assert listed(panel) == storms
    QTest.keyClick(panel.search, Qt.Key.Key_Return)  # the first match
    assert book.editor.textCursor().position() == book.document_chapters[49].start
    QTest.keyClick(panel.search, Qt.Key.Key_Down)  # the arrows move into the list
    assert panel.tree.hasFocus()
    QTest.keyClick(panel.tree, Qt.Key.Key_Down)
    QTest.keyClick(panel.tree, Qt.Key.Key_Down)
    QTest.keyClick(panel.tree, Qt.Key.Key_Return)
    target = book.document_chapters[149]
    assert book.editor.textCursor().position() == target.start
    assert book.editor.toPlainText()[target.start:].startswith(title(150))
    assert panel.current == 149
    panel.search.clear()
    assert listed(panel) == list(range(CHAPTERS))
    QTest.keyClicks(panel.search, "no such title")
    assert listed(panel) == [] and panel.count_label.text() == "0 of 600 chapters match"
    QTest.keyClick(panel.search, Qt.Key.Key_Return)  # nothing to go to: the cursor stays
    assert book.editor.textCursor().position() == target.start
    QTest.keyClick(panel.search, Qt.Key.Key_Escape)  # back to the text
    qtbot.waitUntil(book.editor.hasFocus, timeout=2000)


def test_the_chapter_holding_the_cursor_is_marked(qtbot, book):
    panel = book.chapter_dock.panel
    assert panel.current == 0
    chapter = book.document_chapters[417]
    cursor = book.editor.textCursor()
    cursor.setPosition(chapter.start + 10)
    book.editor.setTextCursor(cursor)
    assert panel.current == 417 == book.chapters.current()
    item = panel.items[417]
    assert item.font().bold() and item.data(Qt.ItemDataRole.AccessibleDescriptionRole) == CURRENT_NOTE
    assert not panel.items[0].font().bold()
    assert panel.tree.currentIndex().data(INDEX_ROLE) == 417  # the list follows while it does not have the keys
    book.chapters.next_chapter()
    assert panel.current == 418 and not item.font().bold()


def test_closing_the_panel_keeps_it_closed_until_asked_for(qtbot, book, tmp_path):
    dock = book.chapter_dock
    dock.close()
    assert dock.isHidden()
    other = tmp_path / "other.md"
    other.write_text("# One\n\nText.\n\n# Two\n\nMore text.\n")
    with qtbot.waitSignal(book.editor.loading_finished, timeout=10_000):
        assert book.open_path(other)
    assert dock.isHidden() and len(dock.panel.items) == 2  # listed, not forced open
    action = next(a for a in book.actions() if a.text() == "Chapter &list")
    action.trigger()
    assert dock.isVisible()
    qtbot.waitUntil(dock.panel.search.hasFocus, timeout=2000)
    action.trigger()  # again, from inside the panel: it closes and the text has the keys
    assert dock.isHidden()
    book.documents.new_document()
    qtbot.waitUntil(lambda: dock.panel.items == [], timeout=2000)
    assert dock.panel.count_label.text() == "No chapters in this text"
    assert not any(a.isEnabled() for a in book.window_actions.chapter_steps)


def depth_of(index) -> int:
    depth = 0
    while index.parent().isValid():
        index, depth = index.parent(), depth + 1
    return depth


def test_parts_hold_their_chapters_and_a_hostile_outline_nests_no_deeper_than_six(qtbot):
    from engine.documents import Chapter
    from engine.documents.outline import MAX_DEPTH
    from qtapp.chapter_panel import ChapterPanel

    panel = ChapterPanel()
    qtbot.addWidget(panel)
    book = [Chapter("Part One", 1, 0, 10), Chapter("A\nlong\tday", 2, 0, 5), Chapter("Night", 2, 5, 10),
            Chapter("Part Two", 1, 10, 20), Chapter("Dawn", 2, 10, 20)]
    panel.set_chapters(book)
    assert panel.tree.rootIsDecorated()
    assert [panel.filter.index(r, 0).data() for r in range(panel.filter.rowCount())] == ["1. Part One", "4. Part Two"]
    part_one = panel.filter.index(0, 0)
    assert [part_one.model().index(r, 0, part_one).data() for r in range(2)] == ["2. A long day", "3. Night"]
    panel.search.setText("DAWN")  # any case; the part holding the match stays, to show where it is
    assert panel.shown_indexes() == [4]
    assert panel.filter.rowCount() == 1 and panel.filter.index(0, 0).data() == "4. Part Two"
    stairs = [Chapter(f"Step {n}", n, n, n + 1) for n in range(1, 201)]  # each one level below the last
    panel.search.clear()
    panel.set_chapters(stairs)
    assert len(panel.items) == 200
    assert max(depth_of(panel.filter.mapFromSource(item.index())) for item in panel.items) == MAX_DEPTH - 1
