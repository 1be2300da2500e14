"""The talker: a Qwen3 decoder over dual-track (text + codec) embeddings that predicts codebook 0.

Parameter names follow the checkpoint's ``talker.*`` prefix: ``model`` (layers, norm, codec and
text embeddings), ``text_projection`` and ``codec_head``; ``code_predictor`` lives in predictor.py.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from engine.core.config import TalkerConfig
from engine.core.model.layers import DecoderStack
from engine.core.model.predictor import CodePredictor


class TalkerModel(DecoderStack):
    def __init__(self, c: TalkerConfig):
        super().__init__(
            c.num_hidden_layers, c.hidden_size, c.intermediate_size, c.num_attention_heads,
            c.num_key_value_heads, c.head_dim, c.rms_norm_eps, c.rope_theta,
        )
        self.codec_embedding = nn.Embedding(c.vocab_size, c.hidden_size)
        self.text_embedding = nn.Embedding(c.text_vocab_size, c.text_hidden_size)


class TextProjection(nn.Module):
    """Linear -> SiLU -> Linear from the text embedding width to the talker width."""

    def __init__(self, text_hidden: int, hidden: int):
        super().__init__()
        self.linear_fc1 = nn.Linear(text_hidden, text_hidden, bias=True)
        self.linear_fc2 = nn.Linear(text_hidden, hidden, bias=True)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.linear_fc2(F.silu(self.linear_fc1(x)))


class Talker(nn.Module):
    def __init__(self, c: TalkerConfig):
        super().__init__()
        self.config = c
        self.model = TalkerModel(c)
        self.text_projection = TextProjection(c.text_hidden_size, c.hidden_size)
        self.codec_head = nn.Linear(c.hidden_size, c.vocab_size, bias=False)
        self.code_predictor = CodePredictor(c.code_predictor_config, c.hidden_size)
        self._constants: dict[tuple[str, tuple[int, ...]], torch.Tensor] = {}
        self._constants_of: tuple | None = None  # the embedding weights the kept embeddings were made from

    def embed_constant(self, track: str, ids: tuple[int, ...]) -> torch.Tensor:
        """``embed_text`` (track "text") or ``embed_codec`` (track "codec") of ids that recur in every prompt
        (special tokens, the role prefix, codec control ids, speakers): [1, N, H], computed once for these
        weights and then shared, so never to be written into."""
        text, codec = self.model.text_embedding.weight, self.model.codec_embedding.weight
        weights = (text.data_ptr(), text.dtype, text.device, codec.data_ptr(), codec.dtype)
        if weights != self._constants_of:  # loaded anew, moved or cast since: none of them holds
            self._constants, self._constants_of = {}, weights
        key = (track, tuple(ids))
        if key not in self._constants:
            embed = {"text": self.embed_text, "codec": self.embed_codec}[track]
            self._constants[key] = embed(torch.tensor([key[1]], dtype=torch.long, device=text.device))
        return self._constants[key]

    def embed_text(self, ids: torch.Tensor) -> torch.Tensor:
        """T(x): text ids [..., N] -> [..., N, H] (the table may be kept in a narrower dtype than the model's:
        rows are widened as they are read)."""
        rows = self.model.text_embedding(ids)
        return self.text_projection(rows.to(self.text_projection.linear_fc1.weight.dtype))

    def embed_codec(self, ids: torch.Tensor) -> torch.Tensor:
        """C(x): codec ids [..., N] -> [..., N, H]."""
        return self.model.codec_embedding(ids)

    def embed_frame(self, codes: torch.Tensor) -> torch.Tensor:
        """Sum of the 16 codebook embeddings of each frame: codes [..., 16] -> [..., H]."""
        out = self.model.codec_embedding(codes[..., 0])
        for i, emb in enumerate(self.code_predictor.model.codec_embedding):
            out = out + emb(codes[..., i + 1])
        return out
