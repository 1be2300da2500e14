"""Counter-based uniform noise for sampling: a splitmix64 hash of (seed, counter, token index).

Deterministic per stream whatever the batch, identical on every path, and free of generator state (so safe inside
captured graphs). ``engine.core.sampling`` draws with it in PyTorch; ``engine.core.gpu_kernels.sampler`` computes the
same hash in Triton from the same constants.
"""

from __future__ import annotations

import torch


def signed64(x: int) -> int:
    return x - (1 << 64) if x >= 1 << 63 else x


GOLDEN = signed64(0x9E3779B97F4A7C15)
M0 = signed64(0xD1B54A32D192ED03)
M1 = signed64(0xABC98388FB8FAC03)
M2 = signed64(0xBF58476D1CE4E5B9)
M3 = signed64(0x94D049BB133111EB)
LOW33, LOW34, LOW37 = (1 << 33) - 1, (1 << 34) - 1, (1 << 37) - 1


def uniform_noise(seeds: torch.Tensor, counter: torch.Tensor, vocab: int) -> torch.Tensor:
    """Counter-based uniform noise in (0, 1): [B, vocab] from per-row seeds [B] and counters [B].

    A splitmix64 hash of (seed, counter, token index): deterministic per stream whatever the batch,
    identical on the eager and graph paths, and free of generator state (so capture-safe).
    """
    idx = torch.arange(vocab, device=seeds.device, dtype=torch.int64)
    # the token index joins before the only multiplication by a 64-bit constant: compiled, a small index
    # is an int32 variable, and int32 x a 64-bit constant does not compile (the sum is int64)
    z = (seeds[:, None] * M0 + counter[:, None] * M1 + idx[None, :]) * GOLDEN
    z = (z ^ ((z >> 30) & LOW34)) * M2
    z = (z ^ ((z >> 27) & LOW37)) * M3
    z = z ^ ((z >> 31) & LOW33)
    # 23 bits: (2^23 - 0.5) / 2^23 is exact in float32, so the noise stays below 1 (24 bits rounded to 1.0,
    # and a filtered token's -inf plus the infinite Gumbel term of u = 1 made a NaN that argmax picked)
    return (((z >> 41) & 0x7FFFFF).float() + 0.5) / float(1 << 23)


