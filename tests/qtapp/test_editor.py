"""The editor: undo/redo, find, zoom, counts, reading highlight, double-click, file drops, large texts."""

import pytest
from PySide6.QtCore import QMimeData, QPoint, QPointF, Qt, QTimer, QUrl
from PySide6.QtGui import QDropEvent, QTextCursor
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QApplication

from qtapp.editor import MAX_FONT, MIN_FONT, Editor, FindBar, split_for_loading


@pytest.fixture
def editor(qtbot):
    widget = Editor()
    widget.resize(600, 400)
    qtbot.addWidget(widget)
    widget.show()
    return widget


def test_typing_undo_redo(editor):
    QTest.keyClicks(editor, "Hello")
    assert editor.toPlainText() == "Hello"
    editor.undo()
    assert editor.toPlainText() == ""
    editor.redo()
    assert editor.toPlainText() == "Hello"


def test_find_selects_next_and_wraps(editor, qtbot):
    editor.setPlainText("cat dog cat bird")
    bar = FindBar(editor)
    qtbot.addWidget(bar)
    bar.open_bar()
    bar.field.setText("cat")
    assert bar.find()
    assert editor.textCursor().selectionStart() == 0
    assert bar.find()
    assert editor.textCursor().selectionStart() == 8
    assert bar.find()  # wraps around to the first one
    assert editor.textCursor().selectionStart() == 0
    assert bar.find(backward=True)
    assert editor.textCursor().selectionStart() == 8
    bar.field.setText("zebra")
    assert not bar.find()
    assert bar.status.text() == "Not found"


def test_font_zoom_is_clamped(editor):
    editor.set_font_size(12)
    editor.zoom(+2)
    assert editor.font_size == 14
    editor.set_font_size(1000)
    assert editor.font_size == MAX_FONT
    editor.zoom(-1000)
    assert editor.font_size == MIN_FONT


def test_counts_follow_edits(editor, qtbot):
    with qtbot.waitSignal(editor.counts_changed, timeout=2000) as blocker:
        editor.setPlainText("three little words")
    assert blocker.args == [3, len("three little words")]


def test_highlight_span(editor):
    editor.setPlainText("First sentence. Second sentence.")
    editor.highlight_span(16, 32)
    selections = editor.extraSelections()
    assert len(selections) == 1
    assert selections[0].cursor.selectedText() == "Second sentence."
    assert editor.highlighted_span == (16, 32)
    editor.clear_highlight()
    assert editor.extraSelections() == [] and editor.highlighted_span is None


def test_highlight_scrolls_into_view(editor):
    editor.setPlainText("\n".join(f"Line {i}." for i in range(500)))
    start = editor.toPlainText().index("Line 400.")
    editor.highlight_span(start, start + 9)
    cursor = QTextCursor(editor.document())
    cursor.setPosition(start)
    assert editor.viewport().rect().contains(editor.cursorRect(cursor).center())


def test_double_click_reports_the_position(editor, qtbot):
    editor.setPlainText("Alpha beta gamma.")
    editor.jump_on_double_click = True  # as while reading
    cursor = QTextCursor(editor.document())
    cursor.setPosition(7)
    point = editor.cursorRect(cursor).center()
    with qtbot.waitSignal(editor.position_activated, timeout=5000) as blocker:
        QTest.mouseDClick(editor.viewport(), Qt.MouseButton.LeftButton, pos=point)
    assert 6 <= blocker.args[0] <= 10  # inside "beta"
    assert not editor.textCursor().hasSelection()  # no word left selected for Play to read alone
    assert editor.textCursor().position() == blocker.args[0]


def test_a_double_or_triple_click_selects_and_reports_nothing_unless_reading(editor, qtbot):
    editor.setPlainText("Alpha beta gamma.\nSecond line here.")
    activated = []
    editor.position_activated.connect(activated.append)
    cursor = QTextCursor(editor.document())
    cursor.setPosition(7)
    point = editor.cursorRect(cursor).center()
    QTest.mouseDClick(editor.viewport(), Qt.MouseButton.LeftButton, pos=point)
    assert editor.textCursor().selectedText() == "beta"  # as in any editor
    QTest.mouseClick(editor.viewport(), Qt.MouseButton.LeftButton, pos=point, delay=10)
    assert editor.textCursor().selectedText().startswith("Alpha beta gamma.")  # a triple click: the line
    editor.jump_on_double_click = True  # while reading, a triple click still only selects
    QTest.mouseClick(editor.viewport(), Qt.MouseButton.LeftButton, pos=point)
    qtbot.wait(2 * QApplication.doubleClickInterval())
    QTest.mouseDClick(editor.viewport(), Qt.MouseButton.LeftButton, pos=point)
    QTest.mouseClick(editor.viewport(), Qt.MouseButton.LeftButton, pos=point, delay=10)
    qtbot.wait(2 * QApplication.doubleClickInterval())  # the double-click's jump would have come by now
    assert activated == []


def test_dropping_files_emits_their_paths(editor, qtbot, tmp_path):
    path = tmp_path / "dropped.txt"
    path.write_text("x")
    mime = QMimeData()
    mime.setUrls([QUrl.fromLocalFile(str(path))])
    event = QDropEvent(QPointF(QPoint(10, 10)), Qt.DropAction.CopyAction, mime, Qt.MouseButton.LeftButton,
                       Qt.KeyboardModifier.NoModifier)
    with qtbot.waitSignal(editor.files_dropped, timeout=1000) as blocker:
        editor.dropEvent(event)
    assert blocker.args == [[str(path)]]
    assert editor.toPlainText() == ""


def test_split_for_loading_cuts_at_line_ends():
    text = "".join(f"line {i}\n" for i in range(1000))
    pieces = split_for_loading(text, piece_chars=500)
    assert "".join(pieces) == text
    assert all(p.endswith("\n") for p in pieces)
    assert max(len(p) for p in pieces) <= 500
    assert "".join(split_for_loading("word " * 300, piece_chars=100)) == "word " * 300


def test_large_text_loads_in_pieces_without_blocking(editor, qtbot):
    text = "A line of a long book, read aloud.\n" * 200_000  # 7 MB
    ticks = []
    timer = QTimer(interval=1)
    timer.timeout.connect(lambda: ticks.append(1))
    timer.start()
    with qtbot.waitSignal(editor.loading_finished, timeout=60_000):
        editor.load_text(text)
        assert editor.is_loading and editor.isReadOnly()
    timer.stop()
    assert editor.toPlainText() == text
    assert len(ticks) > 5  # the event loop kept running while the text went in
    assert not editor.isReadOnly()
    assert not editor.document().isUndoAvailable()  # loading is not an undo step


def test_the_document_source_reads_what_to_plain_text_gives(editor, monkeypatch):
    """Read from the QTextDocument a line at a time, the text and its sentences are those of toPlainText (block
    separators, line separators and no-break spaces included), and a source stops at the next edit."""
    from qtapp import reading_plan
    from qtapp.reading_plan import StrText, iter_sentences

    monkeypatch.setattr(reading_plan, "MAX_PIECE", 7)
    editor.setPlainText("One line.\u2028Same block!\n[voice: Ann] Hi\u00a0there. Bye.\n\nLast part goes on")
    text = editor.toPlainText()
    source = editor.text_source
    for start, end in ((0, None), (3, 40), (text.index("Hi"), len(text))):
        pieces = list(source.pieces(start, end))
        assert "".join(p for _, p in pieces) == text[start:end]
        assert [o for o, _ in pieces] == [start + sum(len(p) for _, p in pieces[:i]) for i in range(len(pieces))]
        assert list(iter_sentences(source.pieces(start, end))) == list(iter_sentences(StrText(text).pieces(start, end)))
    assert [source.line_start(p) for p in (0, 12, text.index("Hi"), len(text))] == [
        StrText(text).line_start(p) for p in (0, 12, text.index("Hi"), len(text))]
    for p in (0, 12, text.index("Hi"), text.index("Bye"), text.index("Last"), len(text)):
        start = source.line_start(p)
        assert list(source.lines_above(start)) == list(StrText(text).lines_above(start))
        assert reading_plan.voice_at(source, p) == reading_plan.voice_at(StrText(text), p)
    assert reading_plan.voice_at(source, text.index("Bye")) == "Ann"
    reading = source.pieces(0)
    next(reading)
    editor.insertPlainText("x")
    assert list(reading) == []  # the offsets it would give are stale now


def test_find_bar_colours_follow_a_dark_palette(qtbot):
    from PySide6.QtGui import QColor, QPalette
    from PySide6.QtWidgets import QVBoxLayout, QWidget

    window = QWidget()
    dark = QPalette()
    dark.setColor(QPalette.ColorRole.Base, QColor("#202020"))
    dark.setColor(QPalette.ColorRole.Text, QColor("#eeeeee"))
    window.setPalette(dark)
    editor, layout = Editor(), QVBoxLayout(window)
    bar = FindBar(editor)
    layout.addWidget(editor)
    layout.addWidget(bar)
    qtbot.addWidget(window)
    editor.setPlainText("cat dog")
    bar.field.setText("bird")
    assert not bar.find()
    missing = bar.field.palette().color(QPalette.ColorRole.Base)
    assert missing.lightness() < 100 and missing.red() > missing.green()  # dark and reddish: light text reads
    assert bar.field.palette().color(QPalette.ColorRole.Text) == QColor("#eeeeee")
    bar.field.setText("dog")
    assert bar.find()
    assert bar.field.palette().color(QPalette.ColorRole.Base) == QColor("#202020")  # the window's, not white
