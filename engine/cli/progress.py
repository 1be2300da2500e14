"""What ``orator export`` shows while it speaks, and how Ctrl-C stops it: a progress line on stderr and a first
Ctrl-C that cancels the export cleanly rather than interrupting it wherever it happens to be."""

from __future__ import annotations

import contextlib
import signal
import sys
import threading
import time


class ProgressLine:
    """Progress on stderr: one line rewritten in place on a terminal, else a line every 5 % or 30 s."""

    def __init__(self, label: str, stream=None):
        self.label = label
        self.stream = stream or sys.stderr
        self.tty = self.stream.isatty()
        self._shown = -1.0
        self._at = 0.0
        self._open = False

    def __call__(self, progress) -> None:
        from engine.production.time_left import format_time_left

        percent = 100 * progress.fraction
        line = (f"{self.label}: {percent:3.0f}% · sentence {progress.done_segments} of {progress.total_segments}"
                f" · {format_time_left(progress.eta_s)}")
        now = time.monotonic()
        if self.tty:
            filled = int(progress.fraction * 20)
            self.stream.write(f"\r[{'#' * filled}{'.' * (20 - filled)}] " + line[:200].ljust(79))
            self._open = True
        elif percent >= self._shown + 5 or now - self._at >= 30 or progress.done_segments == progress.total_segments:
            self.stream.write(line + "\n")
            self._shown, self._at = percent, now
        self.stream.flush()

    def close(self) -> None:
        if self._open:
            self.stream.write("\n")
            self.stream.flush()
            self._open = False


@contextlib.contextmanager
def ctrl_c_cancels(cancel: threading.Event):
    """While open, a first Ctrl-C sets ``cancel`` (the exporter stops within a chunk and removes its partial
    files) rather than raising wherever the main thread happens to be: a KeyboardInterrupt raised inside a
    library's callback can be swallowed there, and the export would run on. A second Ctrl-C interrupts at once."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def first(signum, frame):
        cancel.set()
        signal.signal(signal.SIGINT, signal.default_int_handler)

    previous = signal.signal(signal.SIGINT, first)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
