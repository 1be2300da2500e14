"""Lines laid in time: where each cue's speech goes on a voiceover track, how much it is sped up, and what did not
fit. Pure arithmetic on sample counts; ``engine.production.voiceover.render`` makes the audio.

The rules: a line starts at its cue's start, unless the line before is still speaking, in which case it starts
``GAP_S`` after that one ends (it is *pushed*): speech never overlaps. A line longer than the time from its start
to its cue's end is sped up (``engine.production.tempo``) as far as ``max_tempo``; one that still runs past its cue's
end *overruns*, and is kept whole, never cut. ``Placement`` says all of it for the report.

``speech_bounds`` finds where speech begins and ends in a generated line by energy, so the model's leading
silence is not placed on the cue.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

GAP_S = 0.1  # silence between a pushed line and the one before it, so they are heard as two
DEFAULT_MAX_TEMPO = 1.25
MAX_TEMPO = 2.0  # faster speech is hard to follow, whatever the subtitles say
SILENCE_DB = -45.0  # a 10 ms window quieter than this below the line's loudest window is silence
_WINDOW_S = 0.01
_KEEP_S = 0.02  # kept before the first and after the last loud window, so a soft onset is not clipped


@dataclass(frozen=True)
class Placement:
    number: int  # the cue's
    cue_start: int  # samples
    cue_end: int
    start: int  # where the speech starts on the track
    length: int  # samples of speech after the tempo change
    tempo: float  # 1.0: as spoken
    pushed_by: int | None  # the number of the cue whose speech delayed this one, if any

    @property
    def end(self) -> int:
        return self.start + self.length

    @property
    def overrun(self) -> int:
        """Samples the speech runs past its cue's end (0 when it fits)."""
        return max(0, self.end - self.cue_end)

    @property
    def delay(self) -> int:
        return self.start - self.cue_start


def lay_out(cues: Sequence[tuple[int, int, int]], lengths: Sequence[int], sample_rate: int,
            max_tempo: float = DEFAULT_MAX_TEMPO) -> list[Placement]:
    """``cues``: (number, start, end) in samples, in order of start; ``lengths``: each line's speech in samples
    as spoken. Returns where each goes (see the module doc)."""
    if not 1.0 <= max_tempo <= MAX_TEMPO:
        raise ValueError(f"the tempo limit must be within [1, {MAX_TEMPO:g}], got {max_tempo}")
    gap = round(GAP_S * sample_rate)
    placements: list[Placement] = []
    for (number, cue_start, cue_end), length in zip(cues, lengths, strict=True):
        start, pushed_by = cue_start, None
        if placements and placements[-1].end + gap > cue_start and placements[-1].length:
            start, pushed_by = placements[-1].end + gap, placements[-1].number
        room = cue_end - start
        tempo = 1.0
        if length > room:
            tempo = min(max_tempo, length / room) if room > 0 else max_tempo
        stretched = round(length / tempo) if tempo != 1.0 else length
        placements.append(Placement(number, cue_start, cue_end, start, stretched, tempo, pushed_by))
    return placements


def speech_bounds(samples: np.ndarray, sample_rate: int) -> tuple[int, int]:
    """(first, end) sample of the speech in ``samples``: silence before and after trimmed by energy in 10 ms
    windows (``SILENCE_DB`` below the loudest); (0, 0) for silence."""
    data = np.asarray(samples, dtype=np.float32).reshape(-1)
    window = max(1, round(_WINDOW_S * sample_rate))
    count = data.size // window
    if count == 0:
        return (0, data.size) if data.size and np.any(data) else (0, 0)
    energy = np.mean(data[:count * window].reshape(count, window).astype(np.float64) ** 2, axis=1)
    loudest = float(energy.max())
    if loudest <= 1e-12:
        return 0, 0
    loud = np.flatnonzero(energy >= loudest * 10 ** (SILENCE_DB / 10))
    keep = round(_KEEP_S * sample_rate)
    first = max(0, int(loud[0]) * window - keep)
    end = min(data.size, (int(loud[-1]) + 1) * window + keep)
    if loud[-1] == count - 1:
        end = data.size  # the loud part runs into the last, partial window
    return first, end


def describe(placements: Sequence[Placement], sample_rate: int) -> list[str]:
    """One line per cue that was pushed, sped up or still overruns: what the report says."""
    lines = []
    for p in placements:
        said = []
        if p.pushed_by is not None:
            said.append(f"starts {seconds_text(p.delay, sample_rate)} late: cue {p.pushed_by} was still speaking")
        if p.tempo != 1.0:
            said.append(f"sped up {p.tempo:.2f}x")
        if p.overrun:
            said.append(f"overruns its end by {seconds_text(p.overrun, sample_rate)} (kept whole)")
        if said:
            lines.append(f"cue {p.number}: " + "; ".join(said))
    return lines


def seconds_text(samples: int, sample_rate: int) -> str:
    """A delay or overrun in words: "0.42 s", or "4 ms" under a hundredth of a second, which would read 0.00 s."""
    seconds = samples / sample_rate
    return f"{seconds:.2f} s" if seconds >= 0.01 else f"{seconds * 1000:.0f} ms"
