"""Orator's Qwen3-TTS inference engine: ``Engine``, ``Voice`` and ``Sampling`` are the public API."""

from engine.engine import Engine
from engine.errors import CheckpointError, OratorError, TextError, UnsupportedError, VoiceError
from engine.results import Audio, Chunk
from engine.sampling import Sampling
from engine.voices import Voice

__all__ = [
    "Audio", "CheckpointError", "Chunk", "Engine", "OratorError", "Sampling", "TextError",
    "UnsupportedError", "Voice", "VoiceError",
]
