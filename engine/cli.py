"""``orator say``: speak text into a wav or flac file from the command line.

    python main.py say "Hello there." --model DIR_OR_HUB_ID --voice vivian --out hello.wav
    python main.py say "Hello." --model DIR --design "a calm, low male voice"
    python main.py say "Hello." --model DIR --clone ref.wav --ref-text "what the reference says"
    python main.py say --model DIR --list-voices

A voice is one of ``--voice`` (preset speaker), ``--design``, ``--clone`` or ``--voice-file``; the
model type decides which apply. Errors the engine raises on purpose (``OratorError``) are printed as
one line and exit with status 2.
"""

from __future__ import annotations

import argparse
import sys
import time
from dataclasses import replace
from pathlib import Path

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
    parser.add_argument("--seed", type=int, help="seed for reproducible sampling")
    parser.add_argument("--greedy", action="store_true", help="always take the most likely code (no sampling)")
    parser.add_argument("--device", choices=("cpu", "cuda"), help="default: cuda when available")
    parser.add_argument("--max-frames", type=_positive_int, metavar="N",
                        help="at most N frames (12.5 per second) per sentence")
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
    from engine.audio.files import WRITE_FORMATS

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

    engine = _load(args.model, args.device)
    if args.list_voices:
        _print_voices(engine)
        return 0
    voice = _voice(args, engine)
    sampling = replace(engine.defaults, greedy=args.greedy or engine.defaults.greedy,
                       seed=args.seed if args.seed is not None else engine.defaults.seed)
    return _speak(engine, text, voice, sampling, args.max_frames, out)


def _read_text(text: str | None) -> str:
    if text == "-":
        text = sys.stdin.read()
    if not text or not text.strip():
        raise TextError('there is no text to speak: give it in quotes, e.g. say "Hello there." --model ...')
    return text


def _load(model: str, device: str | None):
    import torch
    import transformers

    from engine import Engine

    transformers.logging.set_verbosity_error()  # its tokenizer-loading notices mean nothing to a CLI user
    if device is None:
        device = "cuda" if torch.cuda.is_available() else "cpu"
    elif device == "cuda" and not torch.cuda.is_available():
        raise UnsupportedError("--device cuda: this PyTorch installation sees no CUDA GPU; use --device cpu")
    start = time.perf_counter()
    engine = Engine.from_pretrained(model, device=device)
    print(f"loaded {model} ({engine.model_type}, {engine.model_size}) on {device} "
          f"in {time.perf_counter() - start:.1f} s")
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


def _speak(engine, text, voice, sampling, max_frames, out: Path) -> int:
    import numpy as np

    from engine.audio.files import write_audio

    start = time.perf_counter()
    chunks = list(engine.stream(text, voice, sampling=sampling, max_frames=max_frames))
    seconds = time.perf_counter() - start
    samples = np.concatenate([c.samples for c in chunks]) if chunks else np.zeros(0, dtype=np.float32)
    write_audio(out, samples, engine.sample_rate)
    duration = len(samples) / engine.sample_rate
    first_audio = f", first audio after {chunks[0].elapsed:.2f} s" if chunks else ""
    rtf = f"RTF {seconds / duration:.2f}" if duration else "RTF n/a"
    print(f"wrote {out}: {duration:.2f} s of audio in {seconds:.2f} s ({rtf}{first_audio})")
    return 0


def _positive_int(value: str) -> int:
    try:
        number = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{value!r} is not a whole number") from None
    if number < 1:
        raise argparse.ArgumentTypeError("must be at least 1")
    return number
