"""``orator say``: speak text into a wav or flac file; ``orator export``: documents into audiobooks.

    python main.py say "Hello there." --model DIR_OR_HUB_ID --voice vivian --out hello.wav
    python main.py say "Hello." --model DIR --design "a calm, low male voice"
    python main.py say "Hello." --model DIR --clone ref.wav --ref-text "what the reference says"
    python main.py say --model DIR --list-voices
    python main.py export book.epub --model DIR --voice vivian --format m4b --subtitles srt
    python main.py export a.txt b.md --model DIR --voice-file narrator.voice --format mp3 --per-chapter -o out/
    python main.py export manual.html --list-segments --read-urls

A ``say`` voice is one of ``--voice`` (preset speaker), ``--design``, ``--clone`` or ``--voice-file``; the
model type decides which apply. Both commands speak with the studio's pronunciation rules (its
``pronunciation.json`` in the data folder, else the shipped rules), another file's (``--pronunciation FILE``) or
none (``--no-pronunciation``). Errors the engine raises on purpose (``OratorError``) are printed as
one line and exit with status 2.

``export`` reads every input first (a bad one stops it before any speech), then speaks them with
``engine.production.book_export`` (chapters, pauses, resume: see there), showing progress on stderr. Exit status: 0
done,
2 a bad input, voice or option, 3 an output that cannot be written, 130 interrupted (Ctrl-C: nothing partial is
left, and the sentences already spoken are kept for the next run of the same command).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import signal
import sys
import threading
import time
from dataclasses import replace
from pathlib import Path

from engine.cli.casting_args import add_cast_arguments, cast_of
from engine.core.text.reading_policy import FOOTNOTE_CHOICES, FOOTNOTES_AT_PARAGRAPH_END, ReadingPolicy
from engine.core.text.segments import DEFAULT_TARGET_CHARS, check_target_chars
from engine.errors import OratorError, TextError, UnsupportedError, VoiceError

EXIT_ERROR = 2
EXIT_INTERRUPTED = 130
VOICE_OPTIONS = {
    "custom_voice": "--voice NAME",
    "voice_design": '--design "a description of the voice"',
    "base": "--clone REF_AUDIO [--ref-text TRANSCRIPT] or --voice-file FILE",
}


def add_say_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("text", nargs="?", help="the text to speak ('-' reads it from standard input)")
    parser.add_argument("--model", required=True, help="a model directory or a Hugging Face id, e.g. "
                                                        "Qwen/Qwen3-TTS-12Hz-0.6B-CustomVoice")
    voices = parser.add_mutually_exclusive_group()
    voices.add_argument("--voice", metavar="NAME", help="a preset speaker (CustomVoice models)")
    voices.add_argument("--design", metavar="DESCRIPTION", help="describe the voice (VoiceDesign models)")
    voices.add_argument("--clone", metavar="REF_AUDIO", help="clone the voice of a recording (Base models)")
    voices.add_argument("--voice-file", metavar="FILE", help="a saved .voice file")
    parser.add_argument("--ref-text", help="transcript of the --clone recording (better likeness)")
    parser.add_argument("--language", help="language of the text (default: auto)")
    parser.add_argument("--instruct", help="speaking style for a preset speaker (1.7B CustomVoice)")
    parser.add_argument("--out", default="out.wav", help="where to write the audio: .wav or .flac "
                                                         "(default: out.wav)")
    add_generation_arguments(parser)
    parser.add_argument("--list-voices", action="store_true", help="print the model's speakers and languages")


def add_generation_arguments(parser: argparse.ArgumentParser) -> None:
    """What ``say`` and ``export`` both take: sampling, device, frame budget, segment target, pronunciation."""
    parser.add_argument("--seed", type=int, help="seed for reproducible sampling")
    parser.add_argument("--greedy", action="store_true", help="always take the most likely code (no sampling)")
    parser.add_argument("--device", choices=("cpu", "cuda"), help="default: cuda when available")
    add_precision_argument(parser)
    parser.add_argument("--max-frames", type=_positive_int, metavar="N",
                        help="at most N frames (12.5 per second) per segment (default: more, the longer its text)")
    add_segment_chars_argument(parser)
    add_pronunciation_arguments(parser)


def add_precision_argument(parser: argparse.ArgumentParser) -> None:
    """``--precision fast|exact``, which every command that loads a model takes (``engine.core.execution_plan``)."""
    from engine.core.options import PRECISIONS

    parser.add_argument("--precision", choices=PRECISIONS, default=None,
                        help="fast: int8 weights on a processor, bfloat16 on a GPU; exact: float32 (default: fast, "
                             "or $ORATOR_PRECISION; docs/cpu.md)")


def add_pronunciation_arguments(parser: argparse.ArgumentParser) -> None:
    rules = parser.add_mutually_exclusive_group()
    rules.add_argument("--pronunciation", metavar="FILE",
                       help="the pronunciation rules to speak with (default: the studio's, else the shipped ones)")
    rules.add_argument("--no-pronunciation", action="store_true", help="speak the text as written, without rules")


def pronunciation_of(args: argparse.Namespace):
    """The lexicon a command speaks with (``engine.pronunciation.lexicon_or_default``), or None for
    ``--no-pronunciation``; a file that cannot be read raises its ``LexiconFileError``."""
    if args.no_pronunciation:
        return None
    from engine.pronunciation import lexicon_or_default

    return lexicon_or_default(args.pronunciation)


def run_say_command(args: argparse.Namespace) -> int:
    try:
        return _say(args)
    except OratorError as e:
        print(f"orator say: error: {e}", file=sys.stderr)
        return EXIT_ERROR
    except KeyboardInterrupt:
        print("orator say: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED


def _say(args: argparse.Namespace) -> int:
    from engine.core.audio_files import WRITE_FORMATS

    out = Path(args.out)
    if not args.list_voices:
        text = _read_text(args.text)
        if out.suffix.lower() not in WRITE_FORMATS:
            raise UnsupportedError(f"cannot write {out.name!r}: use a .wav or .flac file name")
        if not out.parent.is_dir():
            raise UnsupportedError(f"cannot write {out}: the folder {out.parent} does not exist")
    if args.ref_text and not args.clone:
        raise VoiceError("--ref-text is the transcript of a --clone recording: give --clone too")
    if args.instruct and not args.voice:
        raise VoiceError("--instruct styles a preset speaker: give --voice too (for VoiceDesign use --design)")

    pronunciation = None if args.list_voices else pronunciation_of(args)  # a bad file stops it before the model
    engine = _load(args.model, args.device, precision=args.precision)
    if args.list_voices:
        _print_voices(engine)
        return 0
    voice = _voice(args, engine)
    sampling = replace(engine.defaults, greedy=args.greedy or engine.defaults.greedy,
                       seed=args.seed if args.seed is not None else engine.defaults.seed)
    return _speak(engine, text, voice, sampling, args.max_frames, out, pronunciation, args.segment_chars)


def _read_text(text: str | None) -> str:
    if text == "-":
        text = sys.stdin.read()
    if not text or not text.strip():
        raise TextError('there is no text to speak: give it in quotes, e.g. say "Hello there." --model ...')
    return text


def _load(model: str, device: str | None, out=None, precision: str | None = None):
    import torch
    import transformers

    from engine import Engine
    from engine.core.config import model_title

    transformers.logging.set_verbosity_error()  # its tokenizer-loading notices mean nothing to a CLI user
    if device is None:
        device = "cuda" if torch.cuda.is_available() else "cpu"
    elif device == "cuda" and not torch.cuda.is_available():
        raise UnsupportedError("--device cuda: this PyTorch installation sees no CUDA GPU; use --device cpu")
    start = time.perf_counter()
    engine = Engine.from_pretrained(model, device=device, precision=precision)
    print(f"loaded {model} ({model_title(engine.model_type, engine.model_size)}) on {device} "
          f"in {time.perf_counter() - start:.1f} s; plan: {engine.execution_plan.summary()}", file=out)
    return engine


def _print_voices(engine) -> None:
    if engine.speakers:
        print("speakers: " + ", ".join(engine.speakers))
    else:
        print(f"speakers: none (this {engine.model_type} model takes {VOICE_OPTIONS[engine.model_type]})")
    print("languages: " + ", ".join(engine.languages))


def _voice(args: argparse.Namespace, engine):
    from engine.voices import Voice, load_voice

    language = args.language or "auto"
    if args.voice:
        return Voice.preset(args.voice, language=language, instruct=args.instruct)
    if args.design:
        return Voice.design(args.design, language=language)
    if args.clone:
        return Voice.clone(args.clone, ref_text=args.ref_text, language=language)
    if args.voice_file:
        voice = load_voice(args.voice_file)
        return voice.with_(language=args.language.lower()) if args.language else voice
    hint = f": this model has {', '.join(engine.speakers)}" if engine.speakers else ""
    raise VoiceError(f"choose a voice with {VOICE_OPTIONS[engine.model_type]}{hint}")


def _speak(engine, text, voice, sampling, max_frames, out: Path, pronunciation=None,
           segment_chars: int | None = None) -> int:
    import numpy as np

    from engine.core.audio_files import write_audio
    from engine.core.frames.guard import describe_cuts

    start = time.perf_counter()
    chunks = list(engine.stream(text, voice, sampling=sampling, max_frames=max_frames, pronunciation=pronunciation,
                                segment_chars=segment_chars))
    seconds = time.perf_counter() - start
    samples = np.concatenate([c.samples for c in chunks]) if chunks else np.zeros(0, dtype=np.float32)
    write_audio(out, samples, engine.sample_rate)
    duration = len(samples) / engine.sample_rate
    first_audio = f", first audio after {chunks[0].elapsed:.2f} s" if chunks else ""
    # seconds of audio a second, as the studio's gauge and docs/benchmarks.md count speed (higher is faster); ASCII,
    # since a console's code page may lack the studio's "×"
    speed = f"{duration / seconds:.2f}x real time" if seconds > 0 else "speed n/a"
    print(f"wrote {out}: {duration:.2f} s of audio in {seconds:.2f} s ({speed}{first_audio})")
    cuts = describe_cuts([c.warning for c in chunks if c.warning is not None], len({c.segment for c in chunks}))
    if cuts:
        print(f"orator say: {cuts}", file=sys.stderr)
    return 0


def add_segment_chars_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--segment-chars", type=_segment_chars, metavar="N",
                        help=f"merge short sentences of a line into segments of up to N characters, each spoken in "
                             f"one go (default {DEFAULT_TARGET_CHARS}; 0: one sentence at a time)")


def _segment_chars(value: str) -> int:
    try:
        return check_target_chars(int(value))
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e) if "segment target" in str(e) else f"{value!r} is not a whole "
                                         "number") from None


def _positive_int(value: str) -> int:
    try:
        number = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{value!r} is not a whole number") from None
    if number < 1:
        raise argparse.ArgumentTypeError("must be at least 1")
    return number


# ---- orator export ------------------------------------------------------------------------------------------
EXIT_OUTPUT = 3  # the output cannot be written
EXPORT_FORMATS = ("m4b", "m4a", "mp3", "opus", "flac", "wav")


def add_export_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("inputs", nargs="+", metavar="INPUT",
                        help="documents to read: .txt .md (and .epub .html .pdf .docx with the studio's readers)")
    parser.add_argument("--model", help="a model directory or a Hugging Face id (not needed for --list-chapters "
                                        "or --list-segments)")
    voices = parser.add_mutually_exclusive_group()
    voices.add_argument("--voice", metavar="NAME", help="the default voice: a voice of the library or a preset "
                                                        "speaker of the model")
    voices.add_argument("--voice-file", metavar="FILE", help="the default voice from a saved .voice file")
    parser.add_argument("--language", help="language of the text (default: the voice's, else auto)")
    parser.add_argument("--format", choices=EXPORT_FORMATS,
                        help="default: the --output file's suffix, else m4b")
    parser.add_argument("--output", "--out", "-o", metavar="PATH",
                        help="the file to write, or a folder (for several inputs or --per-chapter); default: "
                             "beside each input, named after it")
    parser.add_argument("--per-chapter", action="store_true", help="one numbered file per chapter, in a folder")
    parser.add_argument("--chapters", metavar="LIST", help="only these chapters, e.g. 1,3-5, numbered as "
                                                           "--list-chapters numbers them; a part brings its chapters")
    parser.add_argument("--list-chapters", action="store_true", help="print each input's chapters and stop")
    parser.add_argument("--list-segments", action="store_true",
                        help="print what would be spoken, one JSON object a line ({chapter, title, voice, text}: the "
                             "text as the reading policy gives it, before pronunciation rules), and stop")
    parser.add_argument("--read-urls", action="store_true", help="read web addresses in full (default: the site "
                                                                 "name only)")
    parser.add_argument("--read-code", action="store_true",
                        help="read code, shell and Python sessions, formulas and diagrams as written (default: say "
                             "\"Code example\", \"Formula\"... and skip them)")
    parser.add_argument("--footnotes", choices=FOOTNOTE_CHOICES, default=FOOTNOTES_AT_PARAGRAPH_END,
                        help="read footnotes after the paragraph that refers to them, or skip them (default: "
                             "%(default)s)")
    parser.add_argument("--subtitles", choices=("srt", "vtt"), help="write subtitles beside each audio file")
    parser.add_argument("--cover", metavar="IMAGE", help="a JPEG or PNG cover (default: an EPUB's own)")
    parser.add_argument("--bitrate", type=_positive_int, metavar="KBPS", help="of mp3, opus, m4b and m4a")
    parser.add_argument("--loudness", metavar="LUFS|PRESET",
                        help="bring the whole book to this integrated loudness with one gain, under a -1 dBTP "
                             "true-peak ceiling: a number of LUFS, web or podcast (-16), broadcast (-23), or "
                             "audiobook (ACX: RMS -23 to -18 dB, peaks under -3 dB, room tone at each file's ends) "
                             "(default: the levels as spoken; the levels reached are reported either way)")
    for name, default, what in (("sentence", 0.25, "sentences of a paragraph"), ("paragraph", 0.6, "paragraphs"),
                                ("heading", 1.0, "a heading and what is around it"),
                                ("chapter", 2.0, "chapters in one file")):
        parser.add_argument(f"--pause-{name}", type=_seconds, default=default, metavar="SECONDS",
                            help=f"silence between {what} (default: {default:g})")
    add_cast_arguments(parser)
    parser.add_argument("--library", metavar="FOLDER", help="the voice library (default: the studio's)")
    parser.add_argument("--cache-dir", metavar="FOLDER", help="where finished sentences are kept for resuming "
                                                              "(default: the user's cache folder)")
    parser.add_argument("--no-cache", action="store_true", help="keep nothing: an interrupted export starts over")
    add_generation_arguments(parser)


def run_export_command(args: argparse.Namespace) -> int:
    from engine.production.book_export import ExportCancelled

    try:
        return _export(args)
    except OratorError as e:
        return fail(e, EXIT_ERROR)
    except OutputError as e:
        return fail(e, EXIT_OUTPUT)
    except (ExportCancelled, KeyboardInterrupt):  # a first Ctrl-C cancels the export, a second interrupts it
        kept = "" if args.no_cache else "; finished sentences are kept: run the same command again to resume"
        print(f"orator export: interrupted; no partial file was left{kept}", file=sys.stderr)
        return EXIT_INTERRUPTED


class OutputError(Exception):
    """An output file or folder cannot be written."""


def fail(error: Exception, code: int, command: str = "export") -> int:
    """Print ``error`` as one line of ``orator COMMAND`` and return the exit status ``code``."""
    print(f"orator {command}: error: {' '.join(str(error).split())}", file=sys.stderr)
    return code


def _export(args: argparse.Namespace) -> int:
    from engine.core.frames.guard import describe_cuts
    from engine.documents.outline import MAX_DEPTH
    from engine.production.audio_metadata import Cover
    from engine.production.book_export import BookExporter
    from engine.production.book_sources import load_book
    from engine.production.book_structure import Pauses
    from engine.production.casting import cast_book
    from engine.production.chapter_ranges import chapter_selection
    from engine.production.export_plan import ExportOptions
    from engine.production.loudness import parse_target, report
    from engine.production.segment_cache import SegmentCache, default_cache_dir

    books = [(Path(name), load_book(Path(name))) for name in args.inputs]  # every input read before any work
    if args.list_chapters:
        for path, book in books:
            print(f"{path.name}: {book.title}" + (f" by {book.author}" if book.author else ""))
            for number, chapter in enumerate(book.chapters, 1):  # a part's chapters indented under it
                print(f"  {number:3d}. {'  ' * (min(chapter.level, MAX_DEPTH) - 1)}{chapter.title}")
        return 0
    cast = cast_of(args)
    books = [(path, cast_book(book, cast)) for path, book in books] if cast else books
    policy = ReadingPolicy(read_urls=args.read_urls, read_code=args.read_code, footnotes=args.footnotes)
    fmt = _export_format(args)
    selections = []
    for path, book in books:
        try:
            levels = [c.level for c in book.chapters]
            selections.append(tuple(chapter_selection(args.chapters, levels)) if args.chapters else None)
        except ValueError as e:
            raise UnsupportedError(f"--chapters {args.chapters}: {e} ({path.name})") from None
    if args.list_segments:
        try:
            for (path, book), chapters in zip(books, selections, strict=True):
                for warning in book.warnings:
                    print(f"orator export: {path.name}: {warning}", file=sys.stderr)
                _print_segments(book, chapters, policy, args.segment_chars)
            sys.stdout.flush()
        except BrokenPipeError:  # a reader that stopped early ("| head"): what it read is what it wanted
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    try:
        pauses = Pauses(args.pause_sentence, args.pause_paragraph, args.pause_heading, args.pause_chapter)
    except ValueError as e:
        raise UnsupportedError(str(e)) from None
    cover = Cover.from_file(args.cover).data if args.cover else None
    loudness = parse_target(args.loudness) if args.loudness else None
    outputs = [_output_for(path, fmt, args, len(books)) for path, _ in books]
    for output in outputs:
        check_writable(output if args.per_chapter else output.parent)
    for path, book in books:
        for warning in book.warnings:
            print(f"orator export: {path.name}: {warning}", file=sys.stderr)
    if not args.model:
        raise UnsupportedError("give the model to speak with: --model DIR_OR_HUB_ID")
    pronunciation = pronunciation_of(args)

    engine = _load(args.model, args.device, out=sys.stderr, precision=args.precision)
    sampling = replace(engine.defaults, greedy=args.greedy or engine.defaults.greedy,
                       seed=args.seed if args.seed is not None else engine.defaults.seed)
    cache = None if args.no_cache else SegmentCache(Path(args.cache_dir) if args.cache_dir else default_cache_dir())
    written = []
    for number, ((path, book), output, chapters) in enumerate(zip(books, outputs, selections, strict=True), 1):
        voices = _export_voices(args, engine, book, cast)
        options = ExportOptions(format=fmt, pauses=pauses, per_chapter=args.per_chapter, chapters=chapters,
                                subtitles=args.subtitles, max_frames=args.max_frames, cover=cover,
                                segment_chars=args.segment_chars, loudness=loudness,
                                bitrate=args.bitrate * 1000 if args.bitrate else None)
        label = f"[{number}/{len(books)}] {path.name}" if len(books) > 1 else path.name
        exporter = BookExporter(lambda voice: engine, sampling=sampling, cache=cache, progress=_ProgressLine(label),
                                pronunciation=pronunciation, reading_policy=policy)
        plans = exporter.plan(book, output, options, voices)
        try:
            with _ctrl_c_cancels(exporter.cancel):
                files = exporter.run(plans, book, options)
        except OSError as e:
            raise OutputError(f"cannot write {output}: {e.strerror or e}") from None
        finally:
            exporter.progress.close()
        cuts = describe_cuts(exporter.cuts, exporter.generated_segments)
        if cuts:
            print(f"orator export: {label}: {cuts}", file=sys.stderr)
        print(f"orator export: {label}: {report(exporter.loudness, loudness)}", file=sys.stderr)
        for line in exporter.levels.off_target(loudness):
            print(f"orator export: {label}: off target: {line}", file=sys.stderr)
        written.extend(files)
    for file in written:
        print(f"wrote {file}")
    return 0


def _print_segments(book, chapters: tuple[int, ...] | None, policy, segment_chars: int | None) -> None:
    """``--list-segments``: each segment export would speak of ``book``'s chosen chapters (None: all), one JSON
    object a line (``engine.production.segment_list``, the studio's preview too)."""
    from engine.production.segment_list import book_segments

    for line in book_segments(book, chapters, policy, segment_chars):
        print(line.as_json())


@contextlib.contextmanager
def _ctrl_c_cancels(cancel: threading.Event):
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


def _export_format(args) -> str:
    from engine.production.audio_formats import FORMATS

    suffix = Path(args.output).suffix.lower().lstrip(".") if args.output and not args.per_chapter else ""
    if args.format:
        if suffix in FORMATS and suffix != args.format:
            raise UnsupportedError(f"--output {args.output} is a .{suffix} file but --format is {args.format}")
        return args.format
    if suffix in EXPORT_FORMATS:
        return suffix
    if suffix and len(args.inputs) == 1 and not _is_folder(args.output):
        raise UnsupportedError(f"cannot write {Path(args.output).name!r}: the formats are "
                               f"{', '.join(EXPORT_FORMATS)} (or give --format)")
    return "m4b"


def _is_folder(path: str) -> bool:
    return path.endswith(("/", "\\")) or Path(path).is_dir()


def _output_for(source: Path, fmt: str, args, count: int) -> Path:
    """Where one input's export goes: the --output file, or a file (a folder, per chapter) named after the input,
    in the --output folder or beside the input."""
    from engine.production.audio_formats import audio_format

    suffix = audio_format(fmt).suffix
    if args.output and (count > 1 or _is_folder(args.output)):
        folder = Path(args.output)
        return folder / source.stem if args.per_chapter else folder / f"{source.stem}{suffix}"
    if args.output:
        return Path(args.output)
    return source.with_suffix("") if args.per_chapter else source.with_suffix(suffix)


def check_writable(folder: Path) -> None:
    """Fail now, not after an hour of speech, when ``folder`` cannot take new files."""
    from engine.production.encode import create_temp_beside

    probe = folder / "probe"
    existing = next((p for p in (folder, *folder.parents) if p.exists()), None)
    if existing is not None and not existing.is_dir():
        raise OutputError(f"cannot write to {folder}: {existing} is a file, not a folder")
    try:
        create_temp_beside(probe).unlink()
    except OSError as e:
        raise OutputError(f"cannot write to {folder}: {e.strerror or e}") from None


def _export_voices(args, engine, book, cast=None) -> dict:
    """The default voice (None), each voice mark's and the cast's, checked against the model now."""
    cast_voices = cast.voices if cast else set()
    voices = resolve_voices(args, engine, book.voices - cast_voices)
    others = argparse.Namespace(**{**vars(args), "voice": None, "voice_file": None})
    voices.update(resolve_voices(others, engine, cast_voices - set(voices), need_default=False,
                                 what="the cast's voice"))
    return voices


def resolve_voices(args, engine, names, need_default: bool = True,
                   what: str = "the voice mark [voice: ...] names") -> dict:
    """The default voice (None: ``args.voice_file`` or ``args.voice``) and each of ``names``, a voice of the library
    (``args.library``, else the studio's) or a preset speaker of the model, checked against the model now; without
    ``need_default`` the default may be missing (every line names its own voice)."""
    from engine.voices import Voice, load_voice
    from engine.voices.library import default_library_dir

    folder = Path(args.library) if args.library else default_library_dir()
    library = None
    if folder.is_dir():
        from engine.voices.library import VoiceLibrary

        library = VoiceLibrary(folder)
    speakers = {s.lower(): s for s in engine.speakers}

    def named(name: str, what: str):
        stored = library.find(name) if library is not None else None
        if stored is not None:
            voice = library.load(stored)
        elif name.strip().lower() in speakers:
            voice = Voice.preset(speakers[name.strip().lower()], language=args.language or "auto")
        else:
            known = f"; this model's speakers: {', '.join(engine.speakers)}" if engine.speakers else ""
            raise VoiceError(f"{what} {name!r} is neither a voice of the library ({folder}) nor a speaker of "
                             f"this model{known}")
        return voice.with_(language=args.language.lower()) if args.language and voice.kind != "preset" else voice

    voices = {}
    if getattr(args, "voice_file", None):
        voices[None] = load_voice(args.voice_file)
        if args.language:
            voices[None] = voices[None].with_(language=args.language.lower())
    elif args.voice:
        voices[None] = named(args.voice, "--voice")
    elif need_default:
        hint = f": this model has {', '.join(engine.speakers)}" if engine.speakers else ""
        raise VoiceError(f"choose the default voice with --voice NAME or --voice-file FILE{hint}")
    for name in sorted(names):
        voices[name] = named(name, what)
    for name, voice in voices.items():
        try:
            engine.check("Hello.", voice)
        except OratorError as e:
            raise VoiceError(f"{'the default voice' if name is None else repr(name)}: {e}") from None
    return voices


class _ProgressLine:
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


def _seconds(value: str) -> float:
    try:
        number = float(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{value!r} is not a number of seconds") from None
    if not 0 <= number <= 60:
        raise argparse.ArgumentTypeError("must be between 0 and 60 seconds")
    return number
