"""Shared by the server tests: decoding responses and what the engine alone gives for a request."""

from __future__ import annotations

import base64
import dataclasses
import io
import json

import numpy as np
import soundfile as sf

from engine import Voice
from server.formats import to_pcm16

RATE = 24000
SAMPLES_PER_FRAME = 1920


def decode(response_format: str, data: bytes) -> tuple[np.ndarray, int]:
    if response_format == "pcm":
        return np.frombuffer(data, dtype="<i2").astype(np.float32) / 32767, RATE
    return sf.read(io.BytesIO(data), dtype="float32")


def sse_events(text: str) -> list[dict]:
    return [json.loads(line[5:]) for line in text.splitlines() if line.startswith("data:")]


def sse_audio(events: list[dict]) -> bytes:
    return b"".join(base64.b64decode(e["audio"]) for e in events if e["type"] == "speech.audio.delta")


def engine_pcm(engine, text: str, speaker: str, seed: int, max_frames: int) -> bytes:
    """The pcm bytes the engine gives alone for a speech request with these fields."""
    sampling = dataclasses.replace(engine.defaults, seed=seed)
    audio = engine.synthesize(text, Voice.preset(speaker), sampling=sampling, max_frames=max_frames)
    return to_pcm16(audio.samples)


def pcm_close(a: bytes, b: bytes) -> bool:
    """Equal 16-bit pcm, allowing one step of rounding."""
    x, y = np.frombuffer(a, "<i2").astype(np.int32), np.frombuffer(b, "<i2").astype(np.int32)
    return x.shape == y.shape and int(np.abs(x - y).max(initial=0)) <= 1
