"""Orator on one checkpoint: the same figures as the other runners (see bench/common.py).

Frames are forced with ``Sampling(min_frames=N)`` (EOS blocked for the first N frames) and
``max_frames=N``. ms/frame times prefill plus N frame steps on the streamer, synchronised, with no
decoding; ×RT times a whole ``synthesize`` (25-frame chunks); TTFA times ``stream`` until its first chunk is on
the host. On the CPU path the raw values also hold ×RT of a whole ``stream`` as the studio reads aloud (a 1-frame
chunk, then 4-frame ones growing while ahead: ``xrt_streamed``) and with the chunks held at 4 (``xrt_streamed_4``).

A result is keyed on the engine's execution plan (``engine.core.execution_plan``: its ``mode`` column is the plan's
device, precision and path, its ``plan`` the whole plan), which ``--precision fast|exact`` and ``--option NAME=VALUE``
(an ``engine.core.options`` field, e.g. ``cpu_numba=0``) choose, rather than environment switches.
"""

from __future__ import annotations

import argparse
import functools
from collections.abc import Sequence

from bench.common import (
    DEFAULT_LANGUAGE,
    DEFAULT_SPEAKER,
    FIRST_CHUNK_SIZES,
    Result,
    Stopwatch,
    real_time_factor,
    reset_peak_memory,
    run_cli,
    summarize,
)
from engine import Engine, Sampling, Voice
from engine.core import options
from engine.core.options import PRECISIONS

SYSTEM = "Orator"


def forced(frames: int) -> Sampling:
    """The default sampling with EOS blocked for exactly ``frames`` frames."""
    return Sampling(min_frames=frames, seed=1234)


def generation_ms_per_frame(eng: Engine, text: str, voice: Voice, frames: int, device: str) -> float:
    """Prompt, prefill and ``frames`` frames, no decoding (``generate_codes``); ms per frame."""
    with Stopwatch(device) as sw:
        codes = eng.generate_codes(text, voice, forced(frames), max_frames=frames)
    if len(codes) != frames:
        raise RuntimeError(f"Orator produced {len(codes)} frames, not the {frames} forced")
    return sw.ms / frames


def first_chunk_ms(eng: Engine, text: str, voice: Voice, frames: int, c: int, device: str) -> float:
    with Stopwatch(device) as sw:
        stream = eng.stream(text, voice, chunk_frames=c, first_chunk_frames=c, sampling=forced(frames),
                            max_frames=frames)
        chunk = next(stream)
    stream.close()
    if chunk.n_frames != c:
        raise RuntimeError(f"first chunk has {chunk.n_frames} frames, not {c}")
    return sw.ms


def streamed_xrt(eng: Engine, text: str, voice: Voice, frames: int, device: str,
                 largest_chunk_frames: int | None = None) -> float:
    """×RT of a whole ``stream`` in the studio's chunk sizes (a 1-frame chunk, then 4-frame ones)."""
    with Stopwatch(device) as sw:
        made = sum(c.n_frames for c in eng.stream(text, voice, chunk_frames=4, first_chunk_frames=1,
                                                  sampling=forced(frames), max_frames=frames,
                                                  largest_chunk_frames=largest_chunk_frames))
    if made != frames:
        raise RuntimeError(f"Orator streamed {made} frames, not the {frames} forced")
    return real_time_factor(frames, sw.seconds)


def run(model_dir: str, frames: int, runs: int, text: str, device: str = "cuda",
        chunk_sizes: Sequence[int] = FIRST_CHUNK_SIZES, precision: str | None = None) -> list[Result]:
    reset_peak_memory(device)
    with Stopwatch(device) as load:
        eng = Engine.from_pretrained(model_dir, device=device, precision=precision)
    voice = Voice.preset(DEFAULT_SPEAKER, DEFAULT_LANGUAGE)
    with Stopwatch(device) as warmup:
        capture = eng.warmup(tuple(chunk_sizes))
        eng.synthesize(text, voice, forced(8), max_frames=8)
        for c in chunk_sizes:
            first_chunk_ms(eng, text, voice, frames, c, device)
    raw: dict[str, list[float]] = {"ms_per_frame": [], "xrt": []}
    raw.update({f"ttfa_ms_{c}": [] for c in chunk_sizes})
    if eng.grows_chunks:
        raw.update(xrt_streamed=[], xrt_streamed_4=[])
    for _ in range(runs):
        raw["ms_per_frame"].append(generation_ms_per_frame(eng, text, voice, frames, device))
        with Stopwatch(device) as total:
            audio = eng.synthesize(text, voice, forced(frames), max_frames=frames)
        if len(audio.codes) != frames:
            raise RuntimeError(f"Orator produced {len(audio.codes)} frames, not the {frames} forced")
        raw["xrt"].append(real_time_factor(frames, total.seconds))
        for c in chunk_sizes:
            raw[f"ttfa_ms_{c}"].append(first_chunk_ms(eng, text, voice, frames, c, device))
        if eng.grows_chunks:
            raw["xrt_streamed"].append(streamed_xrt(eng, text, voice, frames, device))
            raw["xrt_streamed_4"].append(streamed_xrt(eng, text, voice, frames, device, largest_chunk_frames=4))
    plan = eng.execution_plan
    return [summarize(SYSTEM, model_dir, f"{plan.device} {plan.precision}: {plan.path}", frames, raw, chunk_sizes,
                      device, warmup.seconds, load.seconds, f"graph capture {capture:.1f} s; {plan.summary()}",
                      plan=plan.as_dict())]


def option_value(text: str) -> tuple[str, bool | int | str]:
    """``NAME=VALUE`` of ``--option`` as an ``engine.core.options`` change: 0/1 (or off/on) for a switch, a whole number
    for a count, else the text."""
    name, sep, value = text.partition("=")
    if not sep or not name.strip():
        raise argparse.ArgumentTypeError(f"--option takes NAME=VALUE, not {text!r}")
    value = value.strip().lower()
    switch = {"0": False, "off": False, "false": False, "1": True, "on": True, "true": True}
    if value in switch and name.strip() != "threads":
        return name.strip(), switch[value]
    return name.strip(), int(value) if value.isdigit() else value


def plan_arguments(argv: Sequence[str] | None) -> tuple[argparse.Namespace, list[str]]:
    """(``--precision`` and ``--option`` parsed, the other arguments) of a command line."""
    ap = argparse.ArgumentParser(add_help=False)
    ap.add_argument("--precision", choices=PRECISIONS, help="the plan's precision (default: fast)")
    ap.add_argument("--option", type=option_value, action="append", default=[], metavar="NAME=VALUE",
                    help="an engine option for this run (engine.core.options), e.g. cpu_numba=0")
    return ap.parse_known_args(argv)


def main(argv: Sequence[str] | None = None) -> None:
    ours, rest = plan_arguments(argv)
    options.configure(**dict(ours.option))
    run_cli(functools.partial(run, precision=ours.precision), __doc__.splitlines()[0], rest)


if __name__ == "__main__":
    main()
