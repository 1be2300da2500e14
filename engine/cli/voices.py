"""The voices ``export`` and ``voiceover`` speak with, found by name in the voice library or among the model's
preset speakers, and checked against the model before the first line is spoken."""

from __future__ import annotations

from pathlib import Path

from engine.errors import OratorError, VoiceError


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
