"""File ▸ Preview segments… on a book of over 5,000 segments opened as a user opens it: the rows are the lines
``python main.py export BOOK --list-segments`` prints, in order, with chapter, voice and text; the book is read off
the GUI thread and only a batch of rows is made until the list is scrolled; "From chapter" starts the list at a
chapter; a text with nothing to speak says so."""

from __future__ import annotations

import json

import pytest
from PySide6.QtCore import QModelIndex
from PySide6.QtWidgets import QApplication

import main
from qtapp.segment_preview import BATCH, DEFAULT_VOICE, SegmentLine

CHAPTERS, PARAGRAPHS = 250, 20


def preview_action(window):
    return next(a for a in window.actions() if a.text().replace("&", "") == "Preview segments…")


@pytest.fixture
def book(tmp_path):
    path = tmp_path / "long.txt"
    chapters = []
    for n in range(1, CHAPTERS + 1):
        lines = [f"Sentence {k} of chapter {n} is short." for k in range(1, PARAGRAPHS + 1)]
        lines[3] = f"[voice: Ryan] Ryan says line {n}."
        chapters.append(f"Chapter {n}\n\n" + "\n\n".join(lines))
    path.write_text("A Long Book\n\n" + "\n\n".join(chapters) + "\n")
    return path


def listed(capsys, path) -> list[SegmentLine]:
    assert main.main(["export", str(path), "--list-segments"]) == 0
    return [SegmentLine(**json.loads(line)) for line in capsys.readouterr().out.splitlines()]


def test_the_preview_shows_what_list_segments_prints_a_batch_at_a_time(qtbot, open_window, capsys, book):
    expected = listed(capsys, book)
    assert len(expected) > 5000
    window = open_window(loaded=True)
    with qtbot.waitSignal(window.editor.loading_finished, timeout=20_000):
        assert window.open_path(book)
    preview_action(window).trigger()
    preview = window.segment_preview
    with qtbot.waitSignal(preview.ready, timeout=20_000):
        pass
    model = preview.model
    assert model.rowCount() == BATCH and model.canFetchMore(QModelIndex())  # not the 5,000 rows at once
    assert model.rows == expected[:BATCH]
    assert preview.view.hasFocus() and preview.view.currentIndex().row() == 0
    ryan = next(i for i, line in enumerate(expected) if line.voice == "Ryan")
    assert model.index(ryan, 1).data() == "Ryan" and model.index(0, 1).data() == DEFAULT_VOICE
    assert model.index(2, 0).data() == "2. Chapter 1"  # the title page is chapter 1, as in the chapter panel
    assert model.index(2, 2).data() == "Sentence 1 of chapter 1 is short."
    for _ in range(len(expected) // BATCH + 2):  # the view asks for more as it reaches the bottom
        if not model.canFetchMore(QModelIndex()):
            break
        preview.view.scrollToBottom()
        QApplication.processEvents()
    assert model.rows == expected
    assert preview.status.text() == f"{len(expected)} segments"

    preview.chapter.setCurrentIndex(100)  # "101. Chapter 100"
    assert model.rows[0] == next(line for line in expected if line.chapter == 101)
    assert model.rowCount() == BATCH
    preview.close()


def test_a_text_with_nothing_to_speak_says_so(qtbot, open_window):
    window = open_window(loaded=True)
    preview_action(window).trigger()
    with qtbot.waitSignal(window.segment_preview.ready, timeout=20_000):
        pass
    assert window.segment_preview.model.rowCount() == 0
    assert "cannot be read for export" in window.segment_preview.status.text()
