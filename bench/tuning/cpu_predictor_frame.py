"""The code predictor's frame as one Numba call (``engine.core.cpu.numba_predictor``) against its 15 passes one call
each (``predict_codes_by_position`` over the same Numba steps): the engine's frames, both ways in one process,
alternating, default sampling, the same seed.

    taskset -c 0-7 python -m bench.tuning.cpu_predictor_frame --model DIR [--threads 8] [--frames 60] [--rounds 2]

Prints one JSON line: milliseconds a frame of generation (the first frame, which holds the prefill, left out) for
each round of each way, and whether both made the same codes.
"""

from __future__ import annotations

import argparse
import json
import time

import torch

from bench.common import DEFAULT_TEXT, device_name
from engine import Engine, Sampling, Voice
from engine.core.frames.eager import FrameGenerator
from engine.core.prompts import build_prompt


def frames(talker, prompt, n: int, fused: bool) -> tuple[float, torch.Tensor]:
    gen = FrameGenerator(talker, prompt, Sampling(min_frames=n + 1, seed=3), n, 1)
    if gen.fused is None:
        raise SystemExit("the frames do not run through the Numba steps here (int8 off, or Numba missing)")
    if not fused:
        gen.fused = None
    it = gen.frames()
    first = next(it)
    start = time.perf_counter()
    rest = list(it)
    return (time.perf_counter() - start) / len(rest) * 1e3, torch.stack([first, *rest])


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", required=True)
    ap.add_argument("--threads", type=int)
    ap.add_argument("--frames", type=int, default=60)
    ap.add_argument("--rounds", type=int, default=2)
    args = ap.parse_args(argv)
    if args.frames < 2:
        ap.error("--frames must be at least 2")
    eng = Engine.from_pretrained(args.model, device="cpu", dtype=torch.float32, cpu_int8=True)
    if args.threads:
        torch.set_num_threads(args.threads)
    talker = eng.model.talker
    prompt = build_prompt(talker, eng.config, eng.tokenizer, Voice.preset("vivian", "english"), DEFAULT_TEXT)
    report = {"device": device_name("cpu"), "threads": torch.get_num_threads(), "frames": args.frames,
              "fused_ms": [], "per_pass_ms": []}
    codes = {}
    with torch.inference_mode():
        frames(talker, prompt, 2, fused=True)  # compiles the kernels outside the timed rounds
        for round_ in range(args.rounds):
            for fused in (True, False) if round_ % 2 == 0 else (False, True):
                ms, codes[fused] = frames(talker, prompt, args.frames, fused)
                report["fused_ms" if fused else "per_pass_ms"].append(round(ms, 2))
    report["same_codes"] = torch.equal(codes[True], codes[False])
    print(json.dumps(report), flush=True)


if __name__ == "__main__":
    main()
