"""Voices: who speaks. A preset speaker, a written design description, or a clone of a recording.

A ``Voice`` is an immutable value. Clones carry what the prompt needs (speaker embedding, and for
in-context cloning the reference codes and transcript); a clone made from audio alone keeps the
24 kHz reference until an engine encodes it (``Engine.prepare_voice``).

``check_voice_arrays`` is the one rule for a voice's arrays, whatever model speaks it, applied to voice files as
they are read (their header's shapes before any tensor is) and to every voice an engine prepares or speaks:
a speaker embedding of at most ``MAX_EMBEDDING_DIM`` finite values, reference codes [T, 16] of at most
``MAX_REF_FRAMES`` frames (longer never fits a prompt: ``engine.core.frames.capacity``) each within the codebook, and
reference audio of at most ``MAX_REF_SAMPLES`` finite samples (the 60 s a clone's reference may last).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Literal

import numpy as np

from engine.core.audio_files import MAX_REFERENCE_SECONDS, SAMPLE_RATE
from engine.core.frames.capacity import MAX_SEQ, MIN_ROOM_FRAMES
from engine.errors import VoiceError

VoiceKind = Literal["preset", "design", "clone"]
# the model type (config.json's tts_model_type) that speaks each kind of voice
MODEL_TYPE_FOR_VOICE = {"preset": "custom_voice", "design": "voice_design", "clone": "base"}
VOICE_FOR_MODEL_TYPE = {model_type: kind for kind, model_type in MODEL_TYPE_FOR_VOICE.items()}
NUM_CODE_GROUPS = 16
CODEBOOK_SIZE = 2048  # each code group of the 12 Hz speech tokenizer indexes a codebook of this many entries
MAX_REF_FRAMES = MAX_SEQ - MIN_ROOM_FRAMES  # reference codes longer than this fit no prompt
MAX_REF_SAMPLES = round(MAX_REFERENCE_SECONDS * SAMPLE_RATE)
MAX_EMBEDDING_DIM = 8192  # the widest Qwen3-TTS talker is 2048


@dataclass(frozen=True, eq=False)
class Voice:
    kind: VoiceKind
    language: str = "auto"
    speaker: str | None = None  # preset: one of the CustomVoice speakers
    instruct: str | None = None  # preset: optional style; design: the description
    ref_text: str | None = None  # clone: transcript of the reference -> in-context mode
    speaker_embedding: np.ndarray | None = None  # clone: [enc_dim] float32
    ref_codes: np.ndarray | None = None  # clone, in-context: [T, 16] int64
    ref_audio: np.ndarray | None = None  # clone: 24 kHz mono float32, until encoded
    name: str | None = None
    meta: dict = field(default_factory=dict)  # source file, model size, creation time ...

    # ---- constructors -------------------------------------------------------------------------
    @classmethod
    def preset(cls, speaker: str, language: str = "auto", instruct: str | None = None) -> Voice:
        _check_text_fields(speaker=speaker, language=language, instruct=instruct)
        if not speaker or not speaker.strip():
            raise VoiceError("a preset voice needs a speaker name")
        return cls("preset", language=language.lower(), speaker=speaker.strip().lower(),
                   instruct=instruct or None, name=speaker.strip().lower())

    @classmethod
    def design(cls, description: str, language: str = "auto") -> Voice:
        _check_text_fields(description=description, language=language)
        if not description or not description.strip():
            raise VoiceError("VoiceDesign needs a written description of the voice")
        return cls("design", language=language.lower(), instruct=description.strip())

    @classmethod
    def clone(cls, ref_audio, ref_text: str | None = None, language: str = "auto", name: str | None = None,
              mode: str = "auto") -> Voice:
        """Clone from a path or an ``(array, sample_rate)`` pair.

        ``mode``: "in_context" (the reference's codes and transcript go into the prompt: closest to
        the recording, needs ``ref_text``), "x_vector" (the speaker embedding only; a transcript is
        ignored) or "auto" (in-context when a transcript is given)."""
        from engine.core.audio_files import load_reference

        _check_text_fields(ref_text=ref_text, language=language, name=name)
        if mode not in ("auto", "in_context", "x_vector"):
            raise VoiceError(f"unknown clone mode {shown(mode)}: use 'auto', 'in_context' or 'x_vector'")
        ref_text = ref_text.strip() if ref_text and ref_text.strip() else None
        if mode == "in_context" and ref_text is None:
            raise VoiceError("in-context cloning needs the transcript of the reference recording (ref_text)")
        if mode == "x_vector":
            ref_text = None
        audio, source = load_reference(ref_audio)
        return cls("clone", language=language.lower(), ref_text=ref_text, ref_audio=audio,
                   name=name, meta={"source": source})

    # ---- properties -----------------------------------------------------------------------------
    @property
    def in_context(self) -> bool:
        """True for a clone with a transcript: the reference codes go into the prompt."""
        return clones_in_context(self.kind, self.ref_text)

    @property
    def is_encoded(self) -> bool:
        return encoded(self.kind, self.ref_text, self.speaker_embedding is not None, self.ref_codes is not None)

    def with_(self, **changes) -> Voice:
        return replace(self, **changes)


def clones_in_context(kind: str, ref_text: str | None) -> bool:
    """Whether a voice of ``kind`` with this transcript is an in-context clone (its reference codes go into the
    prompt); the rule for a ``Voice`` and for a voice file's header alike."""
    return kind == "clone" and ref_text is not None


def encoded(kind: str, ref_text: str | None, has_embedding: bool, has_codes: bool) -> bool:
    """Whether a voice needs no encoding before use: any voice but a clone, or a clone with its speaker embedding
    (and, in context, its reference codes)."""
    if kind != "clone":
        return True
    return has_embedding and (not clones_in_context(kind, ref_text) or has_codes)


def shown(value, limit: int = 60) -> str:
    """``repr`` of a value an error message quotes, cut to ``limit`` characters: a request's field has no limit."""
    text = repr(value)
    return text if len(text) <= limit else text[:limit] + "…"


def _check_text_fields(**fields) -> None:
    """VoiceError unless each field is text (or None): a list or a number is never taken for a name."""
    for name, value in fields.items():
        if value is not None and not isinstance(value, str):
            raise VoiceError(f"the voice's {name} must be text, not {type(value).__name__}")


def check_voice_shapes(shapes: dict[str, tuple[int, ...]], owner: str) -> None:
    """VoiceError unless the arrays of these shapes (by field name) can be a voice's: before any is read."""
    limits = {"speaker_embedding": MAX_EMBEDDING_DIM, "ref_audio": MAX_REF_SAMPLES}
    for name, limit in limits.items():
        shape = shapes.get(name)
        if shape is not None and (len(shape) != 1 or shape[0] == 0):
            raise VoiceError(f"{owner}: {name} must be a non-empty vector, got shape {tuple(shape)}")
        if shape is not None and shape[0] > limit:
            raise VoiceError(f"{owner}: {name} has {shape[0]} values; at most {limit} can be used"
                             + (f" ({MAX_REFERENCE_SECONDS:g} s at {SAMPLE_RATE} Hz)" if name == "ref_audio" else ""))
    codes = shapes.get("ref_codes")
    if codes is not None and (len(codes) != 2 or codes[1] != NUM_CODE_GROUPS or codes[0] == 0):
        raise VoiceError(f"{owner}: ref_codes must be [T, {NUM_CODE_GROUPS}], got shape {tuple(codes)}")
    if codes is not None and codes[0] > MAX_REF_FRAMES:
        raise VoiceError(f"{owner}: its reference codes have {codes[0]} frames; at most {MAX_REF_FRAMES} fit a "
                         "prompt")


def check_voice_arrays(arrays: dict[str, np.ndarray | None], owner: str, audio: bool = True) -> None:
    """VoiceError unless these arrays (by field name) can be a voice's: ``check_voice_shapes``, codes within the
    codebook, a finite embedding and (with ``audio``) finite reference audio."""
    present = {name: np.asarray(value) for name, value in arrays.items() if value is not None}
    check_voice_shapes({name: value.shape for name, value in present.items()}, owner)
    codes = present.get("ref_codes")
    if codes is not None:
        if not np.issubdtype(codes.dtype, np.integer):
            raise VoiceError(f"{owner}: ref_codes must be integers, not {codes.dtype}")
        low, high = int(codes.min()), int(codes.max())
        if low < 0 or high >= CODEBOOK_SIZE:
            raise VoiceError(f"{owner}: its reference codes run from {low} to {high}; codes are 0 to "
                             f"{CODEBOOK_SIZE - 1}")
    for name in ("speaker_embedding", "ref_audio") if audio else ("speaker_embedding",):
        value = present.get(name)
        if value is not None and not (np.issubdtype(value.dtype, np.floating) and np.isfinite(value).all()):
            raise VoiceError(f"{owner}: {name} holds NaN, infinite or non-float values")


def voice_arrays(voice: Voice) -> dict[str, np.ndarray | None]:
    return {"speaker_embedding": voice.speaker_embedding, "ref_codes": voice.ref_codes, "ref_audio": voice.ref_audio}
