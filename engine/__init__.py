"""Orator's Qwen3-TTS inference engine: ``Engine``, ``Voice`` and ``Sampling`` are the public API.

The names are loaded on first use (PEP 562), so that a light submodule (``engine.errors``, ``engine.text``, the
document readers, the command line's argument parsers) can be imported without torch: ``python main.py --help``
imports neither torch nor the server's web stack, and the PDF reader's worker process starts in a moment.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

_PUBLIC = {
    "Audio": "engine.audio.chunks", "Chunk": "engine.audio.chunks",
    "Engine": "engine.engine",
    "CheckpointError": "engine.errors", "OratorError": "engine.errors", "SamplingError": "engine.errors",
    "TextError": "engine.errors", "UnsupportedError": "engine.errors", "VoiceError": "engine.errors",
    "LiveText": "engine.live",
    "Sampling": "engine.sampling",
    "Voice": "engine.voices", "load_voice": "engine.voices", "save_voice": "engine.voices",
}
__all__ = [
    "Audio", "CheckpointError", "Chunk", "Engine", "LiveText", "OratorError", "Sampling", "SamplingError", "TextError",
    "UnsupportedError", "Voice", "VoiceError", "load_voice", "save_voice",
]

if TYPE_CHECKING:
    from engine.audio.chunks import Audio, Chunk
    from engine.engine import Engine
    from engine.errors import (
        CheckpointError,
        OratorError,
        SamplingError,
        TextError,
        UnsupportedError,
        VoiceError,
    )
    from engine.live import LiveText
    from engine.sampling import Sampling
    from engine.voices import Voice, load_voice, save_voice


def __getattr__(name: str):
    module = _PUBLIC.get(name)
    if module is None:
        raise AttributeError(f"module 'engine' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # once loaded, a plain module attribute
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_PUBLIC))
