"""Large documents open off the GUI thread: the window keeps running its timers while a 20 MB HTML book is read,
shows that it is opening one with a way to cancel, shows a failure, and asks about unsaved text as before."""

from __future__ import annotations

import html
import threading
import time

import pytest
from PySide6.QtWidgets import QMessageBox

from qtapp.document_loader import BACKGROUND_BYTES, in_background
from tests.qtapp.test_long_documents import book_text


@pytest.fixture(scope="module")
def big_html(tmp_path_factory):
    """A 20 MB HTML book: paragraphs, a heading every 200 of them (seconds to parse)."""
    paragraphs = book_text(20_000_000).split("\n\n")
    body = "".join((f"<h2>Chapter {i // 200 + 1}</h2>" if i % 200 == 0 else "") + f"<p>{html.escape(p)}</p>\n"
                   for i, p in enumerate(paragraphs))
    path = tmp_path_factory.mktemp("big") / "book.html"
    path.write_text(f"<html><head><title>The Long Book</title></head><body>{body}</body></html>", encoding="utf-8")
    return path


@pytest.fixture
def window(open_window):
    return open_window(loaded=True)


def test_a_big_html_book_opens_while_the_window_keeps_running(qtbot, window, big_html, monkeypatch):
    import qtapp.document_loader as loader_module

    readers = []  # the thread each parse ran on
    real_load = loader_module.load_document

    def load(path):
        readers.append(threading.get_ident())
        return real_load(path)

    monkeypatch.setattr(loader_module, "load_document", load)
    pieces = []
    window.editor.loading_progress.connect(lambda done, total: pieces.append(done))
    finished = []
    window.editor.loading_finished.connect(lambda: finished.append(True))
    started = time.perf_counter()
    assert window.open_path(big_html)
    # back to the event loop before the book is read: the parse runs on the loader's thread
    assert window.loader.busy and not finished and window.editor.document().characterCount() <= 1
    assert window.loading_indicator.isVisible()
    assert window.loading_indicator.label.text() == "Opening book.html…"
    with qtbot.waitSignal(window.editor.loading_finished, timeout=120_000):
        pass
    assert readers and threading.get_ident() not in readers
    assert not window.loading_indicator.isVisible()
    assert window.windowTitle() == "The Long Book — Orator"
    assert window.editor.document().characterCount() > 15_000_000
    assert len(window.document_chapters) > 100
    print(f"\n20 MB HTML: opened in {time.perf_counter() - started:.1f} s")
    # the text went into the editor piece by piece, each piece a pass of the event loop of its own (Editor.load_text):
    # the window never waited for the whole insertion
    assert len(pieces) > 50 and pieces == sorted(pieces)  # 256 K characters a piece (LOAD_PIECE_CHARS)


def test_cancel_leaves_the_text_as_it_was(qtbot, window, big_html):
    window.editor.setPlainText("My own words.")
    window.editor.document().setModified(False)
    assert window.open_path(big_html)
    assert not window.open_path(big_html)  # one at a time
    assert window.statusBar().currentMessage() == "Still loading the previous document…"
    window.loading_indicator.cancel_button.click()
    assert not window.loading_indicator.isVisible() and not window.loader.busy
    assert window.statusBar().currentMessage() == "Not opened; your text is as it was."
    qtbot.waitUntil(lambda: not any(t.name == "document-loader" for t in threading.enumerate()), timeout=60_000)
    qtbot.wait(50)  # the parse ended unseen: its result, delivered, is dropped
    assert window.editor.toPlainText() == "My own words." and window.windowTitle() == "Orator"


def test_a_broken_big_file_is_reported(qtbot, window, tmp_path):
    broken = tmp_path / "broken.epub"
    broken.write_bytes(b"not a zip archive " * (BACKGROUND_BYTES // 10))
    assert in_background(broken)
    assert window.open_path(broken)
    qtbot.waitUntil(window.banner.isVisible, timeout=10_000)
    assert "“broken.epub” is not a valid EPUB file" in window.banner.label.text()
    assert not window.loading_indicator.isVisible() and not window.loader.busy


def test_unsaved_text_is_asked_about_once_the_big_file_is_read(qtbot, window, tmp_path, message_box):
    big = tmp_path / "big.txt"
    big.write_text("A sentence of a long book.\n" * (BACKGROUND_BYTES // 20), encoding="utf-8")
    window.editor.setFocus()
    window.editor.insertPlainText("Typed, not saved.")
    message_box.answer = QMessageBox.StandardButton.Cancel
    assert window.open_path(big)
    qtbot.waitUntil(lambda: bool(message_box.asked), timeout=10_000)
    assert "not saved" in message_box.asked[0]
    assert window.editor.toPlainText() == "Typed, not saved." and window.is_modified
    message_box.answer = QMessageBox.StandardButton.Discard
    with qtbot.waitSignal(window.editor.loading_finished, timeout=10_000):
        assert window.open_path(big)
    assert window.editor.toPlainText().startswith("A sentence of a long book.")


def test_small_and_missing_files_open_at_once(tmp_path):
    small = tmp_path / "small.txt"
    small.write_text("x" * (BACKGROUND_BYTES - 1))
    assert not in_background(small) and not in_background(tmp_path / "missing.txt")
    small.write_text("x" * BACKGROUND_BYTES)
    assert in_background(small)
