"""The code predictor: a 5-layer Qwen3 decoder that fills codebooks 1..15 of each frame.

Per frame it sees [talker hidden, C(code_0)] (projected to its own width when the talker is wider),
then one embedded code per step, each step's ``lm_head[j]`` giving codebook j+1.
Names follow the checkpoint's ``talker.code_predictor.*`` prefix.
"""

from __future__ import annotations

import torch
from torch import nn

from engine.core.config import PredictorConfig
from engine.core.gpu_kernels.gemv import linear
from engine.core.model.layers import DecoderStack


class CodePredictorModel(DecoderStack):
    def __init__(self, c: PredictorConfig, talker_hidden: int):
        super().__init__(
            c.num_hidden_layers, c.hidden_size, c.intermediate_size, c.num_attention_heads,
            c.num_key_value_heads, c.head_dim, c.rms_norm_eps, c.rope_theta,
        )
        # inputs are embedded at the talker's width, then projected
        self.codec_embedding = nn.ModuleList(
            nn.Embedding(c.vocab_size, talker_hidden) for _ in range(c.num_code_groups - 1)
        )


class CodePredictor(nn.Module):
    def __init__(self, c: PredictorConfig, talker_hidden: int):
        super().__init__()
        self.config = c
        self.model = CodePredictorModel(c, talker_hidden)
        self.lm_head = nn.ModuleList(
            nn.Linear(c.hidden_size, c.vocab_size, bias=False) for _ in range(c.num_code_groups - 1)
        )
        self.head_weights = None  # set by engine.core.cpu.int8.quantize_layers: each head as an Int8Weight
        if talker_hidden != c.hidden_size:
            self.small_to_mtp_projection = nn.Linear(talker_hidden, c.hidden_size, bias=True)
        else:
            self.small_to_mtp_projection = nn.Identity()

    def head(self, j: int):
        """The weight of ``lm_head[j]``: a tensor, or its ``Int8Weight`` on the fast CPU path."""
        return self.lm_head[j].weight if self.head_weights is None else self.head_weights[j]

    def project(self, x: torch.Tensor) -> torch.Tensor:
        """Talker-width inputs -> the predictor's width (``small_to_mtp_projection``; identity when equal)."""
        proj = self.small_to_mtp_projection
        return x if isinstance(proj, nn.Identity) else linear(x, proj.weight, proj.bias)
