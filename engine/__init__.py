"""Orator's Qwen3-TTS inference engine: ``Engine``, ``Voice`` and ``Sampling`` are the public API.

The names are imported when first used (PEP 562), so a module of the engine that needs no model (the document
readers, the text splitter) imports without PyTorch: the PDF reader's worker process starts in a moment.
"""

from __future__ import annotations

import importlib

_HOMES = {
    "Audio": "engine.audio.chunks", "Chunk": "engine.audio.chunks", "Engine": "engine.engine",
    "CheckpointError": "engine.errors", "OratorError": "engine.errors", "SamplingError": "engine.errors",
    "TextError": "engine.errors", "UnsupportedError": "engine.errors", "VoiceError": "engine.errors",
    "LiveText": "engine.live", "Sampling": "engine.sampling", "Voice": "engine.voices",
    "load_voice": "engine.voices", "save_voice": "engine.voices",
}

__all__ = sorted(_HOMES)


def __getattr__(name: str):
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'engine' has no attribute {name!r}")
    value = getattr(importlib.import_module(home), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_HOMES))
