"""Facts about the installed PyTorch and the device (version floor, default precision), host values
put on the device without waiting for it, cuDNN's autotuning for work of fixed shapes, and the heap settled
once a model is ready (``settle_heap``)."""

from __future__ import annotations

import contextlib
import ctypes
import functools
import gc
import os
import sys
from collections.abc import Iterator

import torch

from engine.errors import UnsupportedError

MIN_TORCH = (2, 5, 1)


def torch_version() -> tuple[int, int, int]:
    parts = torch.__version__.split("+")[0].split(".")
    nums = [int("".join(ch for ch in p if ch.isdigit()) or 0) for p in parts[:3]]
    return tuple(nums + [0] * (3 - len(nums)))  # type: ignore[return-value]


def check_torch() -> None:
    """Refuse PyTorch older than 2.5.1, where CUDA-graph capture of this engine fails."""
    if torch_version() < MIN_TORCH:
        raise UnsupportedError(
            f"PyTorch {torch.__version__} is too old: Orator needs 2.5.1 or newer. "
            "Upgrade with: pip install --upgrade 'torch>=2.5.1'"
        )


def default_dtype(device: torch.device) -> torch.dtype:
    """bf16 on GPUs that support it, fp16 on older GPUs, float32 on the CPU."""
    if device.type == "cuda":
        return torch.bfloat16 if torch.cuda.is_bf16_supported() else torch.float16
    return torch.float32


VNNI_PROBES = ("_is_vnni_supported", "_is_avx512_vnni_supported")  # PyTorch's probes of AVX512-VNNI or AVX-VNNI
AMX_PROBES = ("_is_amx_tile_supported",)


def cpu_reports(*probes: str) -> bool:
    """Whether any of PyTorch's CPU feature probes ``torch.cpu.<name>`` says yes (one this build lacks says no)."""
    try:
        return any(bool(getattr(torch.cpu, name, lambda: False)()) for name in probes)
    except RuntimeError:
        return False


@functools.cache
def cpu_bf16_units() -> bool:
    """Whether this CPU multiplies bfloat16 natively: AMX tiles (Intel Sapphire Rapids and later) or AVX512-BF16
    (AMD Zen 4 and later, Intel Cooper Lake). Its bfloat16 convolutions decode speech in about half of float32's
    time (docs/benchmarks.md#cpu-decoder); without them bfloat16 is emulated, slower than float32."""
    return cpu_reports(*AMX_PROBES, "_is_avx512_bf16_supported")


def cpu_dot_product_units() -> bool:
    """Whether this CPU has 8-bit dot products (AVX512-VNNI, AVX-VNNI or AMX)."""
    return cpu_reports(*VNNI_PROBES, *AMX_PROBES)


def fast_cpu_decoder_dtype() -> torch.dtype:
    """The codec decoder's precision on the fast CPU path: bfloat16 where the CPU multiplies it natively (the
    precision the official package decodes in with a bf16 model), else float32."""
    return torch.bfloat16 if cpu_bf16_units() else torch.float32


def available_cores() -> int:
    """The logical CPUs this process may run on (its affinity mask, e.g. under ``taskset``)."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # no affinity masks (macOS, Windows)
        return os.cpu_count() or 1


def cpu_threads(requested: int | None = None) -> int:
    """PyTorch's CPU threads for generation: ``requested`` (the ``threads`` option) or, by default, the cores
    this process may use less one, kept free for the audio callback and the window, so that a frame's many small
    parallel operations do not wait on a thread the system has descheduled. The fast CPU path's frames then
    choose between this and all the cores by measuring (``engine.core.cpu.threads``)."""
    if requested is not None:
        return requested
    return max(1, available_cores() - 1)


def use_cpu_threads(requested: int | None = None) -> int:
    """Set PyTorch's intra-op threads to ``cpu_threads(requested)``; returns the number."""
    n = cpu_threads(requested)
    if torch.get_num_threads() != n:
        torch.set_num_threads(n)
    return n


def deterministic_cublas() -> None:
    """Make cuBLAS pick only run-to-run deterministic GEMM algorithms (a fixed workspace), since seeded sampling
    must repeat exactly. cuBLAS reads this when its first handle is made, so it is called before a CUDA engine's
    first product; a caller's own value wins."""
    os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")


def check_device(device: torch.device) -> None:
    """A clear error for a CUDA device this PyTorch cannot use (a CPU-only build, or no GPU); on one it can use,
    cuBLAS set up for run-to-run deterministic products."""
    if device.type != "cuda":
        return
    deterministic_cublas()
    if not torch.cuda.is_available():
        built = "was built without CUDA" if torch.version.cuda is None else "sees no CUDA GPU"
        raise UnsupportedError(
            f"device 'cuda' was asked for, but this PyTorch ({torch.__version__}) {built}. "
            "Use device='cpu', or install a CUDA build of PyTorch 2.5.1 or newer."
        )


def check_memory(needed_bytes: int, device: torch.device, what: str, advice: str) -> None:
    """A clear error, before allocating, when ``what`` needs more GPU memory than is free (CUDA only)."""
    if device.type != "cuda":
        return
    free, _ = torch.cuda.mem_get_info(device)
    if needed_bytes > free:
        raise UnsupportedError(f"{what} needs {needed_bytes / 2**30:.1f} GiB of GPU memory, but only "
                               f"{free / 2**30:.1f} GiB is free. {advice}")


def on_device(values, device: torch.device, dtype: torch.dtype | None = torch.long) -> torch.Tensor:
    """``values`` (a list or array) as a tensor on ``device``, without waiting for the work queued there:
    on a GPU through pinned host memory, asynchronously (a plain copy from pageable memory waits for the
    stream, so a caller of the many-streams loop would wait for the frame steps queued on it)."""
    host = torch.as_tensor(values, dtype=dtype)
    if device.type != "cuda" or host.device.type != "cpu":  # nothing to stage (already on a device: copied there)
        return host.to(device)
    return host.pin_memory().to(device, non_blocking=True)


@contextlib.contextmanager
def autotuned_convolutions() -> Iterator[None]:
    """cuDNN times its algorithms for each new convolution shape met inside (``cudnn.benchmark``), then
    restores the setting. For work run at fixed shapes, such as a decode captured as a CUDA graph: left to
    its heuristics, cuDNN runs one of the decoder's dilated convolutions with a generic kernel several times
    slower than its siblings (docs/benchmarks.md#cudnn-autotune). Not for shapes that vary
    call to call, each of which would be timed anew. (``torch.backends.cudnn.flags`` would also reset the
    other cuDNN settings to its own defaults.)"""
    before = torch.backends.cudnn.benchmark
    torch.backends.cudnn.benchmark = True
    try:
        yield
    finally:
        torch.backends.cudnn.benchmark = before


# The young generation's threshold once the heap is settled: a collection every this many new container objects
# (net of those freed) instead of Python's 700: a burst of requests keeps its new objects alive while in flight, so
# each young collection walks them with the GIL held and delays the burst (docs/benchmarks.md#young-collection-every).
# Objects freed by their count (most of them) never wait for a collection.
YOUNG_COLLECTION_EVERY = 50_000


def settle_heap() -> None:
    """Collect garbage once, move every object left into the cyclic collector's permanent generation
    (``gc.freeze``), and collect young objects less often (``YOUNG_COLLECTION_EVERY``). For a process that has
    loaded its model and captured its graphs: its heap then holds hundreds of thousands of long-lived objects
    (modules, compiled kernels, torch.compile's traces), and a full collection, which Python starts on its own
    now and then, walks every one of them holding the GIL, so that every stream stalls meanwhile. Frozen, they are
    never walked again; what is made afterwards is still collected, in fewer, larger passes."""
    gc.collect()
    gc.freeze()
    young, *older = gc.get_threshold()
    gc.set_threshold(max(YOUNG_COLLECTION_EVERY, young), *older)


def release_free_memory() -> bool:
    """Give the system back the heap memory this process has freed but the C allocator still holds (glibc's
    ``malloc_trim``): loading a model frees hundreds of MB of checkpoint reads and conversions in pieces the
    allocator keeps for reuse, resident until then (docs/benchmarks.md#cpu-memory). False where the C library has
    no such call (not Linux's glibc)."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        trim = ctypes.CDLL(None).malloc_trim
    except (OSError, AttributeError):
        return False
    trim(0)
    return True
