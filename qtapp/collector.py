"""Python's cyclic garbage collection kept on the GUI thread.

A collection destroys what it frees on whichever thread runs it, and Python starts one on any thread that happens
to allocate past a threshold. Qt objects must be destroyed on the thread that owns them: a collection on the speech
worker's thread that frees a widget's wrapper, or a dialog left in a reference cycle, crashes the process. So the
studio turns automatic collection off and runs the same passes from a timer on the GUI thread (the pattern
pyqtgraph and the Qt for Python wiki recommend); the one full collection after a model loads goes there too."""

from __future__ import annotations

import gc
from collections.abc import Callable

from PySide6.QtCore import QCoreApplication, QObject, QTimer

from engine.core.runtime import settle_heap

INTERVAL_MS = 500  # often enough that garbage never piles up between passes, so each young pass stays short


class GuiThreadCollector(QObject):
    """While it lives, collections run only from its timer, on the thread it was made on (the GUI thread). Each
    tick runs the generation Python itself would have run by now, judged by the same counts and thresholds, and
    at least the youngest."""

    def __init__(self, parent: QObject | None = None, interval_ms: int = INTERVAL_MS):
        super().__init__(parent)
        self._was_enabled = gc.isenabled()
        gc.disable()
        self._timer = QTimer(self)
        self._timer.timeout.connect(self.collect)
        self._timer.start(interval_ms)

    def collect(self) -> int:
        """One pass of the oldest generation whose count has crossed its threshold, or of the youngest when none
        has; the number of objects it freed. The young pass runs every tick because the count a tick sees is net of
        what was freed since: a burst of garbage on the worker's thread, followed by ordinary frees, can leave it
        under the threshold that Python would have crossed mid-burst. After ``settle_heap`` froze the loaded
        model's objects, every pass is cheap."""
        counts, thresholds = gc.get_count(), gc.get_threshold()
        due = [generation for generation, (count, threshold) in enumerate(zip(counts, thresholds, strict=False))
               if threshold and count > threshold]
        return gc.collect(due[-1] if due else 0)

    def stop(self) -> None:
        """Give collection back to Python (as it was before this object took it)."""
        self._timer.stop()
        if self._was_enabled:
            gc.enable()


def settle_heap_on_gui_thread(run: Callable[[], None] | None = None) -> None:
    """``settle_heap`` for a model loaded on another thread: its full collection is queued to the application's
    thread, where freeing a Qt object is safe. Without an application it runs at once."""
    run = run or settle_heap
    app = QCoreApplication.instance()
    if app is None:
        run()
    else:
        QTimer.singleShot(0, app, run)
