"""How fast the studio stays on a 20 MB book (issue 28), against a one-page text: a benchmark, not a CI test.

In the real window over the fake engine (the worker, player and plan are real; the engine speaks at once), it
measures opening (file chosen to text editable), Play from the middle, next sentence and a double-click jump
(each from the action to the first audio handed to the player), and typing in the middle of the book (the
longest the GUI thread goes without running its event loop while keys are typed, the word count is shown and
the text is autosaved). It prints the figures and asserts none: the targets (opening under 3 s; Play, skip
and jump within 100 ms of the page's; no stall longer than a 16 ms frame) are read off its output. CI proves
the bounded work behind them by counts instead (``tests/qtapp/test_long_documents.py``).

Run: ``python -m bench.studio_long_document`` (pytest with the studio's test fixtures; ``--json FILE`` also
appends the figures to FILE as one JSON line).
"""

from __future__ import annotations

import json
import os
import statistics
import sys
import time
from pathlib import Path

import pytest
from PySide6.QtCore import QEventLoop, Qt, QTimer
from PySide6.QtTest import QTest

from qtapp.editor import COUNT_DELAY_MS
from qtapp.reading import IDLE
from tests.qtapp.long_book import BOOK_CHARS, TYPED, book_text, place_cursor

RESULTS_ENV = "ORATOR_BENCH_LONG_DOCUMENT_JSON"  # where main() asks the run to append its figures


class WriteTimes:
    """Records when the reading controller hands audio to the player."""

    def __init__(self, player):
        self.times: list[float] = []
        write = player.write

        def timed(samples, sentence):
            self.times.append(time.perf_counter())
            write(samples, sentence)

        player.write = timed


class Heartbeat:
    """A 1 ms timer on the GUI thread: the longest gap between its ticks is the longest stall."""

    def __init__(self):
        self.ticks: list[float] = []
        self.timer = QTimer(interval=1, timerType=Qt.TimerType.PreciseTimer)
        self.timer.timeout.connect(lambda: self.ticks.append(time.perf_counter()))

    def __enter__(self):
        self.ticks = [time.perf_counter()]
        self.timer.start()
        return self

    def __exit__(self, *exc):
        self.timer.stop()
        self.ticks.append(time.perf_counter())

    @property
    def longest_gap(self) -> float:
        return max(b - a for a, b in zip(self.ticks, self.ticks[1:], strict=False))


def first_audio_s(qtbot, writes: WriteTimes, action) -> float:
    writes.times.clear()
    started = time.perf_counter()
    action()
    qtbot.waitUntil(lambda: bool(writes.times), timeout=10_000)
    return writes.times[0] - started


def reading_latencies(qtbot, window, writes: WriteTimes, length: int, repeats: int = 3) -> dict[str, float]:
    """Median seconds to first audio of Play at the middle, the next sentence, and a jump to three quarters."""
    got: dict[str, list[float]] = {"play": [], "skip": [], "jump": []}
    for _ in range(repeats):
        place_cursor(window, length // 2)
        got["play"].append(first_audio_s(qtbot, writes, window.play))
        got["skip"].append(first_audio_s(qtbot, writes, window.window_actions.next.trigger))
        got["jump"].append(first_audio_s(qtbot, writes,
                                         lambda: window.editor.position_activated.emit(3 * length // 4)))
        window.reader.stop()
        assert window.reader.state == IDLE
    return {name: statistics.median(values) for name, values in got.items()}


def typing_stall_s(window) -> float:
    """The longest GUI stall while typing in the middle, showing the word count and autosaving. Driven by timers
    in a real event loop, since ``qWait`` sleeps in 10 ms steps and would hide (and cause) gaps."""
    editor = window.editor
    place_cursor(window, editor.document().characterCount() // 2)
    editor.setFocus()

    def script():  # each step yields True; the loop ends when it is done
        for key in TYPED:
            QTest.keyClick(editor, key)
            yield True
        shown = time.perf_counter() + 2 * COUNT_DELAY_MS / 1000
        while time.perf_counter() < shown:  # the word count is shown meanwhile
            yield True
        saved = window.autosave.save_now()
        while not saved.done():
            yield True

    steps, loop = script(), QEventLoop()
    driver = QTimer(interval=4, timerType=Qt.TimerType.PreciseTimer)
    driver.timeout.connect(lambda: next(steps, False) or loop.quit())
    with Heartbeat() as beat:
        driver.start()
        loop.exec()
        driver.stop()
    return beat.longest_gap


def test_long_document_timings(qtbot, open_window, tmp_path):
    window = open_window(loaded=True)
    page = book_text(3000)
    writes = WriteTimes(window.player)
    window.editor.setPlainText(page)
    short = reading_latencies(qtbot, window, writes, len(page))
    page_stalls = [typing_stall_s(window) for _ in range(3)]

    book = book_text(BOOK_CHARS)
    path = tmp_path / "book.txt"
    path.write_text(book, encoding="utf-8")
    started = time.perf_counter()
    with qtbot.waitSignal(window.editor.loading_finished, timeout=120_000):
        assert window.open_path(path)
    opening_s = time.perf_counter() - started
    long = reading_latencies(qtbot, window, writes, len(book))
    stalls = [typing_stall_s(window) for _ in range(3)]  # the best of three: another process may preempt

    figures = {"scenario": "studio_long_document", "book_chars": BOOK_CHARS, "opening_s": opening_s,
               **{f"{name}_page_s": short[name] for name in short}, **{f"{name}_book_s": long[name] for name in long},
               "typing_stall_page_s": min(page_stalls), "typing_stall_book_s": min(stalls),
               "typing_stall_book_runs_s": stalls}
    print(f"\nlong-document timings: opening {opening_s:.2f} s (target < 3 s); "
          + "; ".join(f"{name} {1000 * short[name]:.1f} ms (page) vs {1000 * long[name]:.1f} ms (20 MB)"
                      for name in short)
          + " (target: within 100 ms of the page's)"
          + f"; typing, word count and autosave: longest stall {1000 * min(stalls):.1f} ms "
            f"(runs: {', '.join(f'{1000 * s:.1f}' for s in stalls)} ms; page {1000 * min(page_stalls):.1f} ms; "
            "target < 16 ms)")
    if os.environ.get(RESULTS_ENV):
        with open(os.environ[RESULTS_ENV], "a", encoding="utf-8") as f:
            f.write(json.dumps(figures) + "\n")


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["--json"] and len(argv) >= 2:
        os.environ[RESULTS_ENV] = str(Path(argv[1]).resolve())
        argv = argv[2:]
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    return pytest.main([__file__, "-p", "tests.qtapp.conftest", "-s", "-q", "-p", "no:cacheprovider", *argv])


if __name__ == "__main__":
    sys.exit(main())
