"""Orator's Qwen3-TTS inference engine: ``Engine``, ``Voice`` and ``Sampling`` are the public API."""

import os

# cuBLAS only picks run-to-run deterministic GEMM algorithms with a fixed workspace; seeded sampling
# must repeat exactly. It takes effect only before CUDA starts, hence here; a caller's value wins.
os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")

from engine.engine import Engine
from engine.errors import CheckpointError, OratorError, SamplingError, TextError, UnsupportedError, VoiceError
from engine.results import Audio, Chunk
from engine.sampling import Sampling
from engine.voices import Voice

__all__ = [
    "Audio", "CheckpointError", "Chunk", "Engine", "OratorError", "Sampling", "SamplingError", "TextError",
    "UnsupportedError", "Voice", "VoiceError",
]
