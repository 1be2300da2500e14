"""An export's levels: what it wrote, measured as it is written, and the room tone an audiobook target puts at the
ends of each file. Qt-free; ``engine.production.book_export`` uses it.

``WrittenLevels`` hears every sample an export writes, after its gain and limiter, so the figures reported after
an export (``orator export``, the studio's queue) are those of the files, whether a target was asked for or not:
one ``LoudnessMeter`` over the whole export (integrated loudness, true peak, RMS), and each file's own RMS and
sample peak (numpy: two numbers a file), which ACX checks file by file. ``add_room_tone`` puts the target's
silence before the first speech and after the last of one file's items.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from engine.production.loudness import Loudness, LoudnessMeter, LoudnessTarget, energy


@dataclass
class FileLevels:
    energy: float = 0.0
    samples: int = 0
    peak: float = 0.0

    @property
    def rms_db(self) -> float:
        return 10 * math.log10(self.energy / self.samples) if self.energy > 0 else -math.inf

    @property
    def peak_dbfs(self) -> float:
        return 20 * math.log10(self.peak) if self.peak > 0 else -math.inf


class WrittenLevels:
    """``start(path)`` a file, ``feed`` what is written to it, ``result()`` the whole export's ``Loudness``."""

    def __init__(self, sample_rate: int):
        self._meter = LoudnessMeter(sample_rate)
        self.files: dict[Path, FileLevels] = {}
        self._file: FileLevels | None = None

    def start(self, path: Path) -> None:
        self._file = self.files[path] = FileLevels()

    def feed(self, samples: np.ndarray) -> None:
        if not samples.size:
            return
        self._meter.feed(samples)
        self._file.energy += energy(samples)
        self._file.samples += samples.size
        self._file.peak = max(self._file.peak, float(np.max(np.abs(samples))))

    def result(self) -> Loudness:
        return self._meter.result()

    def off_target(self, target: LoudnessTarget | None) -> list[str]:
        """For a target with an RMS range: each file outside it, or with a sample peak over the ceiling, in words."""
        if target is None or target.rms_range is None or len(self.files) < 2:
            return []  # one file: the whole export's figures say it
        low, high = target.rms_range
        return [f"{path.name}: RMS {levels.rms_db:.1f} dB, peak {levels.peak_dbfs:.1f} dBFS"
                for path, levels in self.files.items()
                if not low <= levels.rms_db <= high or levels.peak_dbfs > target.ceiling_dbtp]


def add_room_tone(items: list, target: LoudnessTarget | None) -> list:
    """``items`` (one file's ``Speech``, ``Pause`` and ``ChapterStart``) with the target's room tone: silence after
    the file's first chapter mark (so the mark stays at its start) and at its end."""
    from engine.production.export_plan import ChapterStart, Pause

    lead, tail = target.room_tone_s if target is not None else (0.0, 0.0)
    if not lead and not tail:
        return items
    at = 1 if items and isinstance(items[0], ChapterStart) else 0
    out = list(items)
    if lead:
        out.insert(at, Pause(lead))
    if tail:
        out.append(Pause(tail))
    return out
