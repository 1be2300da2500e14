"""Sampling settings and on-device sampling for the talker (codebook 0) and the code predictor (1..15).

``Sampling`` is what callers pass; ``SamplerState`` holds the same settings as device tensors so a
captured CUDA graph can read them without re-capture. The samplers below never synchronise with
the host: greedy and stochastic rows are chosen with ``torch.where`` on device tensors.

On CUDA, ``sample`` runs as one Triton kernel (``engine.core.gpu_kernels.sampler``) when Triton is installed and
``ORATOR_TRITON`` is not 0; the PyTorch code here is the reference it is tested against, and what
every other device runs.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from engine.core.gpu_kernels import runs_on, triton_available
from engine.core.noise import uniform_noise
from engine.core.runtime import on_device
from engine.errors import SamplingError

# The accepted ranges, inclusive except the low end of those in OPEN_BELOW. Values outside them make no sense for
# sampling, and a non-finite or huge one would overflow a device tensor or the sampler's arithmetic for every
# stream in a batch.
FLOAT_RANGES = {"temperature": (1e-3, 100.0), "sub_temperature": (1e-3, 100.0), "top_p": (0.0, 1.0),
                "sub_top_p": (0.0, 1.0), "repetition_penalty": (1e-2, 100.0)}
OPEN_BELOW = frozenset({"top_p", "sub_top_p"})  # a nucleus of probability mass 0 would keep no token
INT_RANGES = {"top_k": (0, 1 << 20), "sub_top_k": (0, 1 << 20), "min_frames": (0, 4096)}
MAX_SEED = 1 << 62  # seeds are int64 on the device, and a stream's segments add their index to its seed


def _check_float(name: str, value, low: float, high: float) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise SamplingError(name, f"must be a number, not {type(value).__name__}")
    open_below = name in OPEN_BELOW
    if not math.isfinite(value) or not low <= value <= high or (open_below and value <= low):
        interval = f"{'(' if open_below else '['}{low:g}, {high:g}]"
        raise SamplingError(name, f"must be within {interval}, got {value!r}")


def _check_int(name: str, value, low: int, high: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int):
        raise SamplingError(name, f"must be an integer, not {type(value).__name__}")
    if not low <= value <= high:
        raise SamplingError(name, f"must be within [{low}, {high}], got {value}")


@dataclass(frozen=True, slots=True)
class Sampling:
    """Generation settings. Defaults are the official ``generation_config.json`` values.

    ``greedy`` switches both stages to argmax unless ``sub_greedy`` says otherwise for the code
    predictor. ``seed`` makes a stochastic run reproducible. Values outside ``FLOAT_RANGES``, ``INT_RANGES``
    or ``[0, MAX_SEED)`` raise ``SamplingError``.
    """

    greedy: bool = False
    temperature: float = 0.9
    top_k: int = 50
    top_p: float = 1.0
    repetition_penalty: float = 1.05
    sub_greedy: bool | None = None
    sub_temperature: float = 0.9
    sub_top_k: int = 50
    sub_top_p: float = 1.0
    min_frames: int = 2
    seed: int | None = None

    def __post_init__(self):
        for name in ("greedy", "sub_greedy"):
            value = getattr(self, name)
            if not (isinstance(value, bool) or (name == "sub_greedy" and value is None)):
                raise SamplingError(name, "must be true or false")
        for name, (low, high) in FLOAT_RANGES.items():
            _check_float(name, getattr(self, name), low, high)
        for name, (low, high) in INT_RANGES.items():
            _check_int(name, getattr(self, name), low, high)
        if self.seed is not None:
            _check_int("seed", self.seed, 0, MAX_SEED - 1)

    @property
    def predictor_greedy(self) -> bool:
        return self.greedy if self.sub_greedy is None else self.sub_greedy


@dataclass(slots=True)
class StageSettings:
    """One stage's settings as device tensors of shape [B] (one row per stream)."""

    greedy: torch.Tensor  # [B] bool
    temperature: torch.Tensor  # [B] float32
    top_k: torch.Tensor  # [B] int64, 0 = off
    top_p: torch.Tensor  # [B] float32

    @classmethod
    def allocate(cls, batch: int, device) -> StageSettings:
        return cls(
            greedy=torch.zeros(batch, dtype=torch.bool, device=device),
            temperature=torch.ones(batch, dtype=torch.float32, device=device),
            top_k=torch.zeros(batch, dtype=torch.int64, device=device),
            top_p=torch.ones(batch, dtype=torch.float32, device=device),
        )

    def first_rows(self, n: int) -> StageSettings:
        """Rows [0, n) over the same memory."""
        return StageSettings(self.greedy[:n], self.temperature[:n], self.top_k[:n], self.top_p[:n])

    def set_row(self, row: int, greedy: bool, temperature: float, top_k: int, top_p: float) -> None:
        self.greedy[row] = greedy
        self.temperature[row] = temperature
        self.top_k[row] = top_k
        self.top_p[row] = top_p

    def set_rows(self, rows: torch.Tensor, greedy: list, temperature: list, top_k: list, top_p: list) -> None:
        """``set_row`` for every row in ``rows`` (int64 indices) at once, values listed in that order."""
        for field, values in ((self.greedy, greedy), (self.temperature, temperature), (self.top_k, top_k),
                              (self.top_p, top_p)):
            put_rows(field, rows, values)


def put_rows(field: torch.Tensor, rows: torch.Tensor, values: list) -> None:
    """``field[rows] = values`` (one value per row): one host-to-device copy, which does not wait for the
    device, and one indexed write."""
    field.index_copy_(0, rows, on_device(values, field.device, field.dtype))


def filter_logits(logits: torch.Tensor, s: StageSettings) -> torch.Tensor:
    """Temperature, top-k and top-p as in transformers' warpers, per row. logits: [B, V] float32."""
    values, order = _filtered_sorted(logits, s)
    return torch.empty_like(values).scatter_(-1, order, values)


def _filtered_sorted(logits: torch.Tensor, s: StageSettings) -> tuple[torch.Tensor, torch.Tensor]:
    """One descending sort serves top-k and top-p: (filtered values, token ids) in sorted order.

    The sort is stable and top-k keeps every token tied with the k-th (as transformers does), so
    the result is deterministic even when low-precision logits tie."""
    vocab = logits.shape[-1]
    values, order = (logits / s.temperature[:, None]).sort(dim=-1, descending=True, stable=True)  # [B, V]
    rank = torch.arange(vocab, device=logits.device)
    k = torch.where(s.top_k > 0, s.top_k.clamp(max=vocab), torch.full_like(s.top_k, vocab))
    values = values.masked_fill(values < values.gather(-1, (k - 1)[:, None]), float("-inf"))
    # top-p: keep the head whose probability mass before each token is below p (at least one token)
    probs = values.softmax(dim=-1)
    mass_before = probs.cumsum(dim=-1) - probs
    drop = (mass_before >= s.top_p[:, None]) & (s.top_p < 1)[:, None] & (rank > 0)
    return values.masked_fill(drop, float("-inf")), order


def sample(logits: torch.Tensor, s: StageSettings, seeds: torch.Tensor, counter: torch.Tensor,
           noise: torch.Tensor | None = None) -> torch.Tensor:
    """Pick one id per row: argmax for greedy rows, a Gumbel-max draw otherwise. Returns [B] int64.

    ``counter`` [B] must differ for every draw of a stream (e.g. frame * 16 + codebook). ``noise``: the draw's
    ``uniform_noise(seeds, counter, V)`` [B, V] where the caller made several draws' at once. On CUDA this is
    one Triton kernel (see the module's docstring); elsewhere the reference below.
    """
    if logits.is_cuda and triton_available() and logits.shape[-1] <= 4096 and runs_on(logits.device):
        from engine.core.gpu_kernels.sampler import sample_triton

        return sample_triton(logits, s, seeds, counter)
    if logits.shape[0] == 1 and not logits.is_cuda and not torch.compiler.is_compiling():
        return _sample_one_row(logits, s, seeds, counter, noise)
    return sample_reference(logits, s, seeds, counter, noise)


def gumbel(noise: torch.Tensor) -> torch.Tensor:
    """The Gumbel terms of a draw from its uniform noise: the draw is the argmax of the filtered logits minus them."""
    return torch.log(-torch.log(noise))


def draws_without_sort(s: StageSettings, vocab: int) -> bool:
    """Whether row 0's draw is one ``_sample_one_row`` makes without a sort: greedy, or top-k (0 < k < vocab)
    without top-p."""
    return bool(s.greedy[0]) or (0 < int(s.top_k[0]) < vocab and float(s.top_p[0]) >= 1)


def _sample_one_row(logits: torch.Tensor, s: StageSettings, seeds: torch.Tensor, counter: torch.Tensor,
                    noise: torch.Tensor | None) -> torch.Tensor:
    """``sample_reference`` for one row on the host, where its settings can be read: a greedy row is an argmax, and
    a top-k draw without top-p needs no sort. The tokens kept are those at least the k-th largest value (ties
    included, as the sorted path keeps them), and the Gumbel-max draw over them is the same argmax over each
    token's own noise in token order instead of sorted order: the same pick unless two perturbed values are
    exactly equal. The whole-vocabulary stable sorts this avoids, 16 a frame, are the sampling's share of a CPU frame
    (docs/benchmarks.md#cpu-frame); anything else takes the reference."""
    vocab = logits.shape[-1]
    if bool(s.greedy[0]):
        return logits.argmax(dim=-1)
    if not draws_without_sort(s, vocab):
        return sample_reference(logits, s, seeds, counter, noise)
    top_k = int(s.top_k[0])
    scaled = logits.float() / s.temperature[:, None]
    kth = scaled.topk(top_k, dim=-1).values[:, -1:]
    if noise is None:
        noise = uniform_noise(seeds, counter, vocab)
    perturbed = (scaled - gumbel(noise)).masked_fill_(scaled < kth, float("-inf"))
    return perturbed.argmax(dim=-1)


def sample_reference(logits: torch.Tensor, s: StageSettings, seeds: torch.Tensor,
                     counter: torch.Tensor, noise: torch.Tensor | None = None) -> torch.Tensor:
    """``sample`` in PyTorch: one stable sort per row serves top-k and top-p, then a Gumbel-max draw."""
    greedy_ids = logits.argmax(dim=-1)
    values, order = _filtered_sorted(logits.float(), s)
    if noise is None:
        noise = uniform_noise(seeds, counter, logits.shape[-1])
    noise = noise.gather(-1, order)  # each token keeps its own noise
    pick = (values - gumbel(noise)).argmax(dim=-1, keepdim=True)
    drawn = order.gather(-1, pick)[:, 0]
    return torch.where(s.greedy, greedy_ids, drawn)
