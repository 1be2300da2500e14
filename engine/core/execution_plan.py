"""The execution plan: what an engine runs on (device, precision, kernels, threads), chosen once at load and shown.

``Engine.from_pretrained`` resolves the precision asked for (``resolve_precision``: ``fast`` is int8 weights on a
CPU, with a bfloat16 codec decoder where the CPU multiplies bfloat16 natively, and the checkpoint's bfloat16 on a
GPU; ``exact`` is float32), loads the model, then reads what it will run (``of_engine``) into one frozen
``ExecutionPlan``: logged once at INFO in one line, kept as ``engine.core.execution_plan``, shown in the studio's
Settings and by ``python main.py info``, and the key of the segment cache and the benchmark results. A fallback (Numba
not usable, a compile that failed, float64 weights where int8 was asked) is part of the plan, named with its reason.

The one change while speaking is the cold-start bridge's (``engine.core.cpu.numba_cache.cold_start``): where the Numba
kernels are not compiled yet, the plan names them as its path and says in ``bridge`` that the segments speak on the int8
PyTorch steps until a warm-up process has compiled them; the switch happens at a segment boundary and is logged once.
``planned`` is the plan the options would choose on this machine before any model is loaded. The table of plans and the
switches that remain is docs/cpu.md.
"""

from __future__ import annotations

import logging
from dataclasses import asdict, dataclass, replace

import torch

from engine.core import options
from engine.core.cpu.numba_cache.folder import use_cache_folder
from engine.core.options import PRECISIONS

log = logging.getLogger(__name__)

__all__ = ["PRECISIONS", "ExecutionPlan", "cpu_features", "kernels_ready", "machine", "of_engine", "planned",
           "resolve_precision"]


@dataclass(frozen=True, slots=True)
class ExecutionPlan:
    device: str  # "cpu", "cuda:0"
    precision: str  # one of PRECISIONS
    # the frame steps: "numba-int8" (the Numba loops), "torch-int8", "float32", "cuda-graphs" or "cuda-eager"
    path: str
    weights: str  # the decoder layers' projections: "int8", "float32", "bfloat16", ...
    decoder: str  # the codec decoder's dtype
    kernels: tuple[str, ...] = ()  # the choices inside the path, each "what: how"
    threads: int = 1  # PyTorch's threads at load
    thread_counts: tuple[int, ...] = ()  # the counts measured against each other frame by frame; () none
    grow_chunks: bool = False  # a stream's chunks grow while ahead of real time (engine.core.chunk_sizes)
    cpu_features: tuple[str, ...] = ()  # the processor's features the plan relies on
    fallbacks: tuple[str, ...] = ()  # what was asked for and could not run here, and why
    bridge: str | None = None  # the cold-start bridge: what the segments speak on until the path is compiled
    model: str | None = None  # "0.6B CustomVoice"

    def as_dict(self) -> dict:
        return asdict(self)

    def summary(self) -> str:
        """One line: ``cpu fast numba-int8 (int8 weights, bfloat16 decoder, 1 or 2 threads as measured; ...)``."""
        counts = self.thread_counts or (self.threads,)
        threads = (" or ".join(map(str, counts)) + " threads as measured" if len(counts) > 1 else
                   f"{counts[0]} thread{'' if counts[0] == 1 else 's'}")
        parts = [f"{self.weights} weights", f"{self.decoder} decoder", threads, *self.kernels]
        if self.cpu_features:
            parts.append("relies on " + ", ".join(self.cpu_features))
        parts += [f"bridge: {self.bridge}"] if self.bridge else []
        parts += [f"fallback: {f}" for f in self.fallbacks]
        model = f"{self.model} " if self.model else ""
        return f"{model}on {self.device}, {self.precision}: {self.path} ({'; '.join(parts)})"

    def audio_key(self) -> dict:
        """What of the plan decides the audio it makes (the segment cache's key): other weights, decoder or steps
        round otherwise. Thread counts and chunk growth do not enter: they change the last bits at most."""
        return {"precision": self.precision, "path": self.path, "weights": self.weights, "decoder": self.decoder}


def resolve_precision(device: torch.device, precision: str | None, dtype: torch.dtype | None,
                      default: str | None = None) -> tuple[str, torch.dtype, tuple[str, ...]]:
    """(precision, the dtype of what stays float, fallbacks) for a load asking for ``precision`` (None: ``default``,
    else the ``precision`` option) and ``dtype``. On a GPU a dtype given decides the precision (float32 and float64
    are exact) and ``fast`` is the device's default (bfloat16); on a CPU ``fast`` is int8 weights beside float32,
    so a float64 or half ``dtype`` takes the exact plan, a fallback where ``fast`` was only the default. A precision
    asked for that the dtype contradicts is a ``ValueError``."""
    from engine.core.runtime import default_dtype

    if precision is not None and precision not in PRECISIONS:
        raise ValueError(f"precision must be one of {', '.join(PRECISIONS)}, not {precision!r}")
    chosen = precision or default or options.current().precision
    if device.type != "cpu":
        if dtype is None:
            return chosen, default_dtype(device) if chosen == "fast" else torch.float32, ()
        derived = "exact" if dtype in (torch.float32, torch.float64) else "fast"
        if precision is not None and precision != derived:
            raise ValueError(f"precision={precision!r} contradicts dtype {dtype}: give one of them")
        return derived, dtype, ()
    dtype = dtype or torch.float32
    if dtype == torch.float32 or chosen == "exact":
        return chosen, dtype, ()
    name = str(dtype).removeprefix("torch.")
    if precision is not None:
        raise ValueError(f"precision='fast' keeps float32 beside its int8 weights on a CPU, not {name}: "
                         "give precision='exact' with that dtype")
    return "exact", dtype, (f"{name} asked for: exact weights (int8 is kept beside float32 only)",)


def cpu_features() -> tuple[str, ...]:
    """The processor's features that a plan can rely on, as PyTorch sees them (``ATEN_CPU_CAPABILITY`` and
    ``ONEDNN_MAX_CPU_ISA`` hide some): its vector width, and VNNI, bfloat16 and AMX units."""
    from engine.core.runtime import AMX_PROBES, VNNI_PROBES, cpu_bf16_units, cpu_reports

    capability = torch.backends.cpu.get_cpu_capability().lower()
    found = [capability.replace("avx512", "avx-512")] if capability != "default" else []
    for name, probes in (("vnni", VNNI_PROBES), ("amx", AMX_PROBES)):
        if cpu_reports(*probes):
            found.append(name)
    if cpu_bf16_units():
        found.append("bf16")
    return tuple(found)


def machine() -> dict:
    """This machine as the plans see it: cores, the processor's features, PyTorch's version, GPUs, Numba."""
    from engine.core.runtime import available_cores

    gpus = [torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())] if torch.cuda.is_available() \
        else []
    use_cache_folder()  # before Numba's import: it reads its cache folder once
    try:
        import numba

        jit = numba.__version__
    except Exception as e:  # noqa: BLE001 - missing, or its LLVM does not load: the PyTorch steps run
        jit = f"not usable ({type(e).__name__})"
    return {"cores": available_cores(), "cpu_features": list(cpu_features()), "torch": torch.__version__,
            "gpus": gpus, "numba": jit}


def planned(device: str | torch.device | None = None, precision: str | None = None,
            dtype: torch.dtype | None = None) -> ExecutionPlan:
    """The plan an engine loaded now with these arguments would start from, before any model is read: the
    path the options and the machine choose (the Numba kernels' compile is not tried: ``of_engine`` says how it
    went), the bridge where they are not in the cache yet."""
    from engine.core.runtime import cpu_threads, fast_cpu_decoder_dtype

    device = torch.device(device or ("cuda" if torch.cuda.is_available() else "cpu"))
    precision, dtype, fallbacks = resolve_precision(device, precision, dtype)
    current = options.current()
    if device.type != "cpu":
        graphs = current.graphs
        return ExecutionPlan(str(device), precision, "cuda-graphs" if graphs else "cuda-eager", _name(dtype),
                             "float32", fallbacks=fallbacks if graphs else (*fallbacks, "graphs option off"))
    threads = cpu_threads(current.threads)
    counts = _governed(threads) if precision == "fast" and current.threads is None else ()
    if precision == "exact":
        return ExecutionPlan("cpu", precision, "float32", _name(dtype), _name(torch.float64 if dtype == torch.float64
                                                                         else torch.float32),
                             threads=threads, thread_counts=counts, grow_chunks=current.grow_chunks,
                             fallbacks=fallbacks)
    path, more, bridge = _fast_path(current)
    decoder = fast_cpu_decoder_dtype()
    kernels = (f"products: {'VNNI or 16-bit, measured at load' if _vnni_here() else '16-bit'}",) \
        if path.startswith("numba") else ()
    return ExecutionPlan("cpu", precision, path, "int8", _name(decoder), kernels=kernels,
                         threads=threads, thread_counts=counts, grow_chunks=current.grow_chunks,
                         cpu_features=_relied_on(path, decoder, ()), fallbacks=(*fallbacks, *more), bridge=bridge)


def of_engine(engine, before: ExecutionPlan) -> ExecutionPlan:
    """The plan of ``engine`` just loaded from ``before`` (``planned``'s): the steps it built and what they chose
    (the Numba kernels compiled or fallen back, the products measured at load), its threads. Builds the
    CPU streamer now: the choices are made once, at load."""
    from engine.core.config import model_title

    model = model_title(engine.model_type, engine.model_size)
    decoder = _name(next(engine.decoder.parameters()).dtype)
    if engine.device.type != "cpu":
        path = "cuda-graphs" if engine.use_graphs else "cuda-eager"
        return replace(before, device=str(engine.device), path=path, decoder=decoder, model=model)
    counts = tuple(c for c in engine.cpu_thread_counts if len(engine.cpu_thread_counts) > 1)
    engine._single_streamer()
    common = dict(model=model, decoder=decoder, threads=torch.get_num_threads(), thread_counts=counts,
                  grow_chunks=engine.grows_chunks)
    if not engine.cpu_int8:
        return replace(before, path="float32", weights=_name(engine.dtype), **common)
    fallbacks, kernels, bridge = list(before.fallbacks), [], before.bridge
    if before.bridge is not None and not _numba_now():
        # the bridge speaks on torch-int8 until these compile (engine.core.cpu.numba_cache.cold_start)
        path = before.path
    elif engine.cpu_numba_steps:
        bridge = None
        path = "numba-int8"
        talker, predictor = engine.cpu_vnni_products
        kernels.append(f"products: {_products(talker, predictor)}"
                       f"{' as measured at load' if _vnni_here() else ' (no VNNI here)'}")
    else:
        bridge = None
        path = "torch-int8"
        if before.path.startswith("numba"):
            fallbacks.append("the Numba steps did not compile here (the log says why): PyTorch's int8 steps")
    from engine.core.cpu.int8 import prefill_form

    # a stream's prompt goes through the Numba steps' kernel where they run; several prompts at once through PyTorch's
    kernels.append(f"prompt rows: numba, {prefill_form()} when batched" if path.startswith("numba")
                   else f"prompt rows: {prefill_form()}")
    decoder_dtype = next(engine.decoder.parameters()).dtype
    return replace(before, path=path, weights="int8", kernels=tuple(kernels), bridge=bridge,
                   fallbacks=tuple(dict.fromkeys(fallbacks)),
                   cpu_features=_relied_on(path, decoder_dtype, engine.cpu_vnni_products if path.startswith("numba")
                                           else ()), **common)


def _fast_path(current: options.Options) -> tuple[str, list[str], str | None]:
    """(path, fallbacks, bridge) of the fast CPU plan the options choose here, before a compile is tried."""
    if not current.cpu_numba:
        return "torch-int8", ["the cpu_numba option is off: PyTorch's int8 steps"], None
    from engine.core.cpu import numba_layer as jit

    if jit.numba is None:
        return "torch-int8", ["Numba is not usable here: PyTorch's int8 steps"], None
    return "numba-int8", [], _bridge_note(current)


def _bridge_note(current: options.Options) -> str | None:
    """The bridge a load would start now: where the warm-up is on and the kernels' marker is not in the cache."""
    from engine.core.cpu import numba_cache
    from engine.core.cpu import numba_layer as jit
    from engine.core.cpu.numba_cache import cold_start

    if not current.cpu_warmup or not jit.cacheable():
        return None
    bridge = cold_start.current()
    if bridge is not None and not bridge.numba_now:
        return BRIDGE
    folder = cold_start.MARKER_FOLDER or numba_cache.cache_folder()
    if folder is None or numba_cache.is_warm(folder, numba_cache.compiled_key()):
        return None
    return BRIDGE


BRIDGE = "torch-int8 until a warm-up process has compiled the path's kernels, then the path from a segment's start"


def kernels_ready() -> bool:
    """Whether the fast plan's Numba kernels are compiled already: their marker in the cache folder
    (``engine.core.cpu.numba_cache``), or the bridge of this process switched to them."""
    from engine.core.cpu import numba_cache
    from engine.core.cpu import numba_layer as jit
    from engine.core.cpu.numba_cache import cold_start

    if jit.numba is None:
        return False
    bridge = cold_start.current()
    if bridge is not None:
        return bridge.numba_now
    folder = cold_start.MARKER_FOLDER or numba_cache.cache_folder()
    key = numba_cache.compiled_key()
    return folder is not None and numba_cache.is_warm(folder, key)


def _numba_now() -> bool:
    from engine.core.cpu.numba_cache import cold_start

    return cold_start.numba_now()


def _governed(threads: int) -> tuple[int, ...]:
    """The thread counts the fast path measures against each other frame by frame (``engine.core.cpu.threads``)."""
    from engine.core.cpu.threads import ThreadGovernor

    governor = ThreadGovernor.for_this_machine()
    return tuple(governor.choices) if governor is not None else ()


def _vnni_here() -> bool:
    """Whether the Numba steps can take the VNNI products here (``engine.core.cpu.vnni.available``): the plan then
    measures them against the 16-bit ones at load (``engine.core.cpu.one_position_numba.vnni_faster``)."""
    from engine.core.cpu import vnni

    return vnni.available()


def _products(talker: bool, predictor: bool) -> str:
    if talker == predictor:
        return "VNNI" if talker else "16-bit"
    return f"talker {'VNNI' if talker else '16-bit'}, code predictor {'VNNI' if predictor else '16-bit'}"


def _relied_on(path: str, decoder: torch.dtype, vnni: tuple[bool, ...]) -> tuple[str, ...]:
    """The processor's features the fast plan's kernels use: AVX-512 vectors (the Numba steps are compiled for
    them where the processor has them), VNNI (the products, where measured faster; PyTorch's int8 products of
    the prompt rows), bfloat16 units (the decoder)."""
    have = cpu_features()
    used = []
    if path.startswith("numba") and "avx-512" in have:
        used.append("avx-512")
    if any(vnni) or ("vnni" in have and _integer_rows()):
        used.append("vnni")
    if decoder == torch.bfloat16:
        used += [f for f in ("bf16", "amx") if f in have]
    return tuple(used)


def _integer_rows() -> bool:
    from engine.core.cpu.int8 import prefill_form

    return prefill_form() == "integer"


def _name(dtype: torch.dtype) -> str:
    return str(dtype).removeprefix("torch.")
