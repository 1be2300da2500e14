"""A small stand-in for ``engine.Engine`` that follows its streaming contract without a model.

Each segment is a tone whose pitch depends on the segment's spoken text (pronunciation rules applied) and whose
length is ``frames_per_char`` frames per character, so the expected audio of any text is known exactly.
``frame_delay_s`` makes generation slow enough to test cancelling and backpressure.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path

import numpy as np

from engine.core.chunks import SAMPLE_RATE, SAMPLES_PER_FRAME, Audio, Chunk
from engine.core.sampling import Sampling
from engine.core.text.segments import segments_of, split_segments
from engine.pronunciation import pronounce


def segment_tone(text: str, n_frames: int) -> np.ndarray:
    """The fake's audio for one segment: float32 [n_frames * 1920]."""
    frequency = 110.0 + sum(map(ord, text)) % 400
    t = np.arange(n_frames * SAMPLES_PER_FRAME) / SAMPLE_RATE
    return (0.3 * np.sin(2 * np.pi * frequency * t)).astype(np.float32)


class FakeEngine:
    sample_rate = SAMPLE_RATE
    model_size = "0b6"
    device = "cpu"
    use_graphs = False
    cpu_int8 = False
    dtype = "float32"
    speakers = ["aiden", "ryan", "vivian"]
    defaults = Sampling()
    model_dir = Path(__file__).parent / "no-model"  # holds no weights: the segment cache keys it by its name

    def __init__(self, model_type: str = "custom_voice", frames_per_char: float = 0.25,
                 frame_delay_s: float = 0.0):
        self.model_type = model_type
        self.frames_per_char = frames_per_char
        self.frame_delay_s = frame_delay_s
        self.frames_generated = 0
        self.stream_threads: list[int] = []
        self.prepared: list = []

    def segment_frames(self, text: str) -> int:
        return max(1, int(len(text) * self.frames_per_char))

    def expected_audio(self, text: str) -> np.ndarray:
        return np.concatenate([segment_tone(seg.text, self.segment_frames(seg.text))
                               for seg in split_segments(text)])

    def prepare_voice(self, voice):
        self.prepared.append(voice)
        return voice

    def stream(self, text, voice, chunk_frames=4, first_chunk_frames=1, sampling=None,
               cancel: threading.Event | None = None, max_frames=None, pronunciation=None):
        self.stream_threads.append(threading.get_ident())
        t0 = time.perf_counter()
        segments = pronounce(segments_of(text), pronunciation, voice.name)  # as the engine's plan does
        for index, seg in enumerate(segments):
            n_frames = self.segment_frames(seg.speech)
            if max_frames is not None:
                n_frames = min(n_frames, max_frames)
            audio = segment_tone(seg.speech, n_frames)
            first, size = 0, first_chunk_frames
            while first < n_frames:
                count = min(size, n_frames - first)
                for _ in range(count):
                    if cancel is not None and cancel.is_set():
                        return
                    time.sleep(self.frame_delay_s)
                    self.frames_generated += 1
                samples = audio[first * SAMPLES_PER_FRAME:(first + count) * SAMPLES_PER_FRAME]
                final = index == len(segments) - 1 and first + count == n_frames
                yield Chunk(samples, SAMPLE_RATE, first, count, index, (seg.start, seg.end),
                            time.perf_counter() - t0, final)
                first, size = first + count, chunk_frames

    def synthesize(self, text, voice, sampling=None, max_frames=None):
        samples = np.concatenate([c.samples for c in self.stream(text, voice, max_frames=max_frames)])
        return Audio(samples, SAMPLE_RATE, np.zeros((0, 16), dtype=np.int64))
