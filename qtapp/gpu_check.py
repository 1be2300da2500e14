"""What the installed PyTorch can do on this machine, and what to install when it falls short.

``torch_facts()`` reads the facts (version, the CUDA version torch was built for, whether a GPU is
usable, its name and compute capability, the GPU architectures the build contains);
``advise(facts)`` is pure and turns them into plain-language advice: ready on the GPU, running on
the CPU and how to get the GPU build, or too old to run at all. The settings and first-run dialogs
show it.
"""

from __future__ import annotations

from dataclasses import dataclass

from engine.core.runtime import MIN_TORCH

MIN_TORCH_TEXT = ".".join(map(str, MIN_TORCH))
BLACKWELL_MIN_CUDA = (12, 8)  # RTX 50-series / B200 (compute capability 10.x and 12.x) need CUDA 12.8+
INSTALL_CUDA = "pip install torch --index-url https://download.pytorch.org/whl/cu126"
INSTALL_CUDA_128 = "pip install torch --index-url https://download.pytorch.org/whl/cu128"
INSTALL_UPGRADE = f"pip install --upgrade 'torch>={MIN_TORCH_TEXT}'"


@dataclass(frozen=True)
class TorchFacts:
    version: str  # torch.__version__, e.g. "2.13.0+cpu"
    cuda_build: str | None  # torch.version.cuda: "12.8", or None for a CPU-only build
    cuda_available: bool
    gpu_name: str | None = None
    capability: tuple[int, int] | None = None  # (major, minor) of GPU 0
    arch_list: tuple[str, ...] = ()  # torch.cuda.get_arch_list(): "sm_90", "sm_120", ...


@dataclass(frozen=True)
class GpuAdvice:
    device: str  # "cuda" or "cpu": where the studio can run with this torch
    runnable: bool  # False: this torch cannot run the engine at all
    summary: str  # one line
    details: str  # what to do, in plain words ("" when nothing needs doing)
    command: str | None = None  # the install command to copy, if any

    def text(self) -> str:
        parts = [self.summary, self.details, self.command or ""]
        return "\n".join(p for p in parts if p)


def version_tuple(version: str) -> tuple[int, int, int]:
    """(2, 13, 0) from "2.13.0+cpu" or "2.5.1a0"."""
    numbers = []
    for part in version.split("+")[0].split(".")[:3]:
        digits = ""
        for ch in part:
            if not ch.isdigit():
                break
            digits += ch
        numbers.append(int(digits or 0))
    return tuple(numbers + [0] * (3 - len(numbers)))  # type: ignore[return-value]


def torch_facts() -> TorchFacts:
    """The facts of the torch imported in this process."""
    import torch

    available = bool(torch.cuda.is_available())
    name = capability = None
    arch: tuple[str, ...] = ()
    if available:
        name = torch.cuda.get_device_name(0)
        capability = tuple(torch.cuda.get_device_capability(0))
        arch = tuple(torch.cuda.get_arch_list())
    return TorchFacts(torch.__version__, torch.version.cuda, available, name, capability, arch)


def _needs_blackwell_build(facts: TorchFacts) -> bool:
    if facts.capability is None or facts.capability[0] < 10:
        return False
    if facts.arch_list and f"sm_{facts.capability[0]}{facts.capability[1]}" in facts.arch_list:
        return False
    return facts.cuda_build is None or version_tuple(facts.cuda_build)[:2] < BLACKWELL_MIN_CUDA


def advise(facts: TorchFacts) -> GpuAdvice:
    """Plain-language advice for ``facts`` (pure: no torch calls)."""
    if version_tuple(facts.version) < MIN_TORCH:
        return GpuAdvice("cpu", False, f"PyTorch {facts.version} is too old: Orator needs {MIN_TORCH_TEXT} or newer.",
                         "Upgrade PyTorch in Orator's environment, then restart Orator.", INSTALL_UPGRADE)
    if facts.cuda_build is None:
        return GpuAdvice("cpu", True, f"PyTorch {facts.version} has no CUDA support: Orator runs on the CPU.",
                         "That works, but slowly. With an NVIDIA GPU, install the CUDA build of PyTorch "
                         "(RTX 50-series and other Blackwell cards need the CUDA 12.8 build: use the "
                         f"cu128 address instead: {INSTALL_CUDA_128}).", INSTALL_CUDA)
    if not facts.cuda_available:
        return GpuAdvice("cpu", True, f"PyTorch {facts.version} (CUDA {facts.cuda_build}) finds no usable GPU: "
                                      "Orator runs on the CPU.",
                         "Check that an NVIDIA GPU is present and that its driver is installed and recent "
                         f"enough for CUDA {facts.cuda_build} (run nvidia-smi).")
    if _needs_blackwell_build(facts):
        major, minor = facts.capability  # type: ignore[misc]
        return GpuAdvice("cpu", True, f"{facts.gpu_name} (compute capability {major}.{minor}) needs PyTorch built "
                                      f"for CUDA 12.8 or newer; this one is built for CUDA {facts.cuda_build}.",
                         "Until then, set Device to “cpu” in Models & settings. Install the CUDA 12.8 build:",
                         INSTALL_CUDA_128)
    return GpuAdvice("cuda", True, f"GPU ready: {facts.gpu_name} with PyTorch {facts.version} "
                                   f"(CUDA {facts.cuda_build}).", "")


def gpu_advice() -> GpuAdvice:
    """Advice for this machine."""
    return advise(torch_facts())
