"""The cold-start bridge: where the Numba kernels of the int8 CPU plan are not in the cache yet, the engine speaks on
the int8 PyTorch steps (which compile nothing) while a warm-up process compiles them
(``engine.core.cpu.numba_cache.warmup``), and steps through them from the first segment that starts after it finished.

``at_load`` decides once an engine loads: the kernels' marker in the cache folder (``engine.core.cpu.numba_cache``)
means Numba at once; its absence starts a warm-up process (one a process) and a bridge. ``numba_now()`` is what every
Numba path of the int8 plan asks (``one_position_numba.numba_stacks``, whose steps take a prompt's rows as well as the
frames' positions), and only ``at_segment_boundary`` changes it, which a streamer calls before each segment: each
segment comes wholly from one plan (the process's one bridge may switch between two engines' segments, never inside
one). The switch is logged once. Where nothing can be cached (a frozen app without sources, no writable cache folder),
with int4 weights (whose PyTorch products are Numba's too) or with the ``cpu_warmup`` option off, there is no bridge:
the kernels compile in this process at first use, waited for.

The warm-up process is left to finish when the program exits: a short command (``say``, ``--self-test``) would
otherwise end every warm-up before its longest compile and none would ever finish; Numba's cache files and the
marker are each written whole (a temporary file renamed), so no exit can leave one half-written.
An execution plan chosen at load can hold the ``ColdStart`` that ``start`` returns as its one sanctioned change.
"""

from __future__ import annotations

import logging
import threading
from pathlib import Path

from engine.core import options
from engine.core.cpu import numba_cache

log = logging.getLogger(__name__)

# where markers and the lock are looked for: Numba's cache folder when None (tests point it at a folder of their own)
MARKER_FOLDER: Path | None = None


class ColdStart:
    """A bridge on the PyTorch steps until the marker of ``key`` appears in ``folder``; ``process``: the warm-up
    started for it (it exits at once where another one holds the lock, whose marker serves as well)."""

    def __init__(self, folder: Path, key: dict, process=None):
        self.folder, self.key, self.process = Path(folder), key, process
        self.numba_now = False
        self.failed = False

    def at_segment_boundary(self) -> bool:
        """Whether the next segment steps through the Numba kernels: from the first call that finds the marker on."""
        if self.numba_now:
            return True
        if numba_cache.is_warm(self.folder, self.key):
            self.numba_now = True
            if self.process is not None:
                self.process.poll()  # the warm-up's exit status is collected where it has exited (no zombie)
            log.info("the Numba CPU steps are compiled: the segments from now on step through them")
        elif not self.failed and self.process is not None and self.process.poll() not in (None, 0):
            self.failed = True
            log.warning("compiling the Numba CPU steps in the background failed (exit code %s, see %s); the PyTorch "
                        "steps go on", self.process.returncode, self.folder / numba_cache.LOG_NAME)
        return self.numba_now


_bridge: ColdStart | None = None
_lock = threading.Lock()


def at_load() -> ColdStart | None:
    """An int8 CPU engine loads: the process's bridge where its kernels are not cached yet (``start``), else None."""
    from engine.core.cpu import numba_layer as kernels  # imported here: it loads Numba

    current = options.current()
    if not (current.cpu_numba and current.cpu_warmup) or kernels.numba is None or not kernels.cacheable():
        return None
    folder = MARKER_FOLDER or numba_cache.cache_folder()
    return None if folder is None else start(folder)


def start(folder: Path) -> ColdStart | None:
    """The process's bridge until the kernels of the int8 plan (``compiled_key``) are in ``folder``'s
    cache, with a warm-up process compiling them; None (and no bridge) where they are there already. A bridge
    for the same folder and key is kept, not started again."""
    global _bridge
    from engine.core.cpu.numba_cache import warmup

    key = numba_cache.compiled_key()
    with _lock:
        if _bridge is not None and _bridge.folder == Path(folder) and _bridge.key == key:
            return _bridge
        if numba_cache.is_warm(folder, key):
            _bridge = None
            return None
        try:
            process = warmup.start(folder)
        except OSError as e:  # no process can be started here: the kernels compile in this one, as without a cache
            log.warning("could not start a process to compile the Numba CPU steps (%s): they compile at first use", e)
            return None
        _bridge = ColdStart(folder, key, process)
        log.info("the Numba CPU steps are not compiled yet: speaking on the PyTorch steps while another process "
                 "compiles them (%s)", Path(folder) / numba_cache.LOG_NAME)
        return _bridge


def current() -> ColdStart | None:
    """The process's bridge, None where it has none (or it ended)."""
    return _bridge


def numba_now() -> bool:
    """Whether the int8 plan's Numba paths run now: no bridge, or one that has switched."""
    bridge = _bridge
    return bridge is None or bridge.numba_now


def at_segment_boundary() -> None:
    """A segment is about to start: the bridge switches to the Numba steps here if the warm-up has finished."""
    bridge = _bridge
    if bridge is not None and not bridge.numba_now:
        with _lock:
            bridge.at_segment_boundary()


def end_bridge() -> None:
    """Forget the process's bridge (the Numba paths run from now on); its warm-up process goes on."""
    global _bridge
    with _lock:
        _bridge = None
