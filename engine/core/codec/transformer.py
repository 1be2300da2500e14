"""The codec decoder's ``pre_transformer``: 8 causal layers with sliding-window attention over frames.

Each query frame attends to itself and the ``sliding_window - 1`` frames before it (RoPE on
absolute frame positions). For streaming, a ``WindowCache`` keeps, per layer, the rotated keys
and values of the last ``sliding_window - 1`` frames in fixed-size tensors that slide left by the
chunk length on every call, plus the absolute position of each slot; a slot that holds nothing
yet has position ``EMPTY_POSITION`` and is masked out. Positions are per batch row, so the rows
of one batch may be streams that started at different times. Shapes never depend on how much has
been decoded, and nothing leaves the device.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from engine.core.codec.config import CodecDecoderConfig
from engine.core.model.layers import RMSNorm

EMPTY_POSITION = torch.iinfo(torch.int64).min // 2


@dataclass
class WindowCache:
    """Attention memory of all layers; written in place."""

    keys: torch.Tensor  # [layers, B, kv_heads, window - 1, head_dim], RoPE already applied
    values: torch.Tensor  # [layers, B, kv_heads, window - 1, head_dim]
    key_positions: torch.Tensor  # [B, window - 1] int64: absolute frame index of each slot
    position: torch.Tensor  # [B] int64: frames decoded so far = position of the next frame

    def reset(self) -> None:
        self.keys.zero_()
        self.values.zero_()
        self.key_positions.fill_(EMPTY_POSITION)
        self.position.zero_()

    def rows(self, start: int, stop: int) -> WindowCache:
        """Rows [start, stop) over the same memory (views: writes go through)."""
        return WindowCache(self.keys[:, start:stop], self.values[:, start:stop], self.key_positions[start:stop],
                           self.position[start:stop])

    def copy_(self, other: WindowCache) -> None:
        self.keys.copy_(other.keys)
        self.values.copy_(other.values)
        self.key_positions.copy_(other.key_positions)
        self.position.copy_(other.position)

    def put_rows(self, rows: torch.Tensor, others: list[WindowCache]) -> None:
        """Row ``rows[i]`` becomes ``others[i]`` (one row each): one indexed write per tensor for all of them."""
        self.keys.index_copy_(1, rows, torch.cat([o.keys for o in others], dim=1))
        self.values.index_copy_(1, rows, torch.cat([o.values for o in others], dim=1))
        self.key_positions.index_copy_(0, rows, torch.cat([o.key_positions for o in others]))
        self.position.index_copy_(0, rows, torch.cat([o.position for o in others]))

    def clear_rows(self, rows: torch.Tensor) -> None:
        """Rows ``rows`` become empty, as after ``reset``: one indexed fill per tensor."""
        self.keys.index_fill_(1, rows, 0)
        self.values.index_fill_(1, rows, 0)
        self.key_positions.index_fill_(0, rows, EMPTY_POSITION)
        self.position.index_fill_(0, rows, 0)


class LayerScale(nn.Module):
    def __init__(self, dim: int, initial: float):
        super().__init__()
        self.scale = nn.Parameter(torch.full((dim,), initial))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.scale * x


def _rotate_half(x: torch.Tensor) -> torch.Tensor:
    first, second = x.chunk(2, dim=-1)
    return torch.cat((-second, first), dim=-1)


class Attention(nn.Module):
    def __init__(self, cfg: CodecDecoderConfig):
        super().__init__()
        self.heads = cfg.num_attention_heads
        self.kv_heads = cfg.num_key_value_heads
        self.head_dim = cfg.head_dim
        self.q_proj = nn.Linear(cfg.hidden_size, self.heads * self.head_dim, bias=cfg.attention_bias)
        self.k_proj = nn.Linear(cfg.hidden_size, self.kv_heads * self.head_dim, bias=cfg.attention_bias)
        self.v_proj = nn.Linear(cfg.hidden_size, self.kv_heads * self.head_dim, bias=cfg.attention_bias)
        self.o_proj = nn.Linear(self.heads * self.head_dim, cfg.hidden_size, bias=cfg.attention_bias)

    def forward(
        self,
        x: torch.Tensor,  # [B, n, hidden]
        cos: torch.Tensor,  # [B, 1, n, head_dim]
        sin: torch.Tensor,  # [B, 1, n, head_dim]
        mask: torch.Tensor,  # [B, 1, n, window - 1 + n] bool, True = may attend
        cached_keys: torch.Tensor,  # [B, kv_heads, window - 1, head_dim], updated in place
        cached_values: torch.Tensor,  # [B, kv_heads, window - 1, head_dim], updated in place
    ) -> torch.Tensor:
        batch, frames, _ = x.shape
        q = self.q_proj(x).view(batch, frames, self.heads, self.head_dim).transpose(1, 2)  # [B, H, n, D]
        k = self.k_proj(x).view(batch, frames, self.kv_heads, self.head_dim).transpose(1, 2)  # [B, Hkv, n, D]
        v = self.v_proj(x).view(batch, frames, self.kv_heads, self.head_dim).transpose(1, 2)
        q = q * cos + _rotate_half(q) * sin
        k = k * cos + _rotate_half(k) * sin
        keys = torch.cat([cached_keys, k], dim=2)  # [B, Hkv, window - 1 + n, D]
        values = torch.cat([cached_values, v], dim=2)
        cached_keys.copy_(keys[:, :, frames:])
        cached_values.copy_(values[:, :, frames:])
        if self.heads != self.kv_heads:
            keys = keys.repeat_interleave(self.heads // self.kv_heads, dim=1)  # [B, H, window - 1 + n, D]
            values = values.repeat_interleave(self.heads // self.kv_heads, dim=1)
        out = F.scaled_dot_product_attention(q, keys, values, attn_mask=mask)  # [B, H, n, D]
        return self.o_proj(out.transpose(1, 2).reshape(batch, frames, self.heads * self.head_dim))


class Mlp(nn.Module):
    def __init__(self, cfg: CodecDecoderConfig):
        super().__init__()
        self.gate_proj = nn.Linear(cfg.hidden_size, cfg.intermediate_size, bias=False)
        self.up_proj = nn.Linear(cfg.hidden_size, cfg.intermediate_size, bias=False)
        self.down_proj = nn.Linear(cfg.intermediate_size, cfg.hidden_size, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.down_proj(F.silu(self.gate_proj(x)) * self.up_proj(x))


class TransformerLayer(nn.Module):
    def __init__(self, cfg: CodecDecoderConfig):
        super().__init__()
        self.self_attn = Attention(cfg)
        self.mlp = Mlp(cfg)
        self.input_layernorm = RMSNorm(cfg.hidden_size, cfg.rms_norm_eps)
        self.post_attention_layernorm = RMSNorm(cfg.hidden_size, cfg.rms_norm_eps)
        self.self_attn_layer_scale = LayerScale(cfg.hidden_size, cfg.layer_scale_initial_scale)
        self.mlp_layer_scale = LayerScale(cfg.hidden_size, cfg.layer_scale_initial_scale)

    def forward(self, x, cos, sin, mask, cached_keys, cached_values):  # [B, n, hidden]
        h = self.self_attn(self.input_layernorm(x), cos, sin, mask, cached_keys, cached_values)
        x = x + self.self_attn_layer_scale(h)
        return x + self.mlp_layer_scale(self.mlp(self.post_attention_layernorm(x)))


class SlidingWindowTransformer(nn.Module):
    def __init__(self, cfg: CodecDecoderConfig):
        super().__init__()
        self.cfg = cfg
        self.input_proj = nn.Linear(cfg.latent_dim, cfg.hidden_size)
        self.layers = nn.ModuleList([TransformerLayer(cfg) for _ in range(cfg.num_hidden_layers)])
        self.norm = RMSNorm(cfg.hidden_size, cfg.rms_norm_eps)
        self.output_proj = nn.Linear(cfg.hidden_size, cfg.latent_dim)

    def new_cache(self, batch: int, device: torch.device, dtype: torch.dtype) -> WindowCache:
        cfg = self.cfg
        shape = (cfg.num_hidden_layers, batch, cfg.num_key_value_heads, cfg.sliding_window - 1, cfg.head_dim)
        return WindowCache(
            keys=torch.zeros(shape, device=device, dtype=dtype),
            values=torch.zeros(shape, device=device, dtype=dtype),
            key_positions=torch.full((batch, cfg.sliding_window - 1), EMPTY_POSITION, device=device,
                                     dtype=torch.int64),
            position=torch.zeros(batch, device=device, dtype=torch.int64),
        )

    def _rope(self, positions: torch.Tensor, dtype: torch.dtype) -> tuple[torch.Tensor, torch.Tensor]:
        """cos, sin ``[B, n, head_dim]`` of absolute ``positions`` ``[B, n]``, computed in float32."""
        dim = self.cfg.head_dim
        exponents = torch.arange(0, dim, 2, device=positions.device, dtype=torch.int64).float() / dim
        inv_freq = 1.0 / (self.cfg.rope_theta**exponents)  # [D / 2]
        freqs = positions.float()[..., None] * inv_freq  # [B, n, D / 2]
        angles = torch.cat((freqs, freqs), dim=-1)  # [B, n, D]
        return angles.cos().to(dtype), angles.sin().to(dtype)

    def forward(self, x: torch.Tensor, cache: WindowCache) -> torch.Tensor:  # [B, n, latent] -> same
        frames = x.shape[1]
        positions = cache.position[:, None] + torch.arange(frames, device=x.device)  # [B, n]
        key_positions = torch.cat([cache.key_positions, positions], dim=1)  # [B, window - 1 + n]
        mask = (key_positions[:, None, :] <= positions[:, :, None]) & (
            key_positions[:, None, :] > positions[:, :, None] - self.cfg.sliding_window
        )  # [B, n, window - 1 + n]
        h = self.input_proj(x)
        cos, sin = self._rope(positions, h.dtype)
        for index, layer in enumerate(self.layers):
            h = layer(h, cos[:, None], sin[:, None], mask[:, None], cache.keys[index], cache.values[index])
        cache.key_positions.copy_(key_positions[:, frames:])
        cache.position.add_(frames)
        return self.output_proj(self.norm(h))
