"""Shared pieces of the side-by-side benchmark: the result record, timing, JSON lines, the table.

Every system's runner (`run_official`, `run_faster`, `run_orator`) measures the same figures on the
same checkpoint, text and forced frame count, and returns `Result` records:

- ``ms_per_frame``: wall time of code generation (prefill and every frame, synchronised) divided
  by the frames generated; text tokenisation, prompt assembly and audio decoding excluded.
- ``xrt``: seconds of audio per second of wall time for the whole non-streaming synthesis
  (generation and decoding to audio); 12.5 frames make one second of audio.
- ``ttfa_ms[c]``: from the call until the first chunk of ``c`` frames is decoded to audio and
  synchronised. A system without streaming reports the whole utterance (see its ``notes``).
- ``peak_mem_gb``: ``torch.cuda.max_memory_allocated`` over the whole process (weights included),
  in GB (10^9 bytes); run each system in its own process for a clean figure.
- ``warmup_s``: warm-up (CUDA-graph capture, first calls) after loading; ``load_s``: loading.

Each figure is the median over the timed runs; the raw per-run values are kept in ``runs``.
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime
import json
import os
import platform
import statistics
import subprocess
import time
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

import torch

from engine.core.runtime import available_cores

FRAMES_PER_SECOND = 12.5
FIRST_CHUNK_SIZES = (1, 2, 4, 8)
DEFAULT_FRAMES = 250
DEFAULT_RUNS = 3
DEFAULT_SPEAKER = "vivian"
DEFAULT_LANGUAGE = "english"
DEFAULT_TEXT = (
    "The old lighthouse keeper climbed the spiral stairs every evening, counting each step aloud, "
    "and when the lamp finally caught, he watched its beam sweep across the restless grey water "
    "toward ships he would never meet."
)
MODEL_SIZE_LABELS = {"0b6": "0.6B", "1b7": "1.7B"}


@dataclasses.dataclass
class Result:
    """One system measured on one checkpoint; figures are medians, ``runs`` holds the raw values."""

    system: str
    model_size: str
    mode: str
    n_frames: int
    ms_per_frame: float | None = None
    xrt: float | None = None
    ttfa_ms: dict[int, float] = dataclasses.field(default_factory=dict)
    peak_mem_gb: float | None = None
    warmup_s: float | None = None
    load_s: float | None = None
    runs: dict[str, list[float]] = dataclasses.field(default_factory=dict)
    device: str = ""
    notes: str = ""
    plan: dict = dataclasses.field(default_factory=dict)  # the engine's execution plan, where the system has one

    def to_json(self) -> str:
        return json.dumps(dataclasses.asdict(self), sort_keys=True)

    @classmethod
    def from_json(cls, line: str) -> Result:
        fields = json.loads(line)
        fields["ttfa_ms"] = {int(k): v for k, v in fields.get("ttfa_ms", {}).items()}
        return cls(**fields)


def median(values: Sequence[float]) -> float:
    """The median of a non-empty sequence."""
    if not values:
        raise ValueError("median of no values")
    return statistics.median(values)


def audio_seconds(n_frames: int) -> float:
    """Seconds of audio that ``n_frames`` codec frames decode to."""
    return n_frames / FRAMES_PER_SECOND


def real_time_factor(n_frames: int, wall_seconds: float) -> float:
    """Seconds of audio made per second of wall time (×RT)."""
    return audio_seconds(n_frames) / wall_seconds


def model_size_label(model_dir: str | Path) -> str:
    """'0.6B' or '1.7B' from a model directory's ``config.json``."""
    config = json.loads((Path(model_dir) / "config.json").read_text(encoding="utf-8"))
    size = config.get("tts_model_size", "")
    return MODEL_SIZE_LABELS.get(size, size)


def synchronize(device: str | torch.device) -> None:
    """Wait for queued GPU work on ``device``; nothing to wait for on the CPU."""
    device = torch.device(device)
    if device.type == "cuda":
        torch.cuda.synchronize(device)


class Stopwatch:
    """Wall time of a ``with`` block, synchronising the device on entry and exit.

    Wall time (not CUDA events) is what a caller waits, host-side overhead included.
    """

    def __init__(self, device: str | torch.device = "cpu"):
        self.device = device
        self.seconds: float | None = None
        self._start = 0.0

    def __enter__(self) -> Stopwatch:
        synchronize(self.device)
        self._start = time.perf_counter()
        return self

    def __exit__(self, *exc) -> None:
        synchronize(self.device)
        self.seconds = time.perf_counter() - self._start

    @property
    def ms(self) -> float:
        return self.seconds * 1000.0


def reset_peak_memory(device: str | torch.device) -> None:
    device = torch.device(device)
    if device.type == "cuda":
        torch.cuda.reset_peak_memory_stats(device)


def peak_memory_gb(device: str | torch.device) -> float | None:
    """On a GPU, the peak memory allocated by torch on ``device`` since the last reset; on the CPU, the process's
    peak resident memory (each system runs in a process of its own); in GB."""
    device = torch.device(device)
    if device.type != "cuda":
        try:
            import resource
        except ImportError:  # Windows
            return None
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024 / 1e9  # Linux reports KiB
    return torch.cuda.max_memory_allocated(device) / 1e9


def device_name(device: str | torch.device) -> str:
    device = torch.device(device)
    if device.type == "cuda":
        return torch.cuda.get_device_name(device)
    return f"{cpu_model()}, {torch.get_num_threads()} threads on {available_cores()} cores"


def cpu_model() -> str:
    """The CPU's model name (``/proc/cpuinfo``), or what ``platform`` knows."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def environment(device: str | torch.device = "cuda") -> dict[str, str]:
    """Date, device, commit and library versions, for the record in docs/benchmarks.md."""
    import transformers

    commit = os.environ.get("ORATOR_COMMIT")  # where the checkout's .git is stale (the device machine)
    try:
        commit = commit or subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                                check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        commit = "unknown"
    return {
        "date": datetime.date.today().isoformat(),
        "device": device_name(device),
        "commit": commit,
        "python": platform.python_version(),
        "torch": torch.__version__,
        "cuda": torch.version.cuda or "none",
        "transformers": transformers.__version__,
    }


def summarize(system: str, model_dir: str | Path, mode: str, frames: int, raw: dict[str, list[float]],
              chunk_sizes: Sequence[int], device: str | torch.device, warmup_s: float, load_s: float, notes: str,
              ttfa_ms: dict[int, float] | None = None, plan: dict | None = None) -> Result:
    """The ``Result`` of one system's timed runs: medians of ``raw`` (kept whole under ``runs``)."""
    return Result(
        system=system, model_size=model_size_label(model_dir), mode=mode, n_frames=frames,
        ms_per_frame=median(raw["ms_per_frame"]), xrt=median(raw["xrt"]),
        ttfa_ms=ttfa_ms if ttfa_ms is not None else {c: median(raw[f"ttfa_ms_{c}"]) for c in chunk_sizes},
        peak_mem_gb=peak_memory_gb(device), warmup_s=warmup_s, load_s=load_s, runs=raw,
        device=device_name(device), notes=notes, plan=plan or {},
    )


def write_jsonl(results: Iterable[Result], path: str | Path) -> None:
    """Append results to a JSON-lines file, one record a line."""
    with open(path, "a", encoding="utf-8") as f:
        for result in results:
            f.write(result.to_json() + "\n")


def read_jsonl(path: str | Path) -> list[Result]:
    with open(path, encoding="utf-8") as f:
        return [Result.from_json(line) for line in f if line.strip()]


def format_table(results: Sequence[Result], chunk_sizes: Sequence[int] = FIRST_CHUNK_SIZES) -> str:
    """A markdown table of the median figures, one row a result."""
    header = (["system", "size", "mode", "frames", "ms/frame", "×RT"]
              + [f"TTFA@{c} ms" for c in chunk_sizes]
              + ["peak GB", "warm-up s", "load s", "notes"])
    rows = [header, ["---"] * len(header)]
    for r in results:
        rows.append([r.system, r.model_size, r.mode, str(r.n_frames), _fmt(r.ms_per_frame, 2), _fmt(r.xrt, 2)]
                    + [_fmt(r.ttfa_ms.get(c), 1) for c in chunk_sizes]
                    + [_fmt(r.peak_mem_gb, 2), _fmt(r.warmup_s, 1), _fmt(r.load_s, 1), r.notes])
    return "\n".join("| " + " | ".join(row) + " |" for row in rows)


def _fmt(value: float | None, digits: int) -> str:
    return "–" if value is None else f"{value:.{digits}f}"


RunFunction = Callable[..., list[Result]]


def build_arg_parser(description: str) -> argparse.ArgumentParser:
    """The command line every runner takes."""
    ap = argparse.ArgumentParser(description=description)
    ap.add_argument("--model", required=True, help="model directory in the official layout")
    ap.add_argument("--frames", type=int, default=DEFAULT_FRAMES, help="frames forced per utterance")
    ap.add_argument("--runs", type=int, default=DEFAULT_RUNS, help="timed runs; figures are medians")
    ap.add_argument("--text", default=DEFAULT_TEXT)
    ap.add_argument("--out", help="append results to this JSON-lines file")
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--chunks", type=int, nargs="+", default=list(FIRST_CHUNK_SIZES),
                    help="first-chunk sizes (frames) for time to first audio")
    return ap


def run_cli(run: RunFunction, description: str, argv: Sequence[str] | None = None) -> list[Result]:
    """Parse the command line, call ``run``, append to ``--out``, print the table."""
    args = build_arg_parser(description).parse_args(argv)
    if args.frames < max(args.chunks):
        raise SystemExit(f"--frames must be at least the largest first chunk ({max(args.chunks)})")
    results = run(args.model, args.frames, args.runs, args.text, device=args.device, chunk_sizes=args.chunks)
    if args.out:
        write_jsonl(results, args.out)
    print(format_table(results, args.chunks), flush=True)
    return results
