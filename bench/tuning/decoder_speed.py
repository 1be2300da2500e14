"""How fast the codec decoder turns frames into audio on its own: the captured ``decode_chunk`` of n frames for
every row of a batch (``DecodeGraph``, as the many-streams loop replays it), in float32 (the engine's default
decoder) and bfloat16 (``decoder_dtype=torch.bfloat16``; what the official package decodes in when its model is
loaded in bf16), each call
synchronised. Prints one JSON line per (dtype, rows, frames): ms per call and the audio-seconds per second
the decoder alone could keep up with.

    python -m bench.tuning.decoder_speed --model DIR [--rows 1 8 64 128] [--frames 1 4] [--dtypes float32 bfloat16]

Run it with ``ORATOR_TRITON=0`` as well to see what the one-pass SnakeBeta kernel saves.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import torch

from bench.common import audio_seconds, device_name
from engine.core.checkpoint import resolve_model_dir
from engine.core.codec.decoder import SpeechDecoder
from engine.core.frames.graphs.decode import DecodeGraph
from engine.core.gpu_kernels import triton_available


def time_decode(decoder: SpeechDecoder, rows: int, frames: int, device: torch.device, repeats: int = 20) -> float:
    """Median milliseconds of one call decoding ``frames`` frames of ``rows`` streams (a graph replay on CUDA
    unless ``ORATOR_EAGER`` is set, eager elsewhere)."""
    state = decoder.new_state(rows, device)
    graph = DecodeGraph(decoder, state, frames, device, None, None)
    codes = torch.randint(0, decoder.cfg.codebook_size, (rows, frames, decoder.cfg.num_quantizers), device=device)
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        graph(codes)
        if device.type == "cuda":
            torch.cuda.synchronize(device)
        times.append((time.perf_counter() - start) * 1000)
    return sorted(times)[len(times) // 2]


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", required=True, help="a model directory (its speech_tokenizer/ is loaded)")
    ap.add_argument("--rows", type=int, nargs="+", default=[1, 8, 64, 128])
    ap.add_argument("--frames", type=int, nargs="+", default=[1, 4])
    ap.add_argument("--dtypes", nargs="+", default=["float32", "bfloat16"])
    ap.add_argument("--device", default="cuda")
    args = ap.parse_args(argv)
    device = torch.device(args.device)
    directory = Path(resolve_model_dir(args.model)) / "speech_tokenizer"
    triton = triton_available()
    for dtype_name in args.dtypes:
        decoder = SpeechDecoder.from_dir(directory, device=device, dtype=getattr(torch, dtype_name))
        for rows in args.rows:
            for frames in args.frames:
                ms = time_decode(decoder, rows, frames, device)
                print(json.dumps({"device": device_name(device), "dtype": dtype_name, "triton": triton, "rows": rows,
                                  "frames": frames, "ms": round(ms, 3),
                                  "audio_s_per_s": round(rows * audio_seconds(frames) / (ms / 1000), 1)}),
                      flush=True)
        del decoder
        if device.type == "cuda":
            torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
