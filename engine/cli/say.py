"""``orator say``: speak text into a wav or flac file.

    python main.py say "Hello there." --model DIR_OR_HUB_ID --voice vivian --out hello.wav
    python main.py say "Hello." --model DIR --design "a calm, low male voice"
    python main.py say "Hello." --model DIR --clone ref.wav --ref-text "what the reference says"
    python main.py say --model DIR --list-voices

A voice is one of ``--voice`` (preset speaker), ``--design``, ``--clone`` or ``--voice-file``; the model type
decides which apply. It speaks with the studio's pronunciation rules (its ``pronunciation.json`` in the data folder,
else the shipped rules), another file's (``--pronunciation FILE``) or none (``--no-pronunciation``). Errors the
engine raises on purpose (``OratorError``) are printed as one line and exit with status 2; Ctrl-C exits with 130.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from engine.cli.exits import EXIT_ERROR, EXIT_INTERRUPTED
from engine.cli.loading import load_engine, sampling_of
from engine.cli.options import add_generation_arguments, pronunciation_of
from engine.errors import OratorError, TextError, UnsupportedError, VoiceError

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
    engine = load_engine(args.model, args.device, precision=args.precision)
    if args.list_voices:
        _print_voices(engine)
        return 0
    voice = _voice(args, engine)
    return _speak(engine, text, voice, sampling_of(args, engine), args.max_frames, out, pronunciation,
                  args.segment_chars)


def _read_text(text: str | None) -> str:
    if text == "-":
        text = sys.stdin.read()
    if not text or not text.strip():
        raise TextError('there is no text to speak: give it in quotes, e.g. say "Hello there." --model ...')
    return text


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
