"""Rendering a ``Book`` into audio files: one file with a chapter mark per chapter, or one file per chapter, with
optional subtitles, resumable. Qt-free: the command line (``orator export``) uses it, and the studio can.

``BookExporter.plan`` decides everything before a sound is made (``engine.production.export_plan``): which
chapters, which file each goes to (named ``NN - Title.ext`` when per chapter), the tags, and per file the sequence
of segments (each passage cut by ``engine.core.text.segments`` and said as the reading policy says,
``engine.core.text.reading_policy``, with their voices) and pauses (``Pauses``: between sentences, paragraphs,
around headings, between chapters). ``BookExporter.run`` then speaks
the segments one engine call each and streams them, with the pauses, into a ``FileEncoder`` (and the cues into a
subtitle writer, timed by the samples actually written); chapter marks go in when the file is finished, at the
positions where their first samples were written.

Each segment is its own call with its own seed (derived from the export's seed and the segment's text, or drawn
at random when none is given), so its audio depends on nothing but its key (``segment_cache.segment_key``). With
a ``SegmentCache`` a finished segment is stored as soon as it is made: an export interrupted by Ctrl-C, a crash
or a kill, run again, speaks only the segments it had not finished, and an edited book only its changed
sentences; a resumed export writes the same samples, and so the same file, as an uninterrupted one.

With ``ExportOptions.loudness`` the book gets one gain (``engine.production.loudness.static_gain``), the same for every
chapter and chapter file: a first pass speaks every segment into the cache (a temporary one under ``--no-cache``)
while a meter hears them with their pauses, in the order and with the silences they will have; the second writes
them scaled (and, for a target with an RMS range, the audiobook's, limited: ``loudness.limited_gain``).
Every export, with a target or without, measures what it writes (``engine.production.levels``):
``BookExporter.loudness`` then holds the figures reached, ``BookExporter.levels`` each file's.

No partial file is ever visible: audio and subtitles are written to temporary files beside their targets and
renamed at the end, and removed on any error or cancel. A kill cannot run that clean-up, so the temporary files
an export is writing are recorded in the cache's ``pending`` folder and removed by the next export to the same
target (``engine.production.export_leftovers``).
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
import random
import tempfile
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from engine.atomic_files import sync_folder
from engine.core.chunks import SAMPLE_RATE
from engine.core.sampling import MAX_SEED
from engine.core.text.reading_policy import ReadingPolicy
from engine.core.text.segments import Segment
from engine.production.audio_formats import audio_format
from engine.production.audio_metadata import ChapterMark, Cover, Tags
from engine.production.book_structure import Book, Pauses
from engine.production.encode import FileEncoder, create_temp_beside
from engine.production.export_leftovers import clear_pending, record_pending, remove_leftovers
from engine.production.export_plan import (
    ChapterStart,
    ExportOptions,
    OutputPlan,
    Pause,
    Speech,
    chapter_file_name,
    passage_speech,
)
from engine.production.levels import WrittenLevels, add_room_tone
from engine.production.loudness import Loudness, LoudnessMeter, StreamLimiter, limited_gain, static_gain
from engine.production.segment_cache import SegmentCache, model_key, segment_key, voice_key
from engine.production.subtitles import Cue, chapters_vtt, subtitle_writer
from engine.production.time_left import TimeLeft

EXPORT_CHUNK_FRAMES = 25  # 2 s of audio per engine chunk: fewer, larger writes


class ExportCancelled(Exception):
    """``cancel`` was set: the export stopped and removed its partial files."""


@dataclass(frozen=True)
class Progress:
    done_segments: int
    total_segments: int
    done_chars: int
    total_chars: int
    elapsed_s: float
    eta_s: float | None  # seconds left (engine.production.time_left.TimeLeft); None while too little is known
    output: Path  # the file being written
    audio_s: float = 0.0  # seconds of audio written so far, pauses included, over every file

    @property
    def fraction(self) -> float:
        return self.done_chars / self.total_chars if self.total_chars else 1.0


def segment_seed(seed: int, text: str) -> int:
    """A segment's seed from the export's: its text decides it, not its position, so editing one paragraph does
    not change how every later one sounds."""
    digest = hashlib.sha256(f"{seed}\0{text}".encode("utf-8", "surrogatepass")).digest()
    return int.from_bytes(digest[:8], "big") % MAX_SEED


class BookExporter:
    """``engine_for(voice)`` gives the engine that speaks a voice; ``progress(Progress)`` hears of each segment;
    ``cancel`` stops within one engine chunk (``ExportCancelled``); ``pronunciation`` (an
    ``engine.pronunciation.Lexicon``) and ``reading_policy`` (``engine.core.text.reading_policy.ReadingPolicy``; None:
    the default one) change what is said, not the subtitles, and a sentence's cache key is made from what is said, so
    editing a rule or the policy regenerates only the sentences it changes."""

    def __init__(self, engine_for: Callable, sampling=None, cache: SegmentCache | None = None,
                 progress: Callable[[Progress], None] | None = None, cancel: threading.Event | None = None,
                 pronunciation=None, reading_policy: ReadingPolicy | None = None,
                 clock: Callable[[], float] = time.perf_counter):
        self.engine_for = engine_for
        self.clock = clock  # seconds; what the time spent speaking, and so the time left, is measured with
        self.pronunciation = pronunciation
        self.reading_policy = reading_policy
        self.sampling = sampling
        self.cache = cache
        self.progress = progress
        self.cancel = cancel or threading.Event()
        self._model_keys: dict[int, dict] = {}
        self._voice_keys: dict[int, dict] = {}
        self.generated_segments = 0  # segments spoken by the engine (not read from the cache) over every run
        self.cuts: list[str] = []  # the runaway guard's warning for each of them it cut (engine.core.frames.guard)
        self.loudness: Loudness | None = None  # what the files reached, after a run
        self.levels: WrittenLevels | None = None  # each file's levels, after a run
        self._gain: float | None = None  # linear, applied to every segment; None: none
        self._limit: float | None = None  # dBFS of the limiter after the gain; None: none

    # ---- planning -----------------------------------------------------------------------------------------
    def plan(self, book: Book, output: str | os.PathLike, options: ExportOptions,
             voices: Mapping[str | None, object]) -> list[OutputPlan]:
        """The files to write. ``output``: the file, or with ``per_chapter`` the folder. ``voices``: the ``Voice``
        of each voice-mark name the book uses, and of None (the default voice)."""
        fmt = audio_format(options.format)
        output = Path(output)
        indices = list(range(len(book.chapters))) if options.chapters is None else list(options.chapters)
        if not indices:
            raise ValueError("no chapter is selected")
        if any(not 0 <= i < len(book.chapters) for i in indices):
            raise ValueError(f"the book has {len(book.chapters)} chapters")
        # a part whose first chapter starts where it does has nothing of its own to speak: no file, no mark
        chosen = [book.chapters[i] for i in sorted(set(indices)) if book.chapters[i].passages]
        if not chosen:
            raise ValueError("the chapters chosen have nothing to speak")
        missing = sorted((name for name in book.voices | {None} if name not in voices), key=str)
        if missing:
            raise ValueError(f"no voice is given for {', '.join(map(repr, missing))}")
        narrators = [_voice_name(voices[None])] + sorted({_voice_name(voices[name]) for name in book.voices})
        narrator = ", ".join(dict.fromkeys(n for n in narrators if n))
        pauses = options.pauses
        if options.per_chapter:
            plans = []
            for number, chapter in enumerate(chosen, 1):
                path = output / chapter_file_name(number, len(chosen), chapter.title, fmt.suffix)
                tags = Tags(title=chapter.title, author=book.author, narrator=narrator, album=book.title,
                            track=(number, len(chosen)), genre="Audiobook")
                items = add_room_tone(self._items([chapter], voices, pauses, options), options.loudness)
                plans.append(OutputPlan(path, tags, items))
            return plans
        if output.suffix.lower() != fmt.suffix:
            output = output.with_name(output.name + fmt.suffix)
        tags = Tags(title=book.title, author=book.author, narrator=narrator, genre="Audiobook")
        return [OutputPlan(output, tags, add_room_tone(self._items(chosen, voices, pauses, options), options.loudness))]

    def _items(self, chapters, voices, pauses: Pauses, options: ExportOptions) -> list:
        items: list = []
        for chapter in chapters:
            if items and pauses.chapter:
                items.append(Pause(pauses.chapter))
            items.append(ChapterStart(chapter.title))
            previous = None
            for passage in chapter.passages:
                segments = passage_speech(passage, self.reading_policy, options.segment_chars)
                if not segments:
                    continue
                if previous is not None:
                    items.append(Pause(pauses.between(previous, passage)))
                voice = voices[passage.voice]
                for i, (text, said) in enumerate(segments):
                    if i and pauses.sentence:
                        items.append(Pause(pauses.sentence))
                    spoken = (said if self.pronunciation is None
                              else self.pronunciation.apply(said, getattr(voice, "name", None)))
                    items.append(Speech(text, voice, self._key(spoken, voice, options), spoken, said))
                previous = passage
        return items

    def _key(self, text: str, voice, options: ExportOptions) -> str:
        engine = self.engine_for(voice)
        model = self._model_keys.get(id(engine))
        if model is None:
            model = self._model_keys[id(engine)] = model_key(engine)
        vkey = self._voice_keys.get(id(voice))
        if vkey is None:
            vkey = self._voice_keys[id(voice)] = voice_key(voice)
        sampling = dataclasses.asdict(self.sampling or engine.defaults)
        seed = sampling.pop("seed")
        sampling["seed"] = "random" if seed is None else seed
        return segment_key(" ".join(text.split()), vkey, model, sampling, options.max_frames)

    # ---- running ------------------------------------------------------------------------------------------
    def run(self, plans: list[OutputPlan], book: Book, options: ExportOptions) -> list[Path]:
        """Write every planned file; returns their paths. Raises ``ExportCancelled`` when cancelled, and whatever
        the engine or the disk raised; in every case no partial file is left."""
        if options.loudness is not None and self.cache is None:
            # the first pass keeps what it speaks for the second: in a cache that lasts as long as this run
            with tempfile.TemporaryDirectory(prefix=".orator-loudness-") as folder:
                self.cache = SegmentCache(folder)
                try:
                    return self.run(plans, book, options)
                finally:
                    self.cache = None
        cover = options.cover if options.cover is not None else book.cover
        cover = Cover.from_bytes(cover) if cover else None
        speeches = [s for plan in plans for s in plan.speeches]
        self._total_segments = len(speeches)
        self._total_chars = sum(len(s.text) for s in speeches)
        if self.cache is None:
            self._uncached_chars = self._total_chars
        else:  # a sentence said twice is made once: the second time it comes from the cache
            self._uncached_chars = sum(len(s.text) for s in {s.key: s for s in speeches}.values()
                                       if s.key not in self.cache)
        self._done_segments = self._done_chars = self._generated_chars = 0
        self._written_samples = 0  # of the files finished before the one being written
        self._generating_s = 0.0
        # the time left runs on the time spent speaking: cache hits, encoding and waiting for a model to load add none
        self._time_left = TimeLeft(self._uncached_chars, clock=lambda: self._generating_s)
        self._start = self.clock()
        self._limit = None
        self._gain = self._measure(plans, options) if options.loudness is not None else None
        self.levels = WrittenLevels(SAMPLE_RATE)
        written = []
        for plan in plans:
            written.append(self._write(plan, cover, options))
        self.loudness = self.levels.result()
        if self.cache is not None:
            self.cache.prune(keep={s.key for s in speeches})
        return written

    def _write(self, plan: OutputPlan, cover: Cover | None, options: ExportOptions) -> Path:
        if self.cache is not None:
            remove_leftovers(self.cache, plan.path)
        encoder = FileEncoder(plan.path, options.format, tags=plan.tags, cover=cover, bitrate=options.bitrate)
        temps = list(encoder.temp_paths)
        subtitles = subtitle_file = None
        try:
            if options.subtitles:
                temps.append(create_temp_beside(plan.path))
                subtitle_file = open(temps[-1], "w", encoding="utf-8", newline="\n")  # noqa: SIM115
                subtitles = subtitle_writer(options.subtitles, subtitle_file)
            record_pending(self.cache, plan.path, temps)
            position, marks = 0, []
            self.levels.start(plan.path)
            limiter = StreamLimiter(SAMPLE_RATE, self._limit) if self._limit is not None else None

            def emit(samples: np.ndarray) -> None:  # the gain and limiter applied, written and measured
                if self._gain is not None:
                    samples = samples * np.float32(self._gain)
                if limiter is not None:
                    samples = limiter.push(samples)
                encoder.write(samples)
                self.levels.feed(samples)

            for item in plan.items:
                if isinstance(item, Pause):
                    silence = np.zeros(round(item.seconds * SAMPLE_RATE), dtype=np.float32)
                    emit(silence)
                    position += silence.size
                elif isinstance(item, ChapterStart):
                    marks.append(ChapterMark(item.title, position / SAMPLE_RATE))
                    if subtitles is not None:
                        subtitles.chapter(item.title, position / SAMPLE_RATE)
                else:
                    audio = self._audio(item, options)
                    emit(audio)
                    if subtitles is not None and audio.size:
                        subtitles.write(Cue(position / SAMPLE_RATE, (position + audio.size) / SAMPLE_RATE, item.text))
                    position += audio.size
                    if self._gain is None:  # with a gain, the measuring pass reported the progress
                        self._report(plan.path, len(item.text), self._written_samples + position)
            if limiter is not None:  # its lookahead's tail: the file is as long as what was fed
                tail = limiter.close()
                encoder.write(tail)
                self.levels.feed(tail)
            encoder.finish(marks)
            if subtitle_file is not None:
                subtitle_file.flush()
                os.fsync(subtitle_file.fileno())
                subtitle_file.close()
                os.replace(temps[-1], plan.path.with_suffix(subtitles.suffix))
                if options.subtitles == "vtt" and len(marks) > 1:
                    _write_chapters_track(plan.path.with_suffix(".chapters.vtt"), marks, position)
                sync_folder(plan.path.parent)
        except BaseException:
            encoder.abort()
            raise
        finally:
            if subtitle_file is not None and not subtitle_file.closed:
                subtitle_file.close()
            for temp in temps:
                temp.unlink(missing_ok=True)
            clear_pending(self.cache, plan.path)
        self._written_samples += position
        return plan.path

    def _measure(self, plans: list[OutputPlan], options: ExportOptions) -> float:
        """The first pass of a loudness target: every segment spoken (into the cache) and metered with its pauses;
        returns the linear gain for the second and sets ``loudness`` to what it will reach."""
        meter, position = LoudnessMeter(SAMPLE_RATE), 0
        for plan in plans:
            for item in plan.items:
                if isinstance(item, Pause):
                    meter.feed(np.zeros(round(item.seconds * SAMPLE_RATE), dtype=np.float32))
                elif isinstance(item, Speech):
                    audio = self._audio(item, options)
                    meter.feed(audio)
                    position += audio.size
                    self._report(plan.path, len(item.text), position)
        measured = meter.result()
        if options.loudness.rms_range is not None:
            # an audiobook's RMS with its peaks 15 dB under full scale is more than most speech allows unlimited
            gain_db, self._limit = limited_gain(measured, options.loudness)
        else:  # a LUFS target keeps one plain gain: chapter files alike sample for sample
            gain_db, self._limit = static_gain(measured, options.loudness), None
        self.loudness = measured.shifted(gain_db)
        return 10 ** (gain_db / 20)

    def _audio(self, speech: Speech, options: ExportOptions) -> np.ndarray:
        if self.cancel.is_set():
            raise ExportCancelled
        if self.cache is not None:
            cached = self.cache.get(speech.key)
            if cached is not None:
                return cached
        engine = self.engine_for(speech.voice)
        sampling = self.sampling or engine.defaults
        seed = random.getrandbits(62) if sampling.seed is None else segment_seed(sampling.seed, speech.spoken)
        started = self.clock()
        # the segment as planned: the engine applies the pronunciation rules to what the policy says
        segment = Segment(0, len(speech.text), speech.text, None if speech.said == speech.text else speech.said)
        stream = engine.stream([segment], speech.voice, chunk_frames=EXPORT_CHUNK_FRAMES,
                               first_chunk_frames=EXPORT_CHUNK_FRAMES, cancel=self.cancel,
                               sampling=dataclasses.replace(sampling, seed=seed), max_frames=options.max_frames,
                               pronunciation=self.pronunciation)
        parts = []
        try:
            for chunk in stream:
                parts.append(chunk.samples)
                if chunk.warning is not None:
                    self.cuts.append(chunk.warning)
        finally:
            stream.close()
        if self.cancel.is_set():
            raise ExportCancelled
        audio = np.concatenate(parts) if parts else np.zeros(0, dtype=np.float32)
        if self.cache is not None:
            audio = self.cache.put(speech.key, audio)
        self._generating_s += self.clock() - started
        self._generated_chars += len(speech.text)
        self.generated_segments += 1
        return audio

    def _report(self, output: Path, chars: int, samples: int) -> None:
        self._done_segments += 1
        self._done_chars += chars
        if self.progress is None:
            return
        finished = self._done_segments == self._total_segments
        # segments read from the cache are no work left
        eta = self._time_left.update(self._uncached_chars if finished else self._generated_chars)
        self.progress(Progress(self._done_segments, self._total_segments, self._done_chars, self._total_chars,
                               self.clock() - self._start, eta, output, samples / SAMPLE_RATE))


def _voice_name(voice) -> str:
    return getattr(voice, "name", None) or getattr(voice, "speaker", None) or ""


def _write_chapters_track(path: Path, marks: list[ChapterMark], total_samples: int) -> None:
    starts = [m.start_s for m in marks] + [total_samples / SAMPLE_RATE]
    text = chapters_vtt((m.title, starts[i], starts[i + 1]) for i, m in enumerate(marks))
    temp = create_temp_beside(path)
    try:
        with open(temp, "w", encoding="utf-8", newline="\n") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(temp, path)
    finally:
        temp.unlink(missing_ok=True)
