"""Jumping by chapter in a real EPUB (tests/data/documents): the chapter panel shows the book's outline,
choosing an entry or pressing Ctrl+Shift+Down / Up moves the cursor to a chapter's start, and while reading,
reading goes on from there."""

import pytest
from PySide6.QtCore import Qt
from PySide6.QtTest import QTest

from qtapp.chapter_panel import INDEX_ROLE
from qtapp.reading import PLAYING
from tests.engine.documents.helpers import DATA

EPUB = DATA / "developers-reference.epub"
CTRL_SHIFT = Qt.KeyboardModifier.ControlModifier | Qt.KeyboardModifier.ShiftModifier


@pytest.fixture
def window(open_window):
    return open_window(loaded=True)


def open_book(qtbot, window):
    with qtbot.waitSignal(window.editor.loading_finished, timeout=10_000):
        assert window.open_path(EPUB)
    assert len(window.document_chapters) > 10


def outline(model, parent=None, depth=0):
    """(depth, chapter index, text) of every row of the panel's tree, in order."""
    from PySide6.QtCore import QModelIndex

    parent = parent or QModelIndex()
    rows = []
    for row in range(model.rowCount(parent)):
        index = model.index(row, 0, parent)
        rows.append((depth, index.data(INDEX_ROLE), index.data()))
        rows.extend(outline(model, index, depth + 1))
    return rows


def cursor_at(window):
    return window.editor.textCursor().position()


def test_the_panel_shows_the_outline_and_activating_a_chapter_moves_the_cursor(qtbot, window):
    panel = window.chapter_dock.panel
    assert outline(panel.filter) == [] and window.chapter_dock.isHidden()  # an empty editor has no chapters
    open_book(qtbot, window)
    assert window.chapter_dock.isVisible()  # a book with chapters shows its outline
    rows = outline(panel.filter)
    chapters = window.document_chapters
    assert [index for _, index, _ in rows] == list(range(len(chapters)))
    assert [text for _, _, text in rows] == [f"{i + 1}. {c.title}" for i, c in enumerate(chapters)]
    for position, (depth, index, _) in enumerate(rows):  # a chapter nested under one of a higher level
        if depth:
            parent = next(i for d, i, _ in reversed(rows[:position]) if d == depth - 1)
            assert chapters[parent].level < chapters[index].level
    sub = next(i for i, c in enumerate(chapters) if c.level == 2)
    assert rows[sub][0] == 1  # the outline shows nesting
    target = chapters[sub]
    proxy_index = panel.filter.mapFromSource(panel.items[sub].index())
    panel.tree.scrollTo(proxy_index)
    where = panel.tree.visualRect(proxy_index).center()
    QTest.mouseClick(panel.tree.viewport(), Qt.MouseButton.LeftButton, pos=where)  # a double-click's first press
    assert cursor_at(window) == 0  # a single click only selects
    QTest.mouseDClick(panel.tree.viewport(), Qt.MouseButton.LeftButton, pos=where)
    assert cursor_at(window) == target.start
    text = window.editor.toPlainText()
    assert target.title in text[target.start:].split("\n", 1)[0]  # the heading is there (numbered in the text)


def test_keyboard_steps_through_chapters(qtbot, window):
    open_book(qtbot, window)
    starts = [c.start for c in window.document_chapters]
    window.editor.setFocus()
    assert cursor_at(window) == 0 == starts[0]
    QTest.keyClick(window.editor, Qt.Key.Key_Down, CTRL_SHIFT)
    assert cursor_at(window) == starts[1]
    QTest.keyClick(window.editor, Qt.Key.Key_Down, CTRL_SHIFT)
    assert cursor_at(window) == starts[2]
    cursor = window.editor.textCursor()
    cursor.setPosition(starts[2] + 5)  # inside a chapter, Previous goes back to its start first
    window.editor.setTextCursor(cursor)
    QTest.keyClick(window.editor, Qt.Key.Key_Up, CTRL_SHIFT)
    assert cursor_at(window) == starts[2]
    QTest.keyClick(window.editor, Qt.Key.Key_Up, CTRL_SHIFT)
    assert cursor_at(window) == starts[1]


def test_chapter_starts_follow_edits_before_them(qtbot, window):
    open_book(qtbot, window)
    before = window.chapters.starts()
    cursor = window.editor.textCursor()
    cursor.setPosition(0)
    cursor.insertText("Note. ")
    assert window.chapters.starts()[1:] == [s + len("Note. ") for s in before[1:]]
    window.chapters.go_to(3)
    heading = window.editor.toPlainText()[cursor_at(window):].split("\n", 1)[0]
    assert window.document_chapters[3].title in heading


def test_choosing_a_chapter_while_reading_reads_from_there(qtbot, fake_sd, window):
    open_book(qtbot, window)
    window.read_aloud.play()
    assert window.reader.state == PLAYING
    qtbot.waitUntil(lambda: window.editor.highlighted_span is not None, timeout=5000)
    target = window.document_chapters[5]
    window.chapters.go_to(5)
    assert window.reader.state == PLAYING

    def heard_target():
        fake_sd.pump(0.05)
        span = window.editor.highlighted_span
        return span is not None and span[0] >= target.start
    qtbot.waitUntil(heard_target, timeout=5000)
    span = window.editor.highlighted_span
    assert target.start <= span[0] < target.end
    window.chapters.next_chapter()  # from the sentence being read, not from a stale cursor
    qtbot.waitUntil(heard_target, timeout=5000)
    assert window.editor.highlighted_span[0] >= window.document_chapters[6].start
    window.reader.stop()
