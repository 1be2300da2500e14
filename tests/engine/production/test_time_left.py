"""The time left of an export: no figure from too little work (a slow first sentence made a two-minute job say
4 h 46 min), then one that never moves by more than a quarter from one update to the next after the first 5 % of
the job, through bursts of cache hits, a slow stretch and uneven sentences. Clocks are scripted: nothing here
depends on how fast the machine is."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from engine import Voice
from engine.production.book_export import BookExporter
from engine.production.book_structure import Pauses, book_from_text
from engine.production.export_plan import ExportOptions
from engine.production.segment_cache import SegmentCache
from engine.production.time_left import TimeLeft
from tests.qtapp.fake_engine import FakeEngine

BOUND = 0.25  # the target: at most a quarter from one estimate to the next
SILENT = 2  # updates with no estimate: one or two sentences, the first with its warm-up, tell nothing of the speed
OPTIONS = ExportOptions(format="wav", pauses=Pauses(0, 0, 0, 0), segment_chars=0)


class Clock:
    def __init__(self):
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def jitter(text: str) -> float:
    """A fixed factor between 0.6 and 1.6 for each text: uneven sentences, the same on every run."""
    return 0.6 + hashlib.sha256(text.encode()).digest()[0] / 255


def swings(estimates: list[tuple[float, float | None]]) -> list[tuple[float, float, float]]:
    """(fraction done, before, after) for successive estimates that moved by more than ``BOUND`` after the first 5 %
    of the job; the last figure (0 once all is done) is not an estimate."""
    shown = [(f, e) for f, e in estimates if e is not None and f < 1.0]
    return [(f2, e1, e2) for (f1, e1), (f2, e2) in zip(shown, shown[1:], strict=False)
            if f1 >= 0.05 and abs(e2 - e1) > BOUND * e1]


def naive(total: float, done: float, spent: float) -> float:
    """The estimate before smoothing: the work left at the average speed so far."""
    return (total - done) * spent / done


def synthetic_job():
    """(chars of each sentence, seconds it took) for a 400-sentence job: a first sentence slowed by a warm-up,
    bursts of sentences from the cache (no work, no time), a stretch at a quarter of the speed while reading
    aloud shares the engine, and uneven sentences throughout."""
    pieces = []
    for i in range(400):
        chars = 40 + (i * 37) % 210
        if 150 <= i < 190 or 300 <= i < 320:  # from the cache: nothing to make
            pieces.append((0, 0.0))
            continue
        seconds = chars / 12 * jitter(f"sentence {i}")
        if i == 0:
            seconds += 180  # the model's first compile
        if 80 <= i < 120:
            seconds *= 4
        pieces.append((chars, seconds))
    return pieces


def test_synthetic_job_estimates_never_swing():
    pieces = synthetic_job()
    total = sum(chars for chars, _ in pieces)
    clock = Clock()
    left = TimeLeft(total, clock=clock)
    done, estimates, raw = 0, [], []
    for i, (chars, seconds) in enumerate(pieces):
        clock.now += seconds
        done += chars
        estimate = left.update(done)
        estimates.append((done / total, estimate))
        if i >= 1 and done < total:
            raw.append((done / total, naive(total, done, clock.now)))
        if i < SILENT:
            assert estimate is None, i
    assert estimates[-1] == (1.0, 0.0)
    assert swings(estimates) == []
    assert swings(raw), "the job has bursts an unsmoothed estimate swings with"
    # the first figure is of the right order: from the sentences after the warm-up, not from the warm-up
    first = next(i for i, (_, e) in enumerate(estimates) if e is not None)
    truth = sum(seconds for _, seconds in pieces[first + 1:])
    assert truth / 2 < estimates[first][1] < truth * 2


def test_a_job_whose_work_is_all_done_says_zero_and_a_job_of_none_too():
    assert TimeLeft(0).update(0) == 0.0
    clock = Clock()
    left = TimeLeft(100, clock=clock)
    assert left.update(0) is None  # nothing done yet
    clock.now = 5
    assert left.update(100) == 0.0


def test_time_with_nothing_done_slows_the_speed_without_a_jump():
    clock = Clock()
    left = TimeLeft(10_000, clock=clock)
    estimates = []
    for i in range(60):
        clock.now += 10.0 if i != 30 else 600.0  # one sentence waited ten minutes for the engine
        estimates.append((i / 60, left.update(100 * (i + 1))))
    assert swings(estimates) == []
    assert estimates[31][1] > estimates[29][1] * 0.99  # the wait is seen: the estimate does not fall past it


class ScriptedEngine(FakeEngine):
    """The fake engine, taking scripted time on ``clock``: ``seconds(text)`` per sentence it makes."""

    def __init__(self, clock: Clock, seconds):
        super().__init__()
        self.clock, self.seconds = clock, seconds
        self.made: list[str] = []

    def stream(self, text, *args, **kwargs):
        written = text if isinstance(text, str) else "".join(segment.text for segment in text)  # a planned segment
        self.made.append(written)
        self.clock.now += self.seconds(written, len(self.made))
        return super().stream(text, *args, **kwargs)


def sentence(n: int) -> str:
    return f"Sentence number {n} says{' more' * (n % 9)} about the thing."


def run_export(engine, text: str, output: Path, cache: SegmentCache, clock: Clock) -> list:
    seen = []
    book = book_from_text(text, "The Book")
    voices = {None: Voice.preset("vivian")}
    exporter = BookExporter(lambda voice: engine, cache=cache, progress=seen.append, clock=clock)
    exporter.run(exporter.plan(book, output, OPTIONS, voices), book, OPTIONS)
    return seen


def test_an_export_with_a_slow_first_sentence_and_cache_hits_shows_a_steady_time_left(tmp_path):
    """The real exporter on a scripted clock: its first sentence takes two minutes (a compile), a chapter in the
    middle is in the cache from an earlier export, and a stretch runs at a quarter of the speed."""
    clock = Clock()
    cache = SegmentCache(tmp_path / "cache")

    def seconds(text: str, nth: int) -> float:
        slow = 4 if "number 9" in text else 1  # sentences 90-99: reading aloud shares the engine
        return (120 if nth == 1 else 0) + slow * len(text) / 15 * jitter(text)

    cached = "\n\n".join(sentence(n) for n in range(40, 70))
    run_export(ScriptedEngine(clock, lambda text, nth: 1.0), cached, tmp_path / "earlier.wav", cache, clock)
    engine = ScriptedEngine(clock, seconds)
    clock.now = 0.0
    seen = run_export(engine, "\n\n".join(sentence(n) for n in range(150)), tmp_path / "book.wav", cache, clock)
    assert len(engine.made) == 150 - 30 and len(seen) == 150
    assert all(p.eta_s is None for p in seen[:SILENT])  # nothing said from the compile alone
    first = next(p for p in seen if p.eta_s is not None)
    truth = clock.now - first.elapsed_s
    assert truth / 2 < first.eta_s < truth * 2  # not hours for minutes
    assert swings([(p.fraction, p.eta_s) for p in seen]) == []
    assert seen[-1].eta_s == 0.0


@pytest.mark.parametrize("cached_first", [True, False])
def test_a_resumed_export_starts_its_estimate_with_the_first_sentence_it_makes(tmp_path, cached_first):
    """Sentences from the cache at the start do not make the baseline: the first one made (with its warm-up) does."""
    clock = Clock()
    cache = SegmentCache(tmp_path / "cache")
    if cached_first:
        run_export(ScriptedEngine(clock, lambda text, nth: 1.0), "\n\n".join(sentence(n) for n in range(20)),
                   tmp_path / "earlier.wav", cache, clock)
    clock.now = 0.0
    engine = ScriptedEngine(clock, lambda text, nth: (300 if nth == 1 else 0) + len(text) / 15)
    seen = run_export(engine, "\n\n".join(sentence(n) for n in range(60)), tmp_path / "book.wav", cache, clock)
    made = [p for p in seen if p.done_segments > (20 if cached_first else 0)]
    assert all(p.eta_s is None for p in made[:SILENT])
    first = next(p for p in made if p.eta_s is not None)
    assert first.eta_s < clock.now - first.elapsed_s + 60  # the 300 s warm-up is not taken for the speed
