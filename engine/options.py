"""The engine's switches, in one place: read once from the environment, overridable in code.

| option    | environment         | default | what it turns off                                              |
|-----------|---------------------|---------|----------------------------------------------------------------|
| `graphs`  | `ORATOR_EAGER=1`    | on      | CUDA graphs (every frame runs eagerly, e.g. to debug a kernel) |
| `compile` | `ORATOR_COMPILE=0`  | on      | ``torch.compile`` of what the graphs run                       |
| `triton`  | `ORATOR_TRITON=0`   | on      | the Triton kernels (their PyTorch references run instead)      |

Each only matters where it can apply: graphs and compilation on a CUDA GPU, Triton where it is installed. Nothing
else reads these variables. ``current()`` is what the engine uses: the environment's values, read at its first
call, then whatever ``configure`` set. ``Engine.from_pretrained(graphs=...)`` overrides ``graphs`` for one engine;
``compile`` and ``triton`` choose kernels inside shared modules, so they are process-wide: ``configure`` them
before loading an engine (a graph captured earlier keeps the kernels it was captured with).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Mapping
from dataclasses import dataclass, fields, replace

_OFF = ("0", "false", "no", "off")
_ON = ("1", "true", "yes", "on")


@dataclass(frozen=True, slots=True)
class Options:
    graphs: bool = True
    compile: bool = True
    triton: bool = True

    @classmethod
    def from_environment(cls, environ: Mapping[str, str] | None = None) -> Options:
        """The options that ``ORATOR_EAGER``, ``ORATOR_COMPILE`` and ``ORATOR_TRITON`` ask for (unset: defaults)."""
        env = os.environ if environ is None else environ
        return cls(graphs=env.get("ORATOR_EAGER", "").strip().lower() not in _ON,
                   compile=env.get("ORATOR_COMPILE", "").strip().lower() not in _OFF,
                   triton=env.get("ORATOR_TRITON", "").strip().lower() not in _OFF)


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
    names = {f.name for f in fields(Options)}
    unknown = sorted(set(changes) - names)
    if unknown:
        raise TypeError(f"unknown option(s) {', '.join(unknown)}; the options are {', '.join(sorted(names))}")
    for name, value in changes.items():
        if not isinstance(value, bool):
            raise TypeError(f"option {name} must be True or False, not {value!r}")
    with _lock:
        _current = replace(options or _current or Options.from_environment(), **changes)
        return _current
