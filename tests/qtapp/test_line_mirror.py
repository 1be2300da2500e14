"""The line mirror follows every kind of edit exactly (typing, deleting, replacing, pasting several lines, undo,
redo, replacing the whole text), so the word count and autosave need never read the document; autosave writes
the mirror's lines on its own thread."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st
from PySide6.QtGui import QTextCursor

from qtapp.autosave import WRITE_BATCH_LINES, write_lines
from qtapp.editor import Editor
from qtapp.line_mirror import count_words

_PIECES = st.lists(st.sampled_from(["word", " ", "\n", "\n\n", "two words", "\u2029", "\u2028", "\u00a0", "\t",
                                    "é", "’", "中文", "a\nb\nc"]), max_size=6).map("".join)
_EDIT = st.one_of(
    st.tuples(st.just("insert"), st.integers(0, 10**6), _PIECES),
    st.tuples(st.just("delete"), st.integers(0, 10**6), st.integers(0, 40)),
    st.tuples(st.just("replace"), st.integers(0, 10**6), st.integers(0, 40), _PIECES),
    st.tuples(st.just("undo")), st.tuples(st.just("redo")),
    st.tuples(st.just("set"), _PIECES),
)


def apply(editor: Editor, edit) -> None:
    document, kind = editor.document(), edit[0]
    length = document.characterCount() - 1
    cursor = QTextCursor(document)
    if kind == "insert":
        cursor.setPosition(edit[1] % (length + 1))
        cursor.insertText(edit[2])
    elif kind in ("delete", "replace"):
        start = edit[1] % (length + 1)
        cursor.setPosition(start)
        cursor.setPosition(min(length, start + edit[2]), QTextCursor.MoveMode.KeepAnchor)
        cursor.insertText(edit[3]) if kind == "replace" else cursor.removeSelectedText()
    elif kind == "undo":
        editor.undo()
    elif kind == "redo":
        editor.redo()
    else:
        editor.setPlainText(edit[1])


@settings(max_examples=150, deadline=None)
@given(start=_PIECES, edits=st.lists(_EDIT, max_size=25))
def test_the_mirror_equals_the_document_after_any_edits(qapp, start, edits):
    editor = Editor()
    editor.setPlainText(start)
    for edit in edits:
        apply(editor, edit)
        text = editor.toPlainText()
        assert "\n".join(editor.mirror.lines) == text
        assert len(editor.mirror.lines) == editor.document().blockCount()
        assert editor.mirror.words == count_words(text)
        assert editor.mirror.characters == len(text)
    editor.deleteLater()


def test_a_load_in_pieces_is_mirrored(qtbot):
    editor = Editor()
    qtbot.addWidget(editor)
    text = "Line of a book with words.\n" * 40_000 + "the end"
    with qtbot.waitSignal(editor.loading_finished, timeout=30_000):
        editor.load_text(text)
    assert "\n".join(editor.mirror.lines) == text
    assert editor.mirror.words == count_words(text)


def test_lines_are_written_whole_in_batches(tmp_path):
    lines = [f"line {i} ’" for i in range(3 * WRITE_BATCH_LINES + 5)] + ["", ""]
    target = tmp_path / "autosave.txt"
    write_lines(target, lines)
    assert target.read_text(encoding="utf-8") == "\n".join(lines)
    write_lines(target, [""])
    assert target.read_text(encoding="utf-8") == ""
    assert [p.name for p in tmp_path.iterdir()] == ["autosave.txt"]
