"""Orator's Qwen3-TTS inference engine: ``Engine``, ``Voice`` and ``Sampling`` are the public API."""

from engine.audio.chunks import Audio, Chunk
from engine.engine import Engine
from engine.errors import CheckpointError, OratorError, SamplingError, TextError, UnsupportedError, VoiceError
from engine.live import LiveText
from engine.sampling import Sampling
from engine.voices import Voice, load_voice, save_voice

__all__ = [
    "Audio", "CheckpointError", "Chunk", "Engine", "LiveText", "OratorError", "Sampling", "SamplingError", "TextError",
    "UnsupportedError", "Voice", "VoiceError", "load_voice", "save_voice",
]
