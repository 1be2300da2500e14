"""Typed text is never lost: Open, Recent, drop, New and Quit ask before replacing unsaved changes; Save
and Save As write plain UTF-8 text; imported documents are never overwritten; autosave keeps only unsaved
text. Each question is answered by the ``message_box`` fixture (conftest)."""

import pytest
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QFileDialog, QMessageBox

Save, Discard, Cancel = (QMessageBox.StandardButton.Save, QMessageBox.StandardButton.Discard,
                         QMessageBox.StandardButton.Cancel)


@pytest.fixture
def window(open_window):
    return open_window()


@pytest.fixture
def book(tmp_path):
    path = tmp_path / "book.txt"
    path.write_text("A book on disk.", encoding="utf-8")
    return path


@pytest.fixture
def save_dialog(monkeypatch):
    """``save_dialog.path`` is what the Save As dialog answers (None: the user cancelled)."""
    class Dialog:
        path = None
        calls = 0

        def __call__(self, *args, **kwargs):
            self.calls += 1
            return (str(self.path) if self.path else "", "")
    dialog = Dialog()
    monkeypatch.setattr(QFileDialog, "getSaveFileName", dialog)
    return dialog


def type_text(window, text):
    window.editor.setFocus()
    if text.isascii():
        QTest.keyClicks(window.editor, text)
    else:  # QTest cannot type characters outside the keyboard map; an insert is an edit all the same
        window.editor.insertPlainText(text)
    assert window.is_modified


def test_opening_over_typed_text_asks_and_cancel_keeps_it(qtbot, window, book, message_box):
    type_text(window, "My own words.")
    message_box.answer = Cancel
    assert not window.open_path(book)
    assert len(message_box.asked) == 1 and "not saved" in message_box.asked[0]
    assert window.editor.toPlainText() == "My own words." and window.is_modified
    message_box.answer = Discard
    assert window.open_path(book)
    assert window.editor.toPlainText() == "A book on disk." and not window.is_modified


def test_opening_without_changes_does_not_ask(qtbot, window, book, tmp_path, message_box):
    assert window.open_path(book)
    other = tmp_path / "other.txt"
    other.write_text("Another.", encoding="utf-8")
    assert window.open_path(other)
    assert message_box.asked == []


def test_recent_and_drop_ask_too(qtbot, window, book, tmp_path, message_box):
    assert window.open_path(book)
    type_text(window, "Edited. ")
    message_box.answer = Cancel
    window.window_actions.recent_menu.actions()[0].trigger()
    assert len(message_box.asked) == 1
    window.editor.files_dropped.emit([str(book)])
    assert len(message_box.asked) == 2
    assert window.editor.toPlainText() == "Edited. A book on disk."


def test_dropping_two_files_opens_one_and_says_so(qtbot, window, book, tmp_path):
    second = tmp_path / "second.txt"
    second.write_text("Second.", encoding="utf-8")
    window.editor.files_dropped.emit([str(book), str(second)])
    assert window.editor.toPlainText() == "A book on disk."
    message = window.statusBar().currentMessage()
    assert "Only one document opens at a time" in message and "1 other file was not opened" in message


def test_save_then_open(qtbot, window, tmp_path, save_dialog, message_box):
    type_text(window, "Text I wrote.")
    message_box.answer = Save
    save_dialog.path = tmp_path / "mine"  # no suffix: .txt is added
    other = tmp_path / "other.txt"
    other.write_text("Other text.", encoding="utf-8")
    assert window.open_path(other)
    assert (tmp_path / "mine.txt").read_text(encoding="utf-8") == "Text I wrote."
    assert window.editor.toPlainText() == "Other text."


def test_save_cancelled_in_the_dialog_keeps_the_text(qtbot, window, book, save_dialog, message_box):
    type_text(window, "Keep me.")
    message_box.answer = Save
    assert not window.open_path(book)  # the Save As dialog was cancelled
    assert window.editor.toPlainText() == "Keep me."


def test_save_writes_an_opened_text_in_place(qtbot, window, book, save_dialog):
    assert window.open_path(book)
    type_text(window, "Né ")
    assert window.documents.save()
    assert book.read_text(encoding="utf-8") == "Né A book on disk."
    assert save_dialog.calls == 0 and not window.is_modified
    assert not list(book.parent.glob(".orator-*"))  # the atomic write left no temporary file


def test_save_never_overwrites_an_imported_document(qtbot, window, tmp_path, save_dialog):
    page = tmp_path / "page.html"
    page.write_text("<html><body><p>An imported page.</p></body></html>", encoding="utf-8")
    original = page.read_bytes()
    assert window.open_path(page)
    type_text(window, "x")
    save_dialog.path = page  # the user picks the imported file itself: refused
    assert not window.documents.save()
    assert page.read_bytes() == original and window.is_modified
    save_dialog.path = tmp_path / "page.txt"
    assert window.documents.save()
    assert (tmp_path / "page.txt").read_text(encoding="utf-8") == "xAn imported page."
    assert page.read_bytes() == original
    type_text(window, "y")
    assert window.documents.save() and save_dialog.calls == 2  # from now on Save writes the .txt in place
    assert (tmp_path / "page.txt").read_text(encoding="utf-8") == "xyAn imported page."


def test_markdown_is_not_overwritten_with_its_rendered_text(qtbot, window, tmp_path, save_dialog):
    story = tmp_path / "story.md"
    story.write_text("# Title\n\nOnce.", encoding="utf-8")
    assert window.open_path(story)
    type_text(window, "x")
    save_dialog.path = None
    assert not window.documents.save() and save_dialog.calls == 1
    assert story.read_text(encoding="utf-8") == "# Title\n\nOnce."


def test_save_as_writes_the_file(qtbot, window, tmp_path, save_dialog):
    type_text(window, "First line")
    save_dialog.path = tmp_path / "out.txt"
    assert window.documents.save_as()
    assert (tmp_path / "out.txt").read_text(encoding="utf-8") == "First line"
    assert window.save_path == tmp_path / "out.txt" and window.windowTitle().startswith("out")


def test_new_asks_then_empties_the_editor(qtbot, window, message_box):
    type_text(window, "Draft.")
    message_box.answer = Cancel
    assert not window.documents.new_document()
    assert window.editor.toPlainText() == "Draft."
    message_box.answer = Discard
    new = next(a for a in window.actions() if a.text() == "&New")
    assert new.shortcut().toString() == "Ctrl+N"
    new.trigger()
    assert window.editor.toPlainText() == "" and window.document_path is None and not window.is_modified


def test_quitting_with_changes_asks_and_cancel_keeps_the_window(qtbot, window, message_box):
    type_text(window, "Unsaved.")
    message_box.answer = Cancel
    assert not window.close()
    assert window.isVisible() and len(message_box.asked) == 1
    message_box.answer = Discard
    assert window.close()


def test_autosave_never_replaces_typed_text_with_a_document(qtbot, window, book, message_box):
    settings = window.settings
    type_text(window, "Only copy.")
    window.autosave.save_now(wait=True)
    assert settings.autosave_path.read_text(encoding="utf-8") == "Only copy."
    message_box.answer = Cancel
    assert not window.open_path(book)
    window.autosave.save_now(wait=True)
    assert settings.autosave_path.read_text(encoding="utf-8") == "Only copy."
    message_box.answer = Discard  # the user chose to drop it: the document is on disk, autosave holds nothing
    assert window.open_path(book)
    window.autosave.save_now(wait=True)
    assert settings.autosave_path.read_text(encoding="utf-8") == ""


def test_restored_text_counts_as_unsaved(qtbot, open_window, window, book, message_box):
    type_text(window, "From last time.")
    window.autosave.save_now(wait=True)
    second = open_window(show=False)
    assert second.editor.toPlainText() == "From last time." and second.is_modified
    message_box.answer = Cancel
    assert not second.open_path(book)
    assert second.editor.toPlainText() == "From last time."
