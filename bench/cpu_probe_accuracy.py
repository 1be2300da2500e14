"""How well the Welcome dialog's speed probe predicts the real model (``python -m bench.cpu_probe_accuracy``).

The probe (``engine.core.cpu.speed_probe.measure_cpu_speed``) runs the engine's own frame loop on the 0.6B's shapes and
plan; this measures the real 0.6B (``DIR``: a full-size checkpoint, e.g. ``python -m engine.synthetic DIR --size 0.6b``)
on the plan the probe measured, back to back on the same machine, and prints both frame times and their ratio (the aim:
within a factor of 1.5). It asserts nothing: a figure of speed belongs here, not in the CI suite.
"""

from __future__ import annotations

import argparse
import json
import time

import torch

from engine import Engine, Sampling, Voice
from engine.core.cpu.speed_probe import measure_cpu_speed, use_pytorch_steps
from engine.core.frames.eager import FrameGenerator
from engine.core.prompts import build_prompt

TEXT = "The quick brown fox jumps over the lazy dog near the river bank."


def measure(model_dir: str, frames: int = 6) -> dict:
    probe = measure_cpu_speed("0.6b", frames=frames, threads=torch.get_num_threads())
    engine = Engine.from_pretrained(model_dir, device="cpu", precision="fast")
    talker = engine.model.talker
    if probe.plan.startswith("fast: torch-int8"):  # the steps a load speaks on before the Numba loops are compiled
        use_pytorch_steps(talker)
    prompt = build_prompt(talker, engine.config, engine.tokenizer, Voice.preset("ryan"), TEXT)
    with torch.inference_mode():
        steps = FrameGenerator(talker, prompt, Sampling(seed=1, min_frames=64), 64).frames()
        next(steps)
        start = time.perf_counter()
        for _ in zip(range(frames), steps, strict=False):
            pass
        real_ms = (time.perf_counter() - start) / frames * 1000
    return {"plan": probe.plan, "probe_ms": round(probe.frame_ms, 1), "real_ms": round(real_ms, 1),
            "ratio": round(probe.frame_ms / real_ms, 3)}


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", required=True, help="a full-size 0.6B checkpoint folder")
    ap.add_argument("--frames", type=int, default=6)
    args = ap.parse_args(argv)
    print(json.dumps(measure(args.model, args.frames)))


if __name__ == "__main__":
    main()
