"""Where Orator's time goes on the GPU: per-frame graph replay, kernels per frame, and the pieces of
the time to first audio (prompt, prefill, first frame, first decode), each synchronised.

    python -m bench.tuning.profile_orator --model DIR [--frames 200]
"""

from __future__ import annotations

import argparse
import json
import time

import torch

from bench.common import DEFAULT_LANGUAGE, DEFAULT_SPEAKER, DEFAULT_TEXT
from engine import Engine, Sampling, Voice
from engine.core.frames.step import frame_step
from engine.core.prompts import build_prompt


def timed(fn, repeat: int = 1) -> float:
    """Milliseconds per call of ``fn`` (synchronised before and after)."""
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(repeat):
        fn()
    torch.cuda.synchronize()
    return (time.perf_counter() - t0) * 1000 / repeat


def kernels_per_frame(eng: Engine, streamer) -> int:
    """CUDA kernels one eager frame step launches (what the graph replays)."""
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
        with torch.inference_mode():
            frame_step(eng.model.talker, streamer.state)
        torch.cuda.synchronize()
    return sum(e.count for e in prof.key_averages() if e.device_type == torch.autograd.DeviceType.CUDA)


def replay_kernels(step, frames: int = 20, top: int = 30) -> dict:
    """Kernels inside ``frames`` graph replays: per frame, how many run and how long they take in all
    (the rest of the frame's wall time is launch gaps), and the costliest kernels by name."""
    step()
    torch.cuda.synchronize()
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
        for _ in range(frames):
            step()
        torch.cuda.synchronize()
    rows = [e for e in prof.key_averages() if e.device_type == torch.autograd.DeviceType.CUDA and e.count]
    rows.sort(key=lambda e: -e.self_device_time_total)
    return {
        "kernels_per_frame": sum(e.count for e in rows) / frames,
        "kernel_us_per_frame": sum(e.self_device_time_total for e in rows) / frames,
        "top": [{"name": e.key[:110], "per_frame": e.count / frames, "us_per_frame": e.self_device_time_total / frames}
                for e in rows[:top]],
    }


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", required=True)
    ap.add_argument("--frames", type=int, default=200)
    args = ap.parse_args(argv)
    eng = Engine.from_pretrained(args.model, device="cuda", dtype=torch.bfloat16)
    capture = eng.warmup((1, 4))
    streamer = eng._single_streamer()  # a profiler of the engine's internals
    voice = Voice.preset(DEFAULT_SPEAKER, DEFAULT_LANGUAGE)
    sampling = Sampling(min_frames=args.frames, seed=1)
    t = eng.model.talker
    report = {"capture_s": capture, "compiled": streamer.compiled}
    with torch.inference_mode():
        prompt = build_prompt(t, eng.config, eng.tokenizer, voice, DEFAULT_TEXT)
        report["prompt_positions"] = prompt.length
        report["prompt_ms"] = timed(lambda: build_prompt(t, eng.config, eng.tokenizer, voice, DEFAULT_TEXT), 20)
        report["prefill_graph_ms"] = timed(lambda: streamer.prefill(prompt.embeds), 20)
        report["prefill_full_ms"] = timed(
            lambda: streamer.state.prefill(t, 0, prompt, sampling, 1, streamer.prefill), 20)
        report["frame_replay_ms"] = timed(streamer.step, args.frames)
        for n in (1, 4):
            codes = streamer.state.codes[:, :n]
            report[f"decode_{n}_ms"] = timed(lambda n=n, codes=codes: streamer._decoders[n](codes), 20)
        report["begin_ms"] = timed(lambda: streamer.begin(None, (1, 4)), 20)
    report["eager_kernels_per_frame"] = kernels_per_frame(eng, streamer)
    report["replay"] = replay_kernels(streamer.step)
    for _ in range(3):
        t0 = time.perf_counter()
        stream = eng.stream(DEFAULT_TEXT, voice, chunk_frames=4, first_chunk_frames=1, sampling=sampling,
                            max_frames=args.frames)
        next(stream)
        report.setdefault("ttfa_ms", []).append((time.perf_counter() - t0) * 1000)
        stream.close()
    print(json.dumps(report, indent=1), flush=True)


if __name__ == "__main__":
    main()
