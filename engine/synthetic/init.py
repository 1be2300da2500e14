"""Deterministic random initialisation of a module's tensors for synthetic checkpoints.

Each tensor draws from a generator seeded by (seed, tensor name), so a checkpoint's bytes depend
only on its seed and layout. Scales keep activations near unit size through the stack: norms near
one, embeddings unit normal, weights scaled by 1/sqrt(fan_in), small biases.
"""

from __future__ import annotations

import zlib

import torch
from torch import nn


@torch.no_grad()
def randomize_(module: nn.Module, seed: int) -> nn.Module:
    embeddings = {name for name, m in module.named_modules() if isinstance(m, nn.Embedding)}
    for name, p in module.named_parameters():
        g = torch.Generator().manual_seed((seed * 1_000_003 + zlib.crc32(name.encode())) % 2**63)
        noise = torch.randn(p.shape, generator=g, dtype=torch.float32)
        owner = name.rsplit(".", 1)[0]
        if name.endswith("norm.weight"):
            value = 1.0 + 0.05 * noise
        elif name.endswith(".bias"):
            value = 0.02 * noise
        elif owner in embeddings:
            value = noise
        elif p.dim() >= 2:
            value = noise / (p[0].numel() ** 0.5)
        else:
            value = 0.1 * noise
        p.copy_(value.to(p.dtype))
    return module
