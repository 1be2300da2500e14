"""``orator voiceover``: a subtitle file spoken into one track, each line on its cue.

    python main.py voiceover film.srt --out voice.wav --model DIR --voice vivian
    python main.py voiceover talk.vtt --out voice.m4a --clips lines/ --loudness broadcast --sample-rate 48000

Everything is checked before the model loads (the subtitles, the output, the loudness target); the voices are
checked against the model before the first line is spoken. Pushed, sped-up and overrunning lines and the
loudness reached are reported on stderr; the files written on stdout. Exit status as ``export``'s: 0 done, 2 a bad
input, voice or option, 3 an output that cannot be written, 130 interrupted (nothing is left behind).
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import replace
from pathlib import Path

from engine.cli.exits import EXIT_ERROR, EXIT_INTERRUPTED, EXIT_OUTPUT, OutputError, check_writable, fail
from engine.cli.loading import load_engine
from engine.cli.options import add_generation_arguments, pronunciation_of
from engine.cli.voices import resolve_voices
from engine.errors import OratorError, UnsupportedError
from engine.production.voiceover import SAMPLE_RATES

VOICEOVER_FORMATS = (".wav", ".flac", ".mp3", ".m4a")


def add_voiceover_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("input", metavar="INPUT", help="the subtitles to voice: an .srt or .vtt file")
    parser.add_argument("--out", "-o", required=True, metavar="TRACK",
                        help="the track to write: .wav .flac .mp3 or .m4a (subtitles with the actual timings "
                             "are written beside it)")
    parser.add_argument("--clips", metavar="DIR", help="also write one numbered file per cue into DIR")
    parser.add_argument("--loudness", default="-16", metavar="LUFS|PRESET",
                        help="integrated loudness of the track under a -1 dBTP true-peak ceiling: a number of "
                             "LUFS, web or podcast (-16), broadcast (-23), or off (default: -16)")
    parser.add_argument("--model", required=True, help="a model directory or a Hugging Face id")
    parser.add_argument("--voice", metavar="NAME", help="the voice of cues that name none: a voice of the library "
                                                        "or a preset speaker of the model")
    parser.add_argument("--cast", metavar="SPEAKER=VOICE,...|FILE",
                        help="the voice of each speaker a voice mark or <v> tag names, e.g. \"Roger Bingham=Ryan\" "
                             "(a speaker matches by its words: \"Bingham\" matches \"Roger Bingham\"), or a file "
                             "of such pairs, one a line; a speaker not cast is a voice's own name")
    parser.add_argument("--library", metavar="FOLDER", help="the voice library (default: the studio's)")
    parser.add_argument("--language", help="language of the text (default: the voice's, else auto)")
    parser.add_argument("--max-tempo", type=_tempo, default=1.25, metavar="X",
                        help="speed a line up at most this much to fit its cue (default: 1.25)")
    parser.add_argument("--project", metavar="DIR",
                        help="keep each line's takes in this folder (made on first use): a later run speaks only "
                             "the cues without a kept take")
    parser.add_argument("--retake", metavar="LIST", help="with --project: speak these cues again with new seeds "
                                                         "and keep the new takes, e.g. 2,5")
    parser.add_argument("--sample-rate", type=_rate, default=24000, metavar="HZ",
                        help="of the track (default: the model's 24000; 48000 for video)")
    add_generation_arguments(parser)


def run_voiceover_command(args: argparse.Namespace) -> int:
    try:
        return _voiceover(args)
    except OratorError as e:
        return fail(e, EXIT_ERROR, "voiceover")
    except OutputError as e:
        return fail(e, EXIT_OUTPUT, "voiceover")
    except KeyboardInterrupt:
        print("orator voiceover: interrupted; no partial file was left", file=sys.stderr)
        return EXIT_INTERRUPTED


def _voiceover(args: argparse.Namespace) -> int:
    from engine.core.speech_plan import draw_seed
    from engine.production.loudness import parse_target
    from engine.production.voiceover.cues import read_subtitles
    from engine.production.voiceover.render import assemble, speak_line, write_voiceover

    subtitles = read_subtitles(args.input)
    out = Path(args.out)
    if out.suffix.lower() not in VOICEOVER_FORMATS:
        raise UnsupportedError(f"cannot write {out.name!r}: the track is {', '.join(VOICEOVER_FORMATS)}")
    target = None if args.loudness.strip().lower() == "off" else parse_target(args.loudness)
    cast = _cast(args.cast)
    clips = Path(args.clips) if args.clips else None
    check_writable(out.parent)
    if clips is not None:
        check_writable(clips)
    for warning in subtitles.warnings:
        print(f"orator voiceover: {Path(args.input).name}: {warning}", file=sys.stderr)
    pronunciation = pronunciation_of(args)
    project = _project(args, subtitles)
    cues = project.cues if project is not None else subtitles.cues
    retake = _retake(args.retake, cues, project)
    engine = voices = sampling = None
    count = 0

    def speak(cue, voice_name):
        nonlocal engine, voices, sampling, count
        if engine is None:  # loaded only when a line must be spoken: a project with every take kept needs none
            engine = load_engine(args.model, args.device, out=sys.stderr, precision=args.precision)
            voices = _voices(args, engine, cues, project, cast)
            sampling = replace(engine.defaults, greedy=args.greedy or engine.defaults.greedy)
        count += 1
        seed = args.seed if args.seed is not None and cue.number not in retake else draw_seed(None)
        print(f"cue {cue.number}: speaking ({count} spoken): {cue.text[:60]}", file=sys.stderr)
        samples = speak_line(engine, cue.text, voices[cast(voice_name)], replace(sampling, seed=seed), args.max_frames,
                             pronunciation, args.segment_chars)
        return samples, seed

    if project is not None:
        lines = project.lines(speak, retake)
        kept = len(cues) - count
        if kept:
            print(f"orator voiceover: {kept} of {len(cues)} cues from their kept takes in {project.folder}",
                  file=sys.stderr)
    else:
        lines = [speak(cue, cue.voice)[0] for cue in cues]
    voiceover = assemble(cues, lines, args.sample_rate, args.max_tempo, target)
    for line in voiceover.report():
        print(f"orator voiceover: {line}", file=sys.stderr)
    try:
        written = write_voiceover(voiceover, cues, out, subtitles.kind, clips, Path(args.input))
    except OSError as e:
        raise OutputError(f"cannot write {out}: {e.strerror or e}") from None
    for path in written:
        print(f"wrote {path}")
    return 0


def _project(args, subtitles):
    """The ``--project`` folder opened (its subtitles and default voice brought up to date) or made; None without."""
    if not args.project:
        if args.retake:
            raise UnsupportedError("--retake picks takes of a --project: give --project DIR too")
        return None
    from engine.production.voiceover.project import MANIFEST, VoiceoverProject

    folder = Path(args.project)
    if not (folder / MANIFEST).exists():
        check_writable(folder)
        return VoiceoverProject.create(folder, subtitles.text, subtitles.kind, args.voice)
    project = VoiceoverProject.open(folder)
    if args.voice:
        project.set_default_voice(args.voice)
    fresh = project.update_subtitles(subtitles.text, subtitles.kind)
    if fresh and len(fresh) < len(project.cues):
        print(f"orator voiceover: changed cues without a take yet: {', '.join(map(str, fresh))}", file=sys.stderr)
    return project


def _retake(text: str | None, cues, project) -> set[int]:
    if not text:
        return set()
    numbers = {c.number for c in cues}
    try:
        wanted = {int(part) for part in text.split(",") if part.strip()}
    except ValueError:
        raise UnsupportedError(f"--retake {text}: give cue numbers, e.g. 2,5") from None
    unknown = sorted(wanted - numbers)
    if unknown:
        raise UnsupportedError(f"--retake: there is no cue {', '.join(map(str, unknown))}")
    return wanted


def _cast(text: str | None):
    """``--cast`` read now (a bad one stops the run before the model loads): the voice a cue's speaker is spoken
    with, the speaker's own name where the cast has none (None: the default voice)."""
    if text is None:
        return lambda name: name
    from engine.production.casting import Cast, cast_argument

    cast = Cast(None, cast_argument(text))
    return lambda name: (cast.voice_of(name) or name) if name else None


def _voices(args, engine, cues, project, cast) -> dict:
    """Each voice the cues are spoken with, by name (None: the default voice), checked against the model."""
    names = {cast(project.voice_of(c.number) if project is not None else c.voice) for c in cues}
    need_default = None in names
    names.discard(None)
    return resolve_voices(args, engine, names, need_default=need_default, what="the cue's voice")


def _tempo(value: str) -> float:
    from engine.production.voiceover.timeline import MAX_TEMPO

    try:
        number = float(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{value!r} is not a number") from None
    if not 1.0 <= number <= MAX_TEMPO:
        raise argparse.ArgumentTypeError(f"must be between 1 and {MAX_TEMPO:g}")
    return number


def _rate(value: str) -> int:
    try:
        number = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{value!r} is not a whole number") from None
    if number not in SAMPLE_RATES:
        raise argparse.ArgumentTypeError(f"must be one of {', '.join(map(str, SAMPLE_RATES))}")
    return number
