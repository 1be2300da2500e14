"""Benchmark of faster-qwen3-tts 0.5.4 (torch backend, CUDA graphs) on a CustomVoice checkpoint.

``python -m bench.run_faster --model DIR --frames N --runs R [--text ...] [--out results.jsonl]``

Loads ``FasterQwen3TTS`` (bf16, SDPA, its default static cache of 2048 positions) and times its
public calls: ``generate_custom_voice`` end to end (×RT) and ``generate_custom_voice_streaming``
until its first chunk of 1, 2, 4 or 8 frames comes back decoded to audio (time to first audio;
the package decodes each chunk and hands back a host array, so the chunk is synchronised). Its
own ``max_new_tokens`` and ``min_new_tokens`` are both set to N, which suppresses EOS for every
frame and stops after exactly N. ms per frame comes from timing its code-generation function
(``faster_qwen3_tts.generate.fast_generate``: prefill and frames), wrapped while the module runs.
Warm-up is the first call, which captures both CUDA graphs. The torch backend needs CUDA.
"""

from __future__ import annotations

import contextlib
import importlib
from collections.abc import Iterator, Sequence

import torch

from bench.common import (
    DEFAULT_LANGUAGE,
    DEFAULT_SPEAKER,
    FIRST_CHUNK_SIZES,
    Result,
    Stopwatch,
    median,
    real_time_factor,
    reset_peak_memory,
    run_cli,
    summarize,
)
from engine.core.chunks import SAMPLES_PER_FRAME

SYSTEM = "faster-qwen3-tts 0.5.4"
WARMUP_FRAMES = 16


def load_faster(model_dir: str, device: str):
    """``FasterQwen3TTS`` (torch backend) on a CUDA ``device``; graphs are captured on first use."""
    if torch.device(device).type != "cuda":
        raise SystemExit("faster-qwen3-tts's torch backend needs a CUDA device")
    from faster_qwen3_tts import FasterQwen3TTS

    return FasterQwen3TTS.from_pretrained(str(model_dir), device=device, dtype=torch.bfloat16,
                                          attn_implementation="sdpa")


class TimedCodeGeneration:
    """Stands in for ``fast_generate``: records each call's synchronised wall time and frame count."""

    def __init__(self, fast_generate, device: str):
        self.wrapped = fast_generate
        self._device = device
        self.seconds: list[float] = []
        self.frames: list[int] = []
        self.reported_ms_per_step: list[float] = []

    def __call__(self, *args, **kwargs):
        with Stopwatch(self._device) as watch:
            codes, timing = self.wrapped(*args, **kwargs)  # codes: [T, 16] or None
        self.seconds.append(watch.seconds)
        self.frames.append(0 if codes is None else int(codes.shape[0]))
        self.reported_ms_per_step.append(float(timing["ms_per_step"]))
        return codes, timing


@contextlib.contextmanager
def timed_code_generation(device: str) -> Iterator[TimedCodeGeneration]:
    """Within the block, every non-streaming generation of faster-qwen3-tts is timed."""
    module = importlib.import_module("faster_qwen3_tts.generate")
    timed = TimedCodeGeneration(module.fast_generate, device)
    module.fast_generate = timed
    try:
        yield timed
    finally:
        module.fast_generate = timed.wrapped


def synthesize(tts, text: str, n_frames: int) -> tuple[list, int]:
    """Non-streaming synthesis of exactly ``n_frames`` frames: (wavs, sample rate)."""
    return tts.generate_custom_voice(text, speaker=DEFAULT_SPEAKER, language=DEFAULT_LANGUAGE,
                                     max_new_tokens=n_frames, min_new_tokens=n_frames)


def first_chunk(tts, text: str, n_frames: int, chunk_size: int):
    """The first audio chunk of a streaming synthesis of ``n_frames`` frames; the stream is then closed."""
    stream = tts.generate_custom_voice_streaming(text, speaker=DEFAULT_SPEAKER, language=DEFAULT_LANGUAGE,
                                                 max_new_tokens=n_frames, min_new_tokens=n_frames,
                                                 chunk_size=chunk_size)
    try:
        audio, _, _ = next(stream)
    finally:
        stream.close()
    return audio


def run(model_dir: str, frames: int, runs: int, text: str, device: str = "cuda",
        chunk_sizes: Sequence[int] = FIRST_CHUNK_SIZES) -> list[Result]:
    reset_peak_memory(device)
    with Stopwatch(device) as load:
        tts = load_faster(model_dir, device)
    raw: dict[str, list[float]] = {"ms_per_frame": [], "xrt": [], "reported_ms_per_step": []}
    raw.update({f"ttfa_ms_{c}": [] for c in chunk_sizes})
    with timed_code_generation(device) as timed:
        with Stopwatch(device) as warmup:
            synthesize(tts, text, min(frames, WARMUP_FRAMES))
        for c in chunk_sizes:
            first_chunk(tts, text, frames, c)
        for _ in range(runs):
            with Stopwatch(device) as total:
                wavs, _ = synthesize(tts, text, frames)
            produced = len(wavs[0]) // SAMPLES_PER_FRAME
            if timed.frames[-1] != frames or produced != frames:
                raise RuntimeError(f"faster-qwen3-tts produced {timed.frames[-1]} frames ({produced} decoded), "
                                   f"not the {frames} forced")
            raw["ms_per_frame"].append(timed.seconds[-1] * 1000 / frames)
            raw["reported_ms_per_step"].append(timed.reported_ms_per_step[-1])
            raw["xrt"].append(real_time_factor(frames, total.seconds))
            for c in chunk_sizes:
                with Stopwatch(device) as ttfa:
                    audio = first_chunk(tts, text, frames, c)
                if len(audio) != c * SAMPLES_PER_FRAME:
                    raise RuntimeError(f"first chunk of {c} frames decoded to {len(audio)} samples")
                raw[f"ttfa_ms_{c}"].append(ttfa.ms)
    return [summarize(SYSTEM, model_dir, "CUDA graphs (torch backend)", frames, raw, chunk_sizes, device,
                      warmup.seconds, load.seconds,
                      f"own decode-only ms/step {median(raw['reported_ms_per_step']):.2f}")]


def main(argv: Sequence[str] | None = None) -> None:
    run_cli(run, __doc__.splitlines()[0], argv)


if __name__ == "__main__":
    main()
