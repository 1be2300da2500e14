"""Voices: who speaks. A preset speaker, a written design description, or a clone of a recording.

A ``Voice`` is an immutable value. Clones carry what the prompt needs (speaker embedding, and for
in-context cloning the reference codes and transcript); a clone made from audio alone keeps the
24 kHz reference until an engine encodes it (``Engine.prepare_voice``).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Literal

import numpy as np

from engine.errors import VoiceError

VoiceKind = Literal["preset", "design", "clone"]
# the model type (config.json's tts_model_type) that speaks each kind of voice
MODEL_TYPE_FOR_VOICE = {"preset": "custom_voice", "design": "voice_design", "clone": "base"}
VOICE_FOR_MODEL_TYPE = {model_type: kind for kind, model_type in MODEL_TYPE_FOR_VOICE.items()}


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
        if not speaker or not speaker.strip():
            raise VoiceError("a preset voice needs a speaker name")
        return cls("preset", language=language.lower(), speaker=speaker.strip().lower(),
                   instruct=instruct or None, name=speaker.strip().lower())

    @classmethod
    def design(cls, description: str, language: str = "auto") -> Voice:
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
        from engine.audio.files import load_reference

        if mode not in ("auto", "in_context", "x_vector"):
            raise VoiceError(f"unknown clone mode {mode!r}: use 'auto', 'in_context' or 'x_vector'")
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
