"""Split residual vector quantizer of the codec decoder: 16 codes per frame -> one latent vector.

Codebook 0 (semantic) goes through ``rvq_first``, codebooks 1.. (acoustic) through ``rvq_rest``;
each sums its codebook rows and projects them with a 1x1 conv, and the two results add. A codebook
row is ``embedding_sum / max(cluster_usage, 1e-5)`` (how the training EMA stored it). Only the
decoding direction is implemented; ``input_proj`` exists so the checkpoint loads strictly.
Stateless: every frame decodes on its own. Its output is channels-last ([B, T, C] in memory), as the
decoder's layers want it (engine/core/codec/conv.py).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

USAGE_EPSILON = 1e-5


class Codebook(nn.Module):
    def __init__(self, dim: int, size: int):
        super().__init__()
        self.cluster_usage = nn.Parameter(torch.ones(size))
        self.embedding_sum = nn.Parameter(torch.zeros(size, dim))

    def forward(self, codes: torch.Tensor) -> torch.Tensor:  # [B, T] -> [B, T, D]
        # Gather first, then divide: the same per-element division as normalising the whole table.
        usage = self.cluster_usage[codes].clamp(min=USAGE_EPSILON)  # [B, T]
        return self.embedding_sum[codes] / usage[..., None]


class CodebookEntry(nn.Module):
    """Holds one ``_codebook`` (the checkpoint's ``vq.layers.<i>._codebook`` nesting)."""

    def __init__(self, dim: int, size: int):
        super().__init__()
        self._codebook = Codebook(dim, size)


class CodebookStack(nn.Module):
    def __init__(self, count: int, dim: int, size: int):
        super().__init__()
        self.layers = nn.ModuleList([CodebookEntry(dim, size) for _ in range(count)])


class ResidualQuantizer(nn.Module):
    """Sum of ``count`` codebook lookups, projected from ``dim`` to ``io_dim`` channels."""

    def __init__(self, count: int, dim: int, io_dim: int, size: int):
        super().__init__()
        self.input_proj = nn.Conv1d(io_dim, dim, 1, bias=False)
        self.output_proj = nn.Conv1d(dim, io_dim, 1, bias=False)
        self.vq = CodebookStack(count, dim, size)

    def forward(self, codes: torch.Tensor) -> torch.Tensor:  # [B, T, count] -> [B, io_dim, T], channels-last
        summed = self.vq.layers[0]._codebook(codes[..., 0])  # [B, T, dim]
        for index in range(1, len(self.vq.layers)):
            summed = summed + self.vq.layers[index]._codebook(codes[..., index])
        return F.linear(summed, self.output_proj.weight[..., 0]).transpose(1, 2)  # the 1x1 convolution


class SplitQuantizer(nn.Module):
    def __init__(self, num_quantizers: int, codebook_dim: int, codebook_size: int):
        super().__init__()
        dim = codebook_dim // 2
        self.rvq_first = ResidualQuantizer(1, dim, codebook_dim, codebook_size)
        self.rvq_rest = ResidualQuantizer(num_quantizers - 1, dim, codebook_dim, codebook_size)

    def forward(self, codes: torch.Tensor) -> torch.Tensor:  # [B, T, K] int64 -> [B, codebook_dim, T]
        return self.rvq_first(codes[..., :1]) + self.rvq_rest(codes[..., 1:])
