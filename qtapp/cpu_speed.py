"""What speed a user without a GPU can expect: this processor measured on each model size, in plain words.

``SpeedProbe`` runs ``engine.core.cpu.speed_probe.measure_cpu_speed`` for the 0.6B and then the 1.7B on a thread of its
own (a fixed number of frames each, never a compile: seconds in all; the 1.7B at the thread count the 0.6B found
faster), emitting each result and the plan it measured; ``speed_advice`` turns the results into the sentence the
first-run dialog shows, which names that plan, says whether reading aloud keeps up and suggests the sizes that do,
from the figures it shows, as shown. The results are kept in the settings (``cpu_speed``) so the Settings dialog can
show them later.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

from PySide6.QtCore import QObject, Signal

SIZES = ("0.6b", "1.7b")
KEEPS_UP = 1.0  # seconds of audio per second: below it, reading aloud pauses while speech is made


def speed_advice(xrt: dict[str, float], plan: str = "") -> str:
    """The first-run dialog's sentence for the measured real-time factors (``{"0.6b": 0.8, "1.7b": 0.4}``) on
    ``plan`` (``engine.core.cpu.speed_probe.CpuSpeed.plan``, named where given). The advice reads the figures as
    they are shown (two decimals): a size keeps up where its figure reads 1.00× or more, whatever the other's."""
    measured = [size for size in SIZES if size in xrt]
    if not measured:
        return ""
    shown = {size: round(xrt[size], 2) for size in measured}
    figures = ", ".join(f"the {size.upper()} model {shown[size]:.2f}× real time" for size in measured)
    on = f" ({plan})" if plan else ""
    said = f"Measured on this processor{on}: {figures} (1× reads aloud without pauses)."
    keeping = [size for size in measured if shown[size] >= KEEPS_UP]
    if len(keeping) == len(measured):
        return said + (" Every model keeps up here." if len(measured) == len(SIZES) else
                       f" The {measured[0].upper()} models keep up here.")
    if keeping:
        size, other = keeping[0].upper(), next(s for s in measured if s not in keeping).upper()
        return (said + f" Choose the {size} models ({size} CustomVoice to read, {size} Base to clone): the {other} "
                "ones cannot keep up with a listener here, though they export at their own pace.")
    return (said + " Reading aloud will pause between sentences on this processor with "
            + ("either model size" if len(measured) > 1 else f"the {measured[0].upper()} models")
            + "; exporting to audio files works at its own pace. A CUDA graphics card reads many times faster.")


class SpeedProbe(QObject):
    """Measures each size on a thread of its own; ``measured(size, xrt, plan)`` per size, then ``finished``, delivered
    on the thread that made the probe. ``measure(size, threads=...) -> engine.core.cpu.speed_probe.CpuSpeed`` (threads:
    None for the first size, then the count the first found faster) is injectable for tests.
    A plain daemon thread, not a QThread: a dialog closed (or destroyed) while it measures needs nothing
    stopped; ``stop`` only asks it to end after the size it is on."""

    measured = Signal(str, float, str)  # size, ×RT, the plan measured
    failed = Signal(str)
    finished = Signal()

    def __init__(self, measure: Callable | None = None, sizes=SIZES):
        super().__init__()
        if measure is None:
            from engine.core.cpu.speed_probe import measure_cpu_speed as measure
        self._measure = measure
        self._sizes = tuple(sizes)
        self._stop = threading.Event()
        self.thread = threading.Thread(target=self._run, name="cpu-speed", daemon=True)

    def start(self) -> None:
        self.thread.start()

    def _run(self) -> None:
        try:
            threads = None  # the first size measures the counts the engine chooses between; the rest its faster
            for size in self._sizes:
                if self._stop.is_set():
                    break
                speed = self._measure(size, threads=threads)
                threads = getattr(speed, "threads", None)
                self.measured.emit(size, float(speed.realtime_factor), getattr(speed, "plan", ""))
        except Exception as exc:  # noqa: BLE001 - out of memory, an odd build: say so, the dialog still works
            self.failed.emit(f"The speed of this processor could not be measured ({type(exc).__name__}: {exc}).")
        finally:
            self.finished.emit()

    def stop(self, wait_s: float = 0.0) -> None:
        """Ask to stop after the size being measured; wait up to ``wait_s`` for the thread to end."""
        self._stop.set()
        if wait_s and self.thread.is_alive():
            self.thread.join(wait_s)
