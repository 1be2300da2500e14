"""``orator export``: documents into audiobooks, and what they would say (``--list-chapters``, ``--list-segments``).

    python main.py export book.epub --model DIR --voice vivian --format m4b --subtitles srt
    python main.py export a.txt b.md --model DIR --voice-file narrator.voice --format mp3 --per-chapter -o out/
    python main.py export manual.html --list-segments --read-urls

It reads every input first (a bad one stops it before any speech), then speaks them with
``engine.production.book_export`` (chapters, pauses, resume: see there), showing progress on stderr
(``engine.cli.progress``). The lists need no model. Exit status (``engine.cli.exits``): 0 done, 2 a bad input, voice
or option, 3 an output that cannot be written, 130 interrupted (Ctrl-C: nothing partial is left, and the sentences
already spoken are kept for the next run of the same command).
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from engine.cli.casting_args import add_cast_arguments, cast_of
from engine.cli.exits import EXIT_ERROR, EXIT_INTERRUPTED, EXIT_OUTPUT, OutputError, check_writable, fail
from engine.cli.loading import load_engine, sampling_of
from engine.cli.options import add_generation_arguments, positive_int, pronunciation_of
from engine.cli.progress import ProgressLine, ctrl_c_cancels
from engine.cli.voices import resolve_voices
from engine.core.text.reading_policy import FOOTNOTE_CHOICES, FOOTNOTES_AT_PARAGRAPH_END, ReadingPolicy
from engine.errors import OratorError, UnsupportedError

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
    parser.add_argument("--bitrate", type=positive_int, metavar="KBPS", help="of mp3, opus, m4b and m4a")
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


def _export(args: argparse.Namespace) -> int:
    from engine.production.audio_metadata import Cover
    from engine.production.book_sources import load_book
    from engine.production.book_structure import Pauses
    from engine.production.casting import cast_book
    from engine.production.loudness import parse_target

    books = [(Path(name), load_book(Path(name))) for name in args.inputs]  # every input read before any work
    if args.list_chapters:
        _print_chapters(books)
        return 0
    cast = cast_of(args)
    books = [(path, cast_book(book, cast)) for path, book in books] if cast else books
    policy = ReadingPolicy(read_urls=args.read_urls, read_code=args.read_code, footnotes=args.footnotes)
    fmt = _export_format(args)
    selections = [_chapters_of(args.chapters, path, book) for path, book in books]
    if args.list_segments:
        _print_segments(books, selections, policy, args.segment_chars)
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

    engine = load_engine(args.model, args.device, out=sys.stderr, precision=args.precision)
    written = _speak_books(args, engine, books, outputs, selections, cast, policy, pronunciation,
                           fmt=fmt, pauses=pauses, cover=cover, loudness=loudness)
    for file in written:
        print(f"wrote {file}")
    return 0


def _speak_books(args, engine, books, outputs, selections, cast, policy, pronunciation, *, fmt, pauses, cover,
                 loudness) -> list[Path]:
    """Each book spoken into its output with ``engine``, its cuts and loudness reported on stderr: the files
    written."""
    from engine.core.frames.guard import describe_cuts
    from engine.production.book_export import BookExporter
    from engine.production.export_plan import ExportOptions
    from engine.production.loudness import report
    from engine.production.segment_cache import SegmentCache, default_cache_dir

    sampling = sampling_of(args, engine)
    cache = None if args.no_cache else SegmentCache(Path(args.cache_dir) if args.cache_dir else default_cache_dir())
    written = []
    for number, ((path, book), output, chapters) in enumerate(zip(books, outputs, selections, strict=True), 1):
        voices = _export_voices(args, engine, book, cast)
        options = ExportOptions(format=fmt, pauses=pauses, per_chapter=args.per_chapter, chapters=chapters,
                                subtitles=args.subtitles, max_frames=args.max_frames, cover=cover,
                                segment_chars=args.segment_chars, loudness=loudness,
                                bitrate=args.bitrate * 1000 if args.bitrate else None)
        label = f"[{number}/{len(books)}] {path.name}" if len(books) > 1 else path.name
        exporter = BookExporter(lambda voice: engine, sampling=sampling, cache=cache, progress=ProgressLine(label),
                                pronunciation=pronunciation, reading_policy=policy)
        plans = exporter.plan(book, output, options, voices)
        try:
            with ctrl_c_cancels(exporter.cancel):
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
    return written


def _chapters_of(chapters: str | None, path: Path, book) -> tuple[int, ...] | None:
    """The chapters ``--chapters`` picks of ``book`` (None: all); ``UnsupportedError`` for a list it cannot
    take."""
    from engine.production.chapter_ranges import chapter_selection

    if not chapters:
        return None
    try:
        return tuple(chapter_selection(chapters, [c.level for c in book.chapters]))
    except ValueError as e:
        raise UnsupportedError(f"--chapters {chapters}: {e} ({path.name})") from None


def _print_chapters(books) -> None:
    """``--list-chapters``: each input's title and its numbered chapters, a part's chapters indented under it."""
    from engine.documents.outline import MAX_DEPTH

    for path, book in books:
        print(f"{path.name}: {book.title}" + (f" by {book.author}" if book.author else ""))
        for number, chapter in enumerate(book.chapters, 1):
            print(f"  {number:3d}. {'  ' * (min(chapter.level, MAX_DEPTH) - 1)}{chapter.title}")


def _print_segments(books, selections, policy, segment_chars: int | None) -> None:
    """``--list-segments``: each segment export would speak of each book's chosen chapters (None: all), one JSON
    object a line (``engine.production.segment_list``, the studio's preview too)."""
    from engine.production.segment_list import book_segments

    try:
        for (path, book), chapters in zip(books, selections, strict=True):
            for warning in book.warnings:
                print(f"orator export: {path.name}: {warning}", file=sys.stderr)
            for line in book_segments(book, chapters, policy, segment_chars):
                print(line.as_json())
        sys.stdout.flush()
    except BrokenPipeError:  # a reader that stopped early ("| head"): what it read is what it wanted
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())


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


def _export_voices(args, engine, book, cast=None) -> dict:
    """The default voice (None), each voice mark's and the cast's, checked against the model now."""
    cast_voices = cast.voices if cast else set()
    voices = resolve_voices(args, engine, book.voices - cast_voices)
    others = argparse.Namespace(**{**vars(args), "voice": None, "voice_file": None})
    voices.update(resolve_voices(others, engine, cast_voices - set(voices), need_default=False,
                                 what="the cast's voice"))
    return voices


def _seconds(value: str) -> float:
    try:
        number = float(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{value!r} is not a number of seconds") from None
    if not 0 <= number <= 60:
        raise argparse.ArgumentTypeError("must be between 0 and 60 seconds")
    return number
