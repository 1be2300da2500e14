"""Orator's Qwen3-TTS inference engine: ``Engine``, ``Voice`` and ``Sampling`` are the public API.

The names are loaded on first use (PEP 562), so that a light submodule (``engine.errors``, ``engine.core.text``, the
document readers, the command line's argument parsers) can be imported without torch: ``python main.py --help``
imports neither torch nor the server's web stack, and the PDF reader's worker process starts in a moment.

The tree's layers: ``engine.core`` (inference: text to audio chunks), over the foundations beside this file
(``errors``, ``atomic_files``, ``bounded_files``, ``json_limits``, ``user_cache``); the product services over the
core (``documents``, ``voices``, ``pronunciation``, ``production``); ``engine.cli`` over them all.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

_PUBLIC = {
    "Audio": "engine.core.chunks", "Chunk": "engine.core.chunks",
    "Engine": "engine.core.engine",
    "CheckpointError": "engine.errors", "OratorError": "engine.errors", "SamplingError": "engine.errors",
    "TextError": "engine.errors", "UnsupportedError": "engine.errors", "VoiceError": "engine.errors",
    "LiveText": "engine.core.text.live_text",
    "Sampling": "engine.core.sampling",
    "Voice": "engine.core.voice", "load_voice": "engine.core.voice_file", "save_voice": "engine.core.voice_file",
}
__all__ = [
    "Audio", "CheckpointError", "Chunk", "Engine", "LiveText", "OratorError", "Sampling", "SamplingError", "TextError",
    "UnsupportedError", "Voice", "VoiceError", "load_voice", "save_voice",
]

if TYPE_CHECKING:
    from engine.core.chunks import Audio, Chunk
    from engine.core.engine import Engine
    from engine.core.sampling import Sampling
    from engine.core.text.live_text import LiveText
    from engine.core.voice import Voice
    from engine.core.voice_file import load_voice, save_voice
    from engine.errors import (
        CheckpointError,
        OratorError,
        SamplingError,
        TextError,
        UnsupportedError,
        VoiceError,
    )


def __getattr__(name: str):
    module = _PUBLIC.get(name)
    if module is None:
        raise AttributeError(f"module 'engine' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # once loaded, a plain module attribute
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_PUBLIC))
