"""Long books stay fast (issue 28): a generated 20 MB book against a one-page text, in the real window with the
fake engine (the worker, player and plan are real; the engine speaks at once).

What keeps the studio fast is bounded work, and that is what is checked, by counts and sizes rather than by
the clock (``bench/studio_long_document.py`` measures the times): opening reads the file off the GUI thread
and puts the text in piece by piece, the event loop running between pieces; Play from the middle, the next
sentence and a double-click jump read a bounded stretch of the book before the first audio, and no step of
them, nor typing, showing the word count and autosaving, copies the whole text.
"""

from __future__ import annotations

import tracemalloc

import pytest
from PySide6.QtCore import Qt, QTimer
from PySide6.QtTest import QTest

from qtapp.editor import LOAD_PIECE_CHARS
from qtapp.line_mirror import count_words
from qtapp.reading import IDLE
from qtapp.reading_plan import MAX_PIECE
from tests.qtapp.long_book import BOOK_CHARS, TYPED, book_text, place_cursor

READ_BOUND = 4 * MAX_PIECE  # characters an action may read from the document before its first audio
COPY_BOUND = 8 * 1024 * 1024  # bytes an action may allocate at its peak: the book alone takes 20 MB or more


class CountingText:
    """The editor's text source, counting the characters it hands out."""

    def __init__(self, source):
        self.source, self.read = source, 0

    def line_start(self, position: int) -> int:
        return self.source.line_start(position)

    def lines_above(self, line_start: int):
        for line in self.source.lines_above(line_start):
            self.read += len(line) + 1
            yield line

    def pieces(self, start: int, end: int | None = None):
        for offset, piece in self.source.pieces(start, end):
            self.read += len(piece)
            yield offset, piece


class Work:
    """The work of an action: characters read from the document and the peak of new allocations (every
    thread's), from the action to the first audio handed to the player."""

    def __init__(self, window):
        self.text = CountingText(window.editor.text_source)
        window.editor.text_source = self.text
        self.writes = 0
        write = window.player.write

        def counted(samples, sentence):
            self.writes += 1
            write(samples, sentence)

        window.player.write = counted

    def of(self, qtbot, action) -> tuple[int, int]:
        self.writes, self.text.read = 0, 0
        tracemalloc.reset_peak()
        before = tracemalloc.get_traced_memory()[0]
        action()
        qtbot.waitUntil(lambda: self.writes > 0, timeout=30_000)
        return self.text.read, tracemalloc.get_traced_memory()[1] - before


def reading_work(qtbot, window, work: Work, length: int) -> dict[str, tuple[int, int]]:
    """(characters read, peak bytes) of Play at the middle, the next sentence, and a jump to three quarters."""
    place_cursor(window, length // 2)
    got = {"play": work.of(qtbot, window.read_aloud.play),
           "skip": work.of(qtbot, window.window_actions.next.trigger),
           "jump": work.of(qtbot, lambda: window.editor.position_activated.emit(3 * length // 4))}
    window.reader.stop()
    assert window.reader.state == IDLE
    return got


@pytest.fixture
def window(open_window):
    return open_window(loaded=True)


@pytest.fixture
def traced():
    tracemalloc.start()
    yield
    tracemalloc.stop()


def test_a_twenty_megabyte_book_reads_and_types_like_a_page(qtbot, window, tmp_path, traced):
    work = Work(window)
    page = book_text(3000)
    window.editor.setPlainText(page)
    on_page = reading_work(qtbot, window, work, len(page))
    assert on_page["play"][0] > 0  # the count sees Play's plan read the text

    book = book_text(BOOK_CHARS)
    path = tmp_path / "book.txt"
    path.write_text(book, encoding="utf-8")
    progress, turns = [], [0]
    window.editor.loading_progress.connect(lambda done, total: progress.append((done, total, turns[0])))
    ticker = QTimer(interval=0, timerType=Qt.TimerType.PreciseTimer)  # fires once each event-loop turn
    ticker.timeout.connect(lambda: turns.__setitem__(0, turns[0] + 1))
    ticker.start()
    with qtbot.waitSignal(window.editor.loading_finished, timeout=120_000):
        assert window.open_path(path)
        assert window.loader.busy  # read on the loader's thread: open_path returned before reading it
    ticker.stop()
    done = [0] + [d for d, _, _ in progress]
    assert progress[-1][:2] == (len(book), len(book))
    assert len(progress) >= len(book) // LOAD_PIECE_CHARS  # in pieces...
    assert max(b - a for a, b in zip(done, done[1:], strict=False)) <= LOAD_PIECE_CHARS
    at_turn = [turn for _, _, turn in progress]
    assert all(a < b for a, b in zip(at_turn, at_turn[1:], strict=False)), at_turn  # ...a turn of the loop each
    assert window.editor.toPlainText() == book

    in_book = reading_work(qtbot, window, work, len(book))
    print(f"\nwork before first audio, (characters read, peak bytes): page {on_page}; book {in_book}")
    for name, (read, peak) in in_book.items():
        assert read <= READ_BOUND and peak <= COPY_BOUND, (name, in_book[name], on_page[name])

    words = count_words(book) + count_words(TYPED)  # before the tracing: it splits the whole book
    resyncs = []
    window.editor.mirror.resync = lambda: resyncs.append(1)  # a whole re-read of the text, which typing never needs
    place_cursor(window, window.editor.document().characterCount() // 2)
    window.editor.setFocus()
    tracemalloc.reset_peak()
    before = tracemalloc.get_traced_memory()[0]
    for key in TYPED:
        QTest.keyClick(window.editor, key)
    qtbot.waitUntil(lambda: window.counts_label.text().startswith(f"{words:,} words"), timeout=30_000)
    saved = window.autosave.save_now()
    qtbot.waitUntil(saved.done, timeout=60_000)
    typing_peak = tracemalloc.get_traced_memory()[1] - before
    assert resyncs == [] and typing_peak <= COPY_BOUND, typing_peak
    assert window.autosave.path.read_text(encoding="utf-8") == window.editor.toPlainText()
