"""A voiceover track made from its lines: each line spoken (``speak_line``), laid in time
(``engine.production.voiceover.timeline``), sped up where it must be (``engine.production.tempo``), joined with silence
between,
resampled (soxr) to the rate asked for, brought to a loudness (``engine.production.loudness``), and written: the track
(``engine.production.encode``), one numbered clip per cue cut from the finished track (so clips and track match in
level), and subtitles with the timings the speech actually has. Qt-free.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from engine.core.chunks import SAMPLE_RATE
from engine.production.loudness import LoudnessTarget, Normalized, measure, normalize, report
from engine.production.subtitles import Cue, subtitle_writer
from engine.production.tempo import stretch
from engine.production.voiceover.cues import SubtitleCue
from engine.production.voiceover.timeline import DEFAULT_MAX_TEMPO, Placement, describe, lay_out, speech_bounds

TAIL_S = 0.5  # silence after the last line


@dataclass
class Voiceover:
    samples: np.ndarray  # float32 [N] at sample_rate: the finished track
    sample_rate: int
    placements: list[Placement]  # at the engine's rate
    loudness: Normalized | None  # None: levels kept as spoken

    def span(self, placement: Placement) -> tuple[int, int]:
        """(first, end) sample of a placed line on the finished track."""
        scale = self.sample_rate / SAMPLE_RATE
        return round(placement.start * scale), min(self.samples.size, round(placement.end * scale))

    def report(self) -> list[str]:
        lines = describe(self.placements, SAMPLE_RATE)
        if self.loudness is not None:
            lines.append(self.loudness.report())
        else:  # levels kept as spoken are reported too
            lines.append(report(measure(self.samples, self.sample_rate), None))
        return lines


def speak_line(engine, text: str, voice, sampling, max_frames: int | None = None, pronunciation=None,
               segment_chars: int | None = None) -> np.ndarray:
    """One cue's line as the engine speaks it, with the silence before and after the speech trimmed:
    float32 [N] at the engine's 24 kHz."""
    audio = engine.synthesize(text, voice, sampling=sampling, max_frames=max_frames, pronunciation=pronunciation,
                              segment_chars=segment_chars)
    first, end = speech_bounds(audio.samples, audio.sample_rate)
    return np.ascontiguousarray(audio.samples[first:end], dtype=np.float32)


def assemble(cues: Sequence[SubtitleCue], lines: Sequence[np.ndarray], sample_rate: int = SAMPLE_RATE,
             max_tempo: float = DEFAULT_MAX_TEMPO, loudness: LoudnessTarget | None = None) -> Voiceover:
    """The track of ``lines`` (one per cue, float32 at 24 kHz, trimmed) placed on ``cues``; see the module doc."""
    placements = lay_out([(c.number, _samples(c.start_s), _samples(c.end_s)) for c in cues],
                         [len(line) for line in lines], SAMPLE_RATE, max_tempo)
    total = (max(p.end for p in placements) if placements else 0) + _samples(TAIL_S)
    track = np.zeros(total, dtype=np.float32)
    for placement, line in zip(placements, lines, strict=True):
        spoken = stretch(line, placement.tempo) if placement.tempo != 1.0 else line
        track[placement.start:placement.start + spoken.size] = spoken[:placement.length]
    if sample_rate != SAMPLE_RATE:
        import soxr

        track = soxr.resample(track, SAMPLE_RATE, sample_rate, quality="HQ").astype(np.float32, copy=False)
    normalized = normalize(track, sample_rate, loudness) if loudness is not None else None
    if normalized is not None:
        track = normalized.samples
    return Voiceover(track, sample_rate, placements, normalized)


def write_voiceover(voiceover: Voiceover, cues: Sequence[SubtitleCue], out: Path, subtitles_kind: str,
                    clips: Path | None = None, source: Path | None = None) -> list[Path]:
    """The track at ``out`` (its format by suffix), its subtitles beside it (``subtitles_path``) and, with
    ``clips``, ``NNN<suffix>`` there per cue. Returns the files written."""
    from engine.atomic_files import atomic_write
    from engine.production.encode import FileEncoder

    written = []
    with FileEncoder(out, sample_rate=voiceover.sample_rate) as encoder:
        encoder.write(voiceover.samples)
    written.append(out)
    subtitle_path = subtitles_path(out, subtitles_kind, source)

    def write_subtitles(path: Path) -> None:
        with open(path, "w", encoding="utf-8", newline="\n") as f:
            writer = subtitle_writer(subtitles_kind, f)
            for cue in actual_cues(voiceover, cues):
                writer.write(cue)

    atomic_write(subtitle_path, write_subtitles)
    written.append(subtitle_path)
    if clips is not None:
        clips.mkdir(parents=True, exist_ok=True)
        width = max(3, len(str(max(c.number for c in cues))))
        for placement in voiceover.placements:
            first, end = voiceover.span(placement)
            path = clips / f"{placement.number:0{width}d}{out.suffix.lower()}"
            with FileEncoder(path, sample_rate=voiceover.sample_rate) as encoder:
                encoder.write(voiceover.samples[first:end])
            written.append(path)
    return written


def subtitles_path(out: Path, kind: str, source: Path | None = None) -> Path:
    """Where the subtitles with the actual timings go: ``out`` with the subtitles' suffix, or ``NAME.timed.srt``
    where that is the ``source`` file itself (the subtitles voiced are never overwritten)."""
    path = out.with_suffix(f".{kind}")
    if source is not None and path.exists() and source.exists() and path.samefile(source):
        path = out.with_suffix(f".timed.{kind}")
    return path


def actual_cues(voiceover: Voiceover, cues: Sequence[SubtitleCue]) -> list[Cue]:
    """The cues as the track has them, under their own numbers: each from where its speech starts to where it ends,
    or to the cue's own end where that is later and the next line has not begun."""
    out = []
    starts = [p.start for p in voiceover.placements[1:]] + [math.inf]
    for placement, cue, following in zip(voiceover.placements, cues, starts, strict=True):
        end = max(placement.end, min(placement.cue_end, following))
        out.append(Cue(placement.start / SAMPLE_RATE, end / SAMPLE_RATE, cue.text, cue.number))
    return out


def _samples(seconds: float) -> int:
    return round(seconds * SAMPLE_RATE)
