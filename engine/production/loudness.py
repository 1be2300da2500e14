"""Loudness: integrated loudness (EBU R128 / ITU-R BS.1770) and true peak, measured and brought to a target.

- ``LoudnessMeter(sample_rate)``: ``feed(samples)`` chunk by chunk, ``result()`` -> ``Loudness`` (integrated LUFS,
  true peak dBTP). It holds no audio: FFmpeg's ``ebur128`` filter keeps only its gating histogram, so an hour costs
  what a second does. ``measure(samples, rate)`` is the one-call form.
- ``normalize(samples, rate, target)`` -> ``Normalized``: one gain for the whole signal brings it to
  ``target.lufs``; where that gain would push a true peak over ``target.ceiling_dbtp``, FFmpeg's ``alimiter``
  takes the peaks down, by at most ``MAX_LIMITING_DB`` (more is heard as pumping). Past that the ceiling wins:
  the gain is lowered until the peaks fit, and the loudness reached falls short of the target. ``Normalized``
  carries the figures before and after, measured, for the caller to report.
- ``static_gain(measured, target)``: the one gain, without a limiter, for a signal measured in a first pass and
  scaled while it is written in a second (an audiobook: one gain for every chapter and chapter file).
- ``parse_target("broadcast" | "-18")`` and ``PRESETS``: web and podcast -16 LUFS, broadcast -23 LUFS (EBU R128),
  each under a -1 dBTP ceiling; ``VOICEOVER_DEFAULT`` is -16 LUFS, -1 dBTP. ``audiobook`` is ACX's rule for
  audiobooks: an RMS level (unweighted, the whole file) between -23 and -18 dB, aimed at -20.5, peaks at most
  -3 dB (a -3 dBTP ceiling: a true peak is never below the sample peak), and room tone at the start and end of
  each file (``LoudnessTarget.room_tone_s``, written by ``engine.production.book_export``): 0.6 s before the speech
  (ACX asks 0.5 to 1 s; the voice's own quiet start adds a little) and 1.2 s after it (ACX asks 1 to 5 s).
- ``StreamLimiter``: the limiter of ``normalize`` for a signal written piece by piece (an audiobook's second pass),
  its output aligned sample for sample with its input.

Room tone is true silence, not recorded noise: a synthetic voice has no noise floor, so the pauses between its
sentences are digital silence already; a noise bed only at a file's ends would be heard switching on and off,
and one under everything would add hiss the voice never had. Silence meets ACX's noise floor (at most -60 dB RMS)
and every codec keeps it exact.

Why FFmpeg's filters through PyAV (already the encoder's library, ``engine.production.av_library``) and not pyloudnorm:
pyloudnorm measures integrated loudness only (no true peak, which a ceiling needs) and filters the whole signal
as float64 arrays in memory (about 33 MiB for a minute at 24 kHz, growing with the length); ``ebur128`` measures
both in constant memory, agrees with pyloudnorm within 0.1 LU, and reads true peaks oversampled to 192 kHz. pyloudnorm
stays the tests' independent meter. Qt-free.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from engine.errors import UnsupportedError

MAX_LIMITING_DB = 6.0  # the most the limiter may take off the peaks before the gain is lowered instead
_LIMIT_MARGIN_DB = 0.5  # resampling back after the limiter lets peaks rise about this much above its limit
# the result is kept this far under the ceiling: true-peak meters differ by as much on noise-like sound (each
# interpolates between samples with its own filter; ebur128's reads up to 0.5 dB under soxr's at 8x)
_TRUE_PEAK_MARGIN_DB = 0.5
_OVERSAMPLE = 4  # the limiter works at 4x the rate, so it limits the peaks between samples too
_PASSES = 3  # corrections of gain and limit after the first limiting
_SILENT_LUFS = -70.0  # BS.1770's absolute gate: nothing louder means there is nothing to measure
_CHUNK = 8192  # samples pushed into a filter graph at a time
MIN_TARGET_LUFS, MAX_TARGET_LUFS = -40.0, -5.0


@dataclass(frozen=True)
class LoudnessTarget:
    lufs: float | None  # integrated loudness to reach; None: the RMS range is the target
    ceiling_dbtp: float = -1.0  # true peak never above this
    rms_range: tuple[float, float] | None = None  # dB, the whole signal unweighted: reach a level between, the middle
    room_tone_s: tuple[float, float] = (0.0, 0.0)  # silence at the start and at the end of each file

    def __str__(self) -> str:
        if self.lufs is None and self.rms_range is not None:
            low, high = self.rms_range
            return f"RMS {low:g} to {high:g} dB, {self.ceiling_dbtp:g} dBTP"
        return f"{self.lufs:g} LUFS, {self.ceiling_dbtp:g} dBTP"

    def short_of(self, measured: Loudness) -> float:
        """The gain (dB) that takes ``measured`` to the level aimed at (the RMS range's middle, else ``lufs``)."""
        if self.lufs is None and self.rms_range is not None:
            return sum(self.rms_range) / 2 - measured.rms_db
        return self.lufs - measured.integrated_lufs

    def reached(self, measured: Loudness) -> bool:
        """Whether ``measured`` is on target: in the RMS range, or within 0.5 LU of ``lufs``."""
        if self.lufs is None and self.rms_range is not None:
            return self.rms_range[0] <= measured.rms_db <= self.rms_range[1]
        return abs(measured.integrated_lufs - self.lufs) <= 0.5


PRESETS = {"web": LoudnessTarget(-16.0, -1.0), "podcast": LoudnessTarget(-16.0, -1.0),
           "broadcast": LoudnessTarget(-23.0, -1.0),
           "audiobook": LoudnessTarget(None, -3.0, rms_range=(-23.0, -18.0), room_tone_s=(0.6, 1.2))}
VOICEOVER_DEFAULT = LoudnessTarget(-16.0, -1.0)


@dataclass(frozen=True)
class Loudness:
    integrated_lufs: float  # -inf for silence
    true_peak_dbtp: float  # -inf for silence
    rms_db: float = -math.inf  # of every sample, silence included (ACX's measure), re full scale

    def __str__(self) -> str:
        return f"{_db_text(self.integrated_lufs)} LUFS, true peak {_db_text(self.true_peak_dbtp)} dBTP"

    def shifted(self, gain_db: float) -> Loudness:
        """The figures after a gain of ``gain_db``: a linear gain moves each by as many dB."""
        return Loudness(self.integrated_lufs + gain_db, self.true_peak_dbtp + gain_db, self.rms_db + gain_db)


@dataclass(frozen=True)
class Normalized:
    samples: np.ndarray  # float32 [N]
    before: Loudness
    after: Loudness
    gain_db: float  # the gain applied before the limiter
    limited: bool  # whether the limiter ran
    target: LoudnessTarget

    @property
    def reached(self) -> bool:
        """Whether the target loudness was reached (within 0.5 LU, or in its RMS range); False where the ceiling
        won."""
        return self.target.reached(self.after)

    def report(self) -> str:
        return report(self.after, self.target)


def report(reached: Loudness, target: LoudnessTarget | None) -> str:
    """What an export says of its loudness: the figures reached, the target (None: the levels as spoken), and
    whether the ceiling won."""
    if target is None:
        return f"loudness {reached}, RMS {_db_text(reached.rms_db)} dB (as spoken)"
    if target.lufs is None:
        line = f"loudness RMS {_db_text(reached.rms_db)} dB, {reached} (target {target})"
    else:
        line = f"loudness {reached} (target {target})"
    if math.isfinite(reached.integrated_lufs) and not target.reached(reached):
        line += "; the true-peak ceiling kept it from the target"
    return line


def static_gain(measured: Loudness, target: LoudnessTarget) -> float:
    """The one gain (dB) that brings a signal measured as ``measured`` to ``target`` with no limiter, lowered where
    its true peak would pass the ceiling (less the meters' margin): the ceiling wins. 0 for silence."""
    if not math.isfinite(measured.integrated_lufs):
        return 0.0
    return min(target.short_of(measured), target.ceiling_dbtp - _TRUE_PEAK_MARGIN_DB - measured.true_peak_dbtp)


def limited_gain(measured: Loudness, target: LoudnessTarget) -> tuple[float, float | None]:
    """(gain dB, the limit in dBFS of a ``StreamLimiter`` after it, or None for none) that bring a signal measured
    as ``measured`` to ``target`` in one pass: where the gain would take the peaks past the ceiling, the limiter
    takes them down by up to ``MAX_LIMITING_DB``; past that the gain is lowered (the ceiling wins)."""
    if not math.isfinite(measured.integrated_lufs):
        return 0.0, None
    ceiling = target.ceiling_dbtp - _TRUE_PEAK_MARGIN_DB
    limit = ceiling - _LIMIT_MARGIN_DB
    gain = min(target.short_of(measured), limit + MAX_LIMITING_DB - measured.true_peak_dbtp)
    return gain, (limit if measured.true_peak_dbtp + gain > ceiling else None)


def parse_target(text: str) -> LoudnessTarget:
    """A preset's name or a number of LUFS (under the default -1 dBTP ceiling); ``UnsupportedError`` otherwise."""
    key = str(text).strip().lower()
    if key in PRESETS:
        return PRESETS[key]
    try:
        lufs = float(key.removesuffix("lufs").strip())
    except ValueError:
        raise UnsupportedError(f"loudness {text!r}: give a number of LUFS (e.g. -16) or one of "
                               f"{', '.join(PRESETS)}") from None
    if not MIN_TARGET_LUFS <= lufs <= MAX_TARGET_LUFS:
        raise UnsupportedError(f"loudness {text!r}: the target must be between {MIN_TARGET_LUFS:g} and "
                               f"{MAX_TARGET_LUFS:g} LUFS")
    return LoudnessTarget(lufs)


class LoudnessMeter:
    """Integrated loudness and true peak of a signal fed in pieces (mono float32 at ``sample_rate``)."""

    def __init__(self, sample_rate: int):
        self.sample_rate = int(sample_rate)
        self._graph = _Graph(self.sample_rate, [("ebur128", "metadata=1:peak=true")])
        self._last: dict = {}
        self._result: Loudness | None = None
        self._energy, self._count = 0.0, 0  # for the RMS, in float64: an hour's sum keeps its precision

    def feed(self, samples: np.ndarray) -> None:
        data = _mono(samples)
        self._energy += energy(data)
        self._count += data.size
        for frame in self._graph.push(data):
            self._last = dict(frame.metadata) or self._last

    def result(self) -> Loudness:
        if self._result is None:
            for frame in self._graph.close():
                self._last = dict(frame.metadata) or self._last
            integrated = _number(self._last.get("lavfi.r128.I"))
            peak = _number(self._last.get("lavfi.r128.true_peak"))
            integrated = integrated if integrated > _SILENT_LUFS else -math.inf
            rms = 10 * math.log10(self._energy / self._count) if self._energy > 0 else -math.inf
            self._result = Loudness(integrated, 20 * math.log10(peak) if peak > 0 else -math.inf, rms)
        return self._result


def energy(samples: np.ndarray) -> float:
    """The sum of the squares of float32 ``samples``, in float64, a piece at a time (no copy of the whole)."""
    total = 0.0
    for at in range(0, samples.size, _CHUNK):
        piece = samples[at:at + _CHUNK].astype(np.float64)
        total += float(np.dot(piece, piece))
    return total


def measure(samples: np.ndarray, sample_rate: int) -> Loudness:
    meter = LoudnessMeter(sample_rate)
    meter.feed(samples)
    return meter.result()


def normalize(samples: np.ndarray, sample_rate: int, target: LoudnessTarget) -> Normalized:
    """``samples`` at ``target``'s loudness under its ceiling (see the module doc); silence is returned as is."""
    data = _mono(samples)
    before = measure(data, sample_rate)
    if not math.isfinite(before.integrated_lufs):
        return Normalized(data, before, before, 0.0, False, target)
    ceiling = target.ceiling_dbtp - _TRUE_PEAK_MARGIN_DB
    limit = ceiling - _LIMIT_MARGIN_DB  # the limiter's, on samples

    def allowed(gain: float) -> float:  # the limiter may take at most MAX_LIMITING_DB off the peaks
        return min(gain, limit + MAX_LIMITING_DB - before.true_peak_dbtp)

    gain = allowed(target.short_of(before))
    limited = before.true_peak_dbtp + gain > ceiling
    out = _apply(data, sample_rate, gain, limit if limited else None)
    after = measure(out, sample_rate)
    for _ in range(_PASSES if limited else 0):
        # limiting lowers the loudness, and true peaks rise between the limited samples: each pass corrects both
        over, short = after.true_peak_dbtp - ceiling, target.short_of(after)
        if over <= 0 and abs(short) <= 0.1 or not math.isfinite(short):
            break
        limit -= max(over, 0.0)
        gain = allowed(gain + short)
        out = None  # let the last try go before the next is made
        out = _apply(data, sample_rate, gain, limit)
        after = measure(out, sample_rate)
    if after.true_peak_dbtp > ceiling:  # what the limiter let through: the ceiling wins
        trim = ceiling - after.true_peak_dbtp
        out *= np.float32(10 ** (trim / 20))
        gain += trim
        after = measure(out, sample_rate)
    return Normalized(out, before, after, gain, limited, target)


class StreamLimiter:
    """``normalize``'s limiter (at ``limit_db`` dBFS, oversampled) over a signal fed in pieces: ``push`` returns
    what is ready, ``close`` the rest; all it returns, end to end, is as long as all it was fed, and aligned with
    it sample for sample (its lookahead's tail comes out at ``close``)."""

    def __init__(self, sample_rate: int, limit_db: float):
        self._graph = _limiter_graph(sample_rate, limit_db)
        self._fed = self._out = 0

    def push(self, samples: np.ndarray) -> np.ndarray:
        data = _mono(samples)
        self._fed += data.size
        return self._take(self._graph.push(data))

    def close(self) -> np.ndarray:
        tail = self._take(self._graph.close())
        missing = self._fed - self._out
        self._out += missing
        return np.concatenate([tail, np.zeros(missing, dtype=np.float32)])

    def _take(self, frames) -> np.ndarray:
        pieces = [frame.to_ndarray().reshape(-1) for frame in frames]
        out = np.concatenate(pieces) if pieces else np.zeros(0, dtype=np.float32)
        out = out[:max(0, self._fed - self._out)]  # never more than was fed
        self._out += out.size
        return out


# ---- internals ------------------------------------------------------------------------------------------------
def _limiter_graph(sample_rate: int, limit_db: float) -> _Graph:
    # level=0: no make-up gain after limiting; latency=1: the output is aligned with the input, sample for sample
    return _Graph(sample_rate, [("aresample", str(sample_rate * _OVERSAMPLE)),
                                ("alimiter", f"limit={10 ** (limit_db / 20):.6f}:level=0:latency=1:attack=5"
                                             ":release=50"),
                                ("aresample", str(sample_rate))])


def _apply(data: np.ndarray, sample_rate: int, gain_db: float, limit_db: float | None) -> np.ndarray:
    """``data`` times the gain, through the limiter set to ``limit_db`` (dBFS) if one is given: a new array, made
    piece by piece, so only it and ``data`` are held."""
    gain = np.float32(10 ** (gain_db / 20))
    if limit_db is None:
        return data * gain
    graph = _limiter_graph(sample_rate, limit_db)
    out = np.zeros(data.size, dtype=np.float32)  # the limiter's tail, held back by its lookahead, stays silence
    at = 0

    def take(frames) -> None:
        nonlocal at
        for frame in frames:
            piece = frame.to_ndarray().reshape(-1)[:data.size - at]
            out[at:at + piece.size] = piece
            at += piece.size

    step = _CHUNK * 16
    for start in range(0, data.size, step):
        take(graph.push(data[start:start + step] * gain))
    take(graph.close())
    return out


class _Graph:
    """A chain of FFmpeg audio filters on mono float32 samples, through PyAV."""

    def __init__(self, sample_rate: int, filters: list[tuple[str, str]]):
        from engine.production.av_library import load_av

        self._av = av = load_av()
        self.sample_rate = sample_rate
        self.graph = av.filter.Graph()
        node = self.graph.add_abuffer(format="flt", sample_rate=sample_rate, layout="mono")
        for name, options in filters:
            following = self.graph.add(name, options)
            node.link_to(following)
            node = following
        # the sink takes float32 mono back, whatever format the filters work in
        fmt = self.graph.add("aformat", f"sample_fmts=flt:channel_layouts=mono:sample_rates={sample_rate}")
        sink = self.graph.add("abuffersink")
        node.link_to(fmt)
        fmt.link_to(sink)
        self.graph.configure()
        self._pts = 0

    def push(self, samples: np.ndarray) -> list:
        data = _mono(samples)
        out = []
        for at in range(0, data.size, _CHUNK):
            piece = np.ascontiguousarray(data[at:at + _CHUNK])
            frame = self._av.AudioFrame.from_ndarray(piece[None, :], format="flt", layout="mono")
            frame.sample_rate, frame.pts = self.sample_rate, self._pts
            self._pts += piece.size
            self.graph.push(frame)
            out += self._pull()
        return out

    def close(self) -> list:
        self.graph.push(None)
        return self._pull()

    def _pull(self) -> list:
        out = []
        while True:
            try:
                out.append(self.graph.pull())
            except (self._av.BlockingIOError, self._av.EOFError):
                return out


def _mono(samples) -> np.ndarray:
    data = np.asarray(samples, dtype=np.float32).reshape(-1)
    if not np.all(np.isfinite(data)):
        data = np.nan_to_num(data, nan=0.0, posinf=1.0, neginf=-1.0)
    return data


def _number(text) -> float:
    try:
        value = float(text)
    except (TypeError, ValueError):
        return -math.inf
    return value if math.isfinite(value) else -math.inf


def _db_text(value: float) -> str:
    return f"{value:.1f}" if math.isfinite(value) else "-inf"
