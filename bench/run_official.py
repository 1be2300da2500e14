"""Benchmark of the official implementation (`qwen-tts-hf` 0.1.1.post1) on a CustomVoice checkpoint.

``python -m bench.run_official --model DIR --frames N --runs R [--text ...] [--out results.jsonl]``

Loads ``Qwen3TTSModel`` (bf16, SDPA) and times ``generate_custom_voice`` end to end. Every
utterance is forced to exactly N frames: the talker's ``generate`` is wrapped to raise
``min_new_tokens`` to ``max_new_tokens``, so EOS stays suppressed throughout, and
``max_new_tokens`` is N + 1 because the official loop returns one frame fewer than it samples
(its last token is never fed back). The same wrapper times the talker's generation (prefill and
frames), which gives ms per frame. The official package has no streaming: its time to first
audio is the whole utterance, generated and decoded, for every first-chunk size.
"""

from __future__ import annotations

import contextlib
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

SYSTEM = "official qwen-tts-hf 0.1.1.post1"
WARMUP_FRAMES = 16


def load_official(model_dir: str, device: str):
    """The official ``Qwen3TTSModel`` on ``device``: bf16 on CUDA, float32 on the CPU."""
    from tests.oracle import import_official  # the test oracle's accommodations: no torchaudio, newer RoPE configs

    Qwen3TTSModel = import_official().Qwen3TTSModel
    on_cuda = torch.device(device).type == "cuda"
    dtype = torch.bfloat16 if on_cuda else torch.float32
    # a device map needs accelerate; on the CPU, where the model loads anyway, it is left out
    placement = {"device_map": device} if on_cuda else {}
    return Qwen3TTSModel.from_pretrained(str(model_dir), dtype=dtype, attn_implementation="sdpa", **placement)


class ForcedLengthTalker:
    """Stands in for the talker's ``generate``: EOS suppressed for every token, each call timed."""

    def __init__(self, generate, device: str):
        self._generate = generate
        self._device = device
        self.seconds: list[float] = []

    def __call__(self, *args, **kwargs):
        kwargs["min_new_tokens"] = kwargs["max_new_tokens"]
        with Stopwatch(self._device) as watch:
            output = self._generate(*args, **kwargs)
        self.seconds.append(watch.seconds)
        return output


@contextlib.contextmanager
def forced_length(tts, device: str) -> Iterator[ForcedLengthTalker]:
    """Within the block, ``tts`` generates exactly ``max_new_tokens - 1`` frames per utterance."""
    talker = tts.model.talker
    forced = ForcedLengthTalker(talker.generate, device)
    talker.generate = forced
    try:
        yield forced
    finally:
        del talker.generate  # the instance attribute; the class method shows through again


def synthesize(tts, text: str, n_frames: int) -> tuple[list, int]:
    """Official non-streaming synthesis of ``text`` (wavs, sample rate); N frames under ``forced_length``."""
    return tts.generate_custom_voice(text, speaker=DEFAULT_SPEAKER, language=DEFAULT_LANGUAGE,
                                     max_new_tokens=n_frames + 1)


def run(model_dir: str, frames: int, runs: int, text: str, device: str = "cuda",
        chunk_sizes: Sequence[int] = FIRST_CHUNK_SIZES) -> list[Result]:
    reset_peak_memory(device)
    with Stopwatch(device) as load:
        tts = load_official(model_dir, device)
    raw: dict[str, list[float]] = {"ms_per_frame": [], "xrt": [], "total_ms": []}
    with forced_length(tts, device) as forced:
        with Stopwatch(device) as warmup:
            synthesize(tts, text, min(frames, WARMUP_FRAMES))
        for _ in range(runs):
            with Stopwatch(device) as total:
                wavs, _ = synthesize(tts, text, frames)
            produced = len(wavs[0]) // SAMPLES_PER_FRAME
            if produced != frames:
                raise RuntimeError(f"official produced {produced} frames, not the {frames} forced")
            raw["ms_per_frame"].append(forced.seconds[-1] * 1000 / frames)
            raw["xrt"].append(real_time_factor(frames, total.seconds))
            raw["total_ms"].append(total.ms)
    whole_utterance_ms = median(raw["total_ms"])
    return [summarize(SYSTEM, model_dir, "eager (HF generate)", frames, raw, chunk_sizes, device, warmup.seconds,
                      load.seconds, "no streaming: TTFA is the whole utterance generated and decoded",
                      ttfa_ms={c: whole_utterance_ms for c in chunk_sizes})]


def main(argv: Sequence[str] | None = None) -> None:
    run_cli(run, __doc__.splitlines()[0], argv)


if __name__ == "__main__":
    main()
