"""The engine's switches, in one place: read once from the environment, overridable in code.

| option    | environment         | default | what it turns off (or sets)                                    |
|-----------|---------------------|---------|----------------------------------------------------------------|
| `graphs`  | `ORATOR_EAGER=1`    | on      | CUDA graphs (every frame runs eagerly, e.g. to debug a kernel) |
| `compile` | `ORATOR_COMPILE=0`  | on      | ``torch.compile`` of what the graphs run                       |
| `triton`  | `ORATOR_TRITON=0`   | on      | the Triton kernels (their PyTorch references run instead)      |
| `precision` | `ORATOR_PRECISION=exact` | fast | float32 weights, not int8 on a CPU (bf16 on a GPU): docs/cpu.md |
| `cpu_numba` | `ORATOR_CPU_NUMBA=0` | on | the CPU steps compiled by Numba (``one_position_numba``)      |
| `cpu_warmup` | `ORATOR_CPU_WARMUP=0` | on | PyTorch's steps while a process compiles Numba's (``cold_start``) |
| `grow_chunks` | `ORATOR_GROW_CHUNKS=0` | on | a CPU stream's chunks growing while ahead (``core.chunk_sizes``) |
| `threads` | `ORATOR_THREADS=N`  | chosen  | PyTorch's CPU threads (``core.runtime.cpu_threads``)          |

Each only matters where it can apply: graphs and compilation on a CUDA GPU, Triton where it is installed, int8
weights, threads and the Numba steps on a CPU. Nothing else reads these variables, but for ``ORATOR_CPU_INT8=0``,
the old spelling of ``ORATOR_PRECISION=exact``; a removed switch still set (``RETIRED``) is ignored, logged once.
Whether the Numba steps' products go through AVX512-VNNI is the execution plan's choice, not a switch: measured at
load where the CPU has the instruction (``engine.core.cpu.one_position_numba``).
``current()`` is what the engine uses: the environment's values, read at its first call, then whatever ``configure``
set. ``Engine.from_pretrained`` takes ``graphs`` and ``precision`` for one engine; ``compile`` and
``triton`` choose kernels inside shared modules and ``threads`` sets PyTorch's process-wide thread pool, so they are
process-wide: ``configure`` them before loading an engine (a graph captured earlier keeps the kernels it was captured
with).
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Mapping
from dataclasses import dataclass, fields, replace

_OFF = ("0", "false", "no", "off")
MAX_THREADS = 1024
_ON = ("1", "true", "yes", "on")
PRECISIONS = ("fast", "exact")  # engine.core.execution_plan: int8 weights (bf16 on a GPU), or float32
LEGACY = {"cpu_int8": lambda on: {"precision": "fast" if on else "exact"}}  # old names ``configure`` still takes
# removed switches a user's environment may still set: ignored, each logged once with what decides instead
RETIRED = {"ORATOR_CPU_VNNI": "the execution plan chooses the products, measured at load (docs/cpu.md)"}

log = logging.getLogger(__name__)
_retired_logged: set[str] = set()


@dataclass(frozen=True, slots=True)
class Options:
    graphs: bool = True
    compile: bool = True
    triton: bool = True
    precision: str = "fast"  # one of PRECISIONS
    cpu_numba: bool = True
    cpu_warmup: bool = True
    grow_chunks: bool = True
    threads: int | None = None  # None: chosen from the cores this process may use

    def __post_init__(self):
        if self.precision not in PRECISIONS:
            raise ValueError(f"precision must be one of {', '.join(PRECISIONS)}, not {self.precision!r}")
        value = self.threads
        if value is not None and (isinstance(value, bool) or not isinstance(value, int)
                                  or not 1 <= value <= MAX_THREADS):
            raise ValueError(f"threads must be a whole number from 1 to {MAX_THREADS}, or None, not {value!r}")

    @classmethod
    def from_environment(cls, environ: Mapping[str, str] | None = None) -> Options:
        """The options that ``ORATOR_EAGER``, ``ORATOR_COMPILE`` and ``ORATOR_TRITON`` ask for (unset: defaults)."""
        env = os.environ if environ is None else environ
        for name in sorted(set(RETIRED) & set(env) - _retired_logged):
            _retired_logged.add(name)
            log.warning("%s is no longer read: %s", name, RETIRED[name])
        threads = env.get("ORATOR_THREADS", "").strip()
        if threads and not threads.isdigit():
            raise ValueError(f"ORATOR_THREADS must be a whole number of threads, not {threads!r}")
        precision = env.get("ORATOR_PRECISION", "").strip().lower()
        if not precision:  # the old switch: ORATOR_CPU_INT8=0 asked for the exact float32 path
            precision = "exact" if env.get("ORATOR_CPU_INT8", "").strip().lower() in _OFF else "fast"
        elif precision not in PRECISIONS:
            raise ValueError(f"ORATOR_PRECISION must be one of {', '.join(PRECISIONS)}, not {precision!r}")
        return cls(graphs=env.get("ORATOR_EAGER", "").strip().lower() not in _ON,
                   compile=env.get("ORATOR_COMPILE", "").strip().lower() not in _OFF,
                   triton=env.get("ORATOR_TRITON", "").strip().lower() not in _OFF,
                   precision=precision,
                   cpu_numba=env.get("ORATOR_CPU_NUMBA", "").strip().lower() not in _OFF,
                   cpu_warmup=env.get("ORATOR_CPU_WARMUP", "").strip().lower() not in _OFF,
                   grow_chunks=env.get("ORATOR_GROW_CHUNKS", "").strip().lower() not in _OFF,
                   threads=int(threads) if threads else None)


_current: Options | None = None
_lock = threading.Lock()


def current() -> Options:
    """The process's options: the environment's at the first call, or what ``configure`` set since."""
    global _current
    if _current is None:
        with _lock:
            if _current is None:
                _current = Options.from_environment()
    return _current


def configure(options: Options | None = None, **changes: bool) -> Options:
    """Set the process's options: ``options`` whole, and/or single fields (``configure(triton=False)``); returns
    them. ``configure(Options.from_environment())`` reads the environment again."""
    global _current
    for old in set(changes) & set(LEGACY):
        changes.update(LEGACY[old](changes.pop(old)))
    names = {f.name for f in fields(Options)}
    unknown = sorted(set(changes) - names)
    if unknown:
        raise TypeError(f"unknown option(s) {', '.join(unknown)}; the options are {', '.join(sorted(names))}")
    for name, value in changes.items():
        if name not in ("threads", "precision") and not isinstance(value, bool):
            raise TypeError(f"option {name} must be True or False, not {value!r}")
    with _lock:
        _current = replace(options or _current or Options.from_environment(), **changes)
        return _current
