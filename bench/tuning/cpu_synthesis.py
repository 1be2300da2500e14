"""Where a whole CPU synthesis's wall time goes, on the engine's default CPU path as ``bench.run_orator`` times it
(``Engine.synthesize`` of forced frames, decoding included): the prompt, the prefill, code 0's draw, the code
predictor's noise and its Numba frame, the talker steps, the decoder's chunks, and what is left (Python between
them, and waits).

    taskset -c 0-7 python -m bench.tuning.cpu_synthesis --model DIR [--frames 40] [--runs 3]

Prints one JSON line a run: milliseconds of each part over the whole synthesis, the wall time and ×RT. Each part
is timed by wrapping the function that does it; every part runs on the synthesis's own thread.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import json
import time
from collections import defaultdict
from collections.abc import Iterator

import torch

from bench.common import DEFAULT_LANGUAGE, DEFAULT_SPEAKER, DEFAULT_TEXT, device_name, real_time_factor
from engine import Engine, Sampling, Voice
from engine.core import engine as engine_module
from engine.core.cpu import numba_predictor, one_position_numba
from engine.core.frames import eager

spent: dict[str, float] = defaultdict(float)


def timed(name: str, fn):
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        start = time.perf_counter()
        try:
            return fn(*args, **kwargs)
        finally:
            spent[name] += time.perf_counter() - start
    wrapper.timed_part = name
    return wrapper


def parts_of(eng: Engine) -> list[tuple[object, str, str]]:
    """(owner, attribute, part) of each function a part's time is counted in."""
    return [(engine_module, "build_prompt", "prompt"),
             (eager.FrameGenerator, "prefill", "prefill"),  # the prompt's rows; the steps after it go one at a time
             (eager, "sample_code0", "code0"),
             (numba_predictor, "predictor_draws", "noise"), (numba_predictor, "gumbel", "noise"),
             (numba_predictor, "_frame", "predictor_kernel"),
             (numba_predictor.NumbaPredictorFrame, "__call__", "predictor_call"),
             (one_position_numba.NumbaBoundStep, "__call__", "talker_step"),
             (eng.decoder, "decode_chunk", "decode")]


@contextlib.contextmanager
def instrumented(eng: Engine) -> Iterator[None]:
    """Each part's function wrapped while inside (after the warm-up, whose calls are not counted), put back after."""
    parts = parts_of(eng)
    originals = [(owner, name, owner.__dict__.get(name, None)) for owner, name, _ in parts]
    for owner, name, part in parts:
        setattr(owner, name, timed(part, getattr(owner, name)))
    try:
        yield
    finally:
        for owner, name, original in originals:
            if original is None:
                delattr(owner, name)  # an instance's wrapper over its class's method
            else:
                setattr(owner, name, original)


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", required=True)
    ap.add_argument("--frames", type=int, default=40)
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args(argv)
    eng = Engine.from_pretrained(args.model, device="cpu", dtype=torch.float32, cpu_int8=True)
    voice = Voice.preset(DEFAULT_SPEAKER, DEFAULT_LANGUAGE)
    sampling = Sampling(min_frames=args.frames, seed=1234)
    eng.warmup((25,))
    eng.synthesize(DEFAULT_TEXT, voice, sampling, max_frames=8)
    for run in range(args.runs):
        spent.clear()
        with instrumented(eng):
            start = time.perf_counter()
            audio = eng.synthesize(DEFAULT_TEXT, voice, sampling, max_frames=args.frames)
            wall = time.perf_counter() - start
        frames = len(audio.codes)
        parts = {k: round(v * 1e3, 1) for k, v in sorted(spent.items())}
        inner = ("noise", "predictor_kernel")  # inside predictor_call
        counted = sum(v for k, v in spent.items() if k not in inner)
        governor = getattr(eng._single_streamer(), "governor", None)
        print(json.dumps({"device": device_name("cpu"), "run": run, "frames": frames, "wall_ms": round(wall * 1e3, 1),
                          "xrt": round(real_time_factor(frames, wall), 3), "parts_ms": parts,
                          "other_ms": round((wall - counted) * 1e3, 1),
                          "per_frame_ms": {k: round(v * 1e3 / frames, 2) for k, v in sorted(spent.items())},
                          "threads": None if governor is None else {n: None if ms is None else round(ms, 1)
                                                                    for n, ms in governor.mean_ms.items()},
                          "vnni": list(eng.cpu_vnni_products)}), flush=True)


if __name__ == "__main__":
    main()
