"""Where a CPU frame's time goes: the talker step, the 15 code-predictor steps and the codec decoder, timed apart
on the engine's CPU path (int8 or float32), with
PyTorch's op counts of one predictor pass.

    taskset -c 0-7 python -m bench.tuning.cpu_frame --model DIR [--threads 8] [--float32] [--table N]

Prints one JSON line: milliseconds of each part and the ops a predictor pass launches; with ``--table N``, the N
operations of a whole frame (talker step and predictor) with the most time of their own, each with its count.
"""

from __future__ import annotations

import argparse
import json
import time

import torch

from bench.common import device_name
from engine import Engine, Sampling, Voice
from engine.core.frames.codes import sample_code0
from engine.core.frames.eager import FrameGenerator
from engine.core.prompts import build_prompt

TEXT = "The quick brown fox jumps over the lazy dog near the river bank."


def timed(fn, repeats: int) -> float:
    fn()
    start = time.perf_counter()
    for _ in range(repeats):
        fn()
    return (time.perf_counter() - start) / repeats * 1e3


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", required=True)
    ap.add_argument("--threads", type=int)
    ap.add_argument("--float32", action="store_true", help="the exact float32 path instead of int8")
    ap.add_argument("--table", type=int, default=0, help="list the N costliest operations of a frame")
    args = ap.parse_args(argv)
    eng = Engine.from_pretrained(args.model, device="cpu", dtype=torch.float32, cpu_int8=not args.float32)
    if args.threads:
        torch.set_num_threads(args.threads)
    talker, voice = eng.model.talker, Voice.preset("vivian", "english")
    sampling = Sampling(min_frames=64, seed=1)
    prompt = build_prompt(talker, eng.config, eng.tokenizer, voice, TEXT)
    t0 = time.perf_counter()
    eng.warmup()
    gen = FrameGenerator(talker, prompt, sampling, 256, 1)
    report = {"device": device_name("cpu"), "path": "int8" if eng.cpu_int8 else "float32",
              "numba": eng.cpu_numba_steps, "warmup_s": time.perf_counter() - t0}
    with torch.inference_mode():
        length = prompt.length
        report["prefill_ms"] = timed(gen.prefill, 3)  # as the engine's frames prefill: the steps' kernel on Numba
        hidden = gen.prefill()
        frame, step = torch.zeros(1, dtype=torch.long), [0]

        def talker_step():  # as the engine's frames step: one position at a time on the fast path
            step[0] += 1
            if gen.talker_step is not None:
                return gen.talker_step(hidden, length + step[0])
            pos = torch.full((1, 1), length + step[0])
            return talker.model(hidden[:, None], pos, gen.cache, kv_len=length + step[0] + 1)

        def predictor():
            code0 = sample_code0(talker, hidden, frame, gen.processor, gen.talker_settings, gen.seeds)
            return gen._codes(hidden, code0, frame)

        report["talker_step_ms"] = timed(talker_step, 10)
        report["predictor_ms"] = timed(predictor, 10)
        with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
            predictor()
        events = prof.key_averages()
        report["predictor_ops"] = sum(e.count for e in events if not e.key.startswith(("aten::empty", "aten::view")))
        report["predictor_top"] = {e.key: round(e.self_cpu_time_total / 1e3, 2) for e in
                                   sorted(events, key=lambda e: -e.self_cpu_time_total)[:6]}
        if args.table:
            with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
                for _ in range(3):
                    talker_step()
                    predictor()
            events = sorted(prof.key_averages(), key=lambda e: -e.self_cpu_time_total)[: args.table]
            report["frame_table"] = [[e.key, e.count // 3, round(e.self_cpu_time_total / 3e3, 3)] for e in events]
        state = eng.decoder.new_state(1, torch.device("cpu"))
        codes = torch.zeros(1, 4, 16, dtype=torch.long)
        report["decode_4_frames_ms"] = timed(lambda: eng.decoder.decode_chunk(codes, state), 5)
    report["threads"] = torch.get_num_threads()
    print(json.dumps(report), flush=True)


if __name__ == "__main__":
    main()
