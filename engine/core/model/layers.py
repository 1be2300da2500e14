"""Qwen3 decoder building blocks shared by the talker and the code predictor.

Plain ``nn.Module``s whose parameter names match the checkpoint (``self_attn.q_proj`` ...). Attention
reads and writes a static KV cache (allocated once, written by index), so shapes never change
between steps and the same code runs eagerly or inside a captured CUDA graph. On CUDA in bf16/fp16 a
one-position step's attention, from the fused q/k/v projection to the output projection, runs as one
Triton block (``attention_block``: the kernels of engine/core/gpu_kernels/short_attention.py and attention.py).
"""

from __future__ import annotations

import math
import mmap

import torch
import torch.nn.functional as F
from torch import nn
from torch.nn.attention import SDPBackend, sdpa_kernel

from engine.core.gpu_kernels import runs_on, triton_available
from engine.core.gpu_kernels.gemv import linear, norm_linear, silu_mul_linear


class RMSNorm(nn.Module):
    def __init__(self, dim: int, eps: float):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(dim))
        self.eps = eps

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        # normalised in float32 whatever the input dtype, as the reference implementation does
        x32 = x.float()
        x32 = x32 * torch.rsqrt(x32.pow(2).mean(-1, keepdim=True) + self.eps)
        return self.weight * x32.to(x.dtype)


class RotaryEmbedding(nn.Module):
    """Plain rotate-half RoPE. cos/sin are computed in float32 (as the reference does) then cast."""

    def __init__(self, head_dim: int, theta: float):
        super().__init__()
        self.head_dim, self.theta = head_dim, theta
        self.register_buffer("inv_freq", self._inv_freq("cpu"), persistent=False)

    def _inv_freq(self, device) -> torch.Tensor:
        exponent = torch.arange(0, self.head_dim, 2, dtype=torch.int64, device=device).float() / self.head_dim
        return 1.0 / (self.theta**exponent)

    def reset_buffers(self, device) -> None:
        """Recompute the frequencies on ``device`` (after building on the meta device)."""
        self.inv_freq = self._inv_freq(device)

    def forward(self, positions: torch.Tensor, dtype: torch.dtype) -> tuple[torch.Tensor, torch.Tensor]:
        # positions: [B, T] int64 -> cos, sin: [B, 1, T, D]
        freqs = positions.float()[..., None] * self.inv_freq.float()  # [B, T, D/2]
        emb = torch.cat((freqs, freqs), dim=-1)
        return emb.cos().to(dtype)[:, None], emb.sin().to(dtype)[:, None]


def zeros_untouched(shape: tuple[int, ...], dtype: torch.dtype, device) -> torch.Tensor:
    """``torch.zeros``, except that on the CPU the memory is a private anonymous map in 4 KiB pages, which the
    system makes resident one at a time as they are first written (a read of an unwritten page maps the one shared
    page of zeros): ``torch.zeros`` writes every byte, and NumPy's zeros ask for 2 MiB pages, so either would make a
    whole cache resident at once. Where there is no ``mmap.MAP_PRIVATE`` (Windows) it is ``torch.zeros``."""
    size = math.prod(shape) * dtype.itemsize
    if torch.device(device).type != "cpu" or not size or not hasattr(mmap, "MAP_PRIVATE"):
        return torch.zeros(shape, dtype=dtype, device=device)
    pages = mmap.mmap(-1, size, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
    if hasattr(mmap, "MADV_NOHUGEPAGE"):
        pages.madvise(mmap.MADV_NOHUGEPAGE)  # where the system gives 2 MiB pages by default, a write would fault 2 MiB
    return torch.frombuffer(pages, dtype=torch.uint8).view(dtype).view(shape)


def rotate_half(x: torch.Tensor) -> torch.Tensor:
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat((-x2, x1), dim=-1)


class KVCache:
    """One preallocated key/value tensor pair for all layers: [L, B, kv_heads, max_len, head_dim]. On the CPU its
    pages become resident only as positions are written (``zeros_untouched``): a segment's cache is sized for its
    whole frame budget, up to hundreds of MB, of which a reading fills a small part."""

    def __init__(self, layers, batch, kv_heads, max_len, head_dim, dtype, device):
        shape = (layers, batch, kv_heads, max_len, head_dim)
        self.k = zeros_untouched(shape, dtype, device)
        self.v = zeros_untouched(shape, dtype, device)

    @property
    def max_len(self) -> int:
        return self.k.shape[3]


class Attention(nn.Module):
    def __init__(self, hidden, heads, kv_heads, head_dim, eps):
        super().__init__()
        self.heads, self.kv_heads, self.head_dim = heads, kv_heads, head_dim
        self.q_proj = nn.Linear(hidden, heads * head_dim, bias=False)
        self.k_proj = nn.Linear(hidden, kv_heads * head_dim, bias=False)
        self.v_proj = nn.Linear(hidden, kv_heads * head_dim, bias=False)
        self.o_proj = nn.Linear(heads * head_dim, hidden, bias=False)
        self.q_norm = RMSNorm(head_dim, eps)
        self.k_norm = RMSNorm(head_dim, eps)

        self.qkv_weight = None  # set by fuse(): q, k and v projections in one matrix
        self.out_weight = None  # set by fuse(): the output projection's (an Int8Weight on the fast CPU path)

    def fuse(self) -> None:
        """Compute q, k and v with one matrix product; the three weights become views of it (already so where
        ``engine.core.cpu.int8`` made the fused weights)."""
        if self.qkv_weight is not None:
            return
        self.qkv_weight = _fuse_linears(self.q_proj, self.k_proj, self.v_proj)
        self.out_weight = self.o_proj.weight.detach()  # a plain attribute (a Parameter would register)

    def forward(self, x, norm, cos, sin, k_cache, v_cache, write_pos, mask, kv_len):
        """``x + attention(norm(x))``. x: [B, T, H]; write_pos: [B, T] cache slots; mask: [B, 1, T, kv_len]
        bool (True = attend)."""
        b, t, _ = x.shape
        if self.qkv_weight is not None:
            qkv = norm_linear(x, norm, self.qkv_weight)
            block = attention_block(qkv, k_cache, self.q_norm.weight)
            if block is not None:  # everything up to the output projection in Triton
                out = block(qkv[:, 0], self.q_norm.weight, self.k_norm.weight, cos[:, 0, 0], sin[:, 0, 0], k_cache,
                            v_cache, write_pos[:, 0], self.q_norm.eps)
                return linear(out[:, None], self.out_weight, residual=x)
            q, k, v = qkv.split(
                [self.heads * self.head_dim, self.kv_heads * self.head_dim, self.kv_heads * self.head_dim], dim=-1)
        else:
            h = norm(x)
            q, k, v = self.q_proj(h), self.k_proj(h), self.v_proj(h)
        q = self._rotated(self.q_norm(q.view(b, t, self.heads, self.head_dim)).transpose(1, 2), cos, sin)
        k = self._rotated(self.k_norm(k.view(b, t, self.kv_heads, self.head_dim)).transpose(1, 2), cos, sin)
        v = v.view(b, t, self.kv_heads, self.head_dim).transpose(1, 2)
        keys, values = write_cache(k, v, k_cache, v_cache, write_pos, kv_len)
        out = attend(q, keys, values, mask)  # [B, heads, T, D]
        out_weight = self.o_proj.weight if self.out_weight is None else self.out_weight
        return linear(out.transpose(1, 2).reshape(b, t, self.heads * self.head_dim), out_weight, residual=x)

    @staticmethod
    def _rotated(x, cos, sin):
        return x * cos + rotate_half(x) * sin


def write_cache(k, v, k_cache, v_cache, write_pos, kv_len):
    """Write the new keys and values [B, kv_heads, T, D] into their cache slots ``write_pos`` [B, T]; returns the
    caches' first ``kv_len`` slots (keys, values) to attend over."""
    b, kv_heads = k.shape[:2]
    # index_put_ (not scatter_): compiled, it writes the T new slots in place; scatter_ copies the cache
    slots = (torch.arange(b, device=k.device)[:, None, None],
             torch.arange(kv_heads, device=k.device)[None, :, None], write_pos[:, None, :])
    k_cache.index_put_(slots, k)
    v_cache.index_put_(slots, v)
    return k_cache[:, :, :kv_len], v_cache[:, :, :kv_len]


def attend(q, keys, values, mask):
    """Attention of q [B, heads, T, D] over keys and values [B, kv_heads, S, D] where ``mask`` [B, 1, T, S] allows,
    grouped-query: on CUDA one query (a decode step) and a prefill each take the path made for them; elsewhere,
    and under torch.compile, PyTorch's fused attention."""
    if q.is_cuda and q.shape[2] == 1:
        return one_query_attention(q, keys, values, mask)
    if q.is_cuda and not torch.compiler.is_compiling():
        return prefill_attention(q, keys, values, mask)
    return F.scaled_dot_product_attention(q, keys, values, attn_mask=mask, enable_gqa=True)


SHORT_CACHE = 16  # the code predictor's cache; longer ones are the talker's


def attention_block(qkv, k_cache, norm_weight):
    """The Triton op that runs a one-position step (qkv: [B, 1, ...]) from the fused q/k/v projection to the
    output projection's input, on CUDA in bf16/fp16: the q/k norms, RoPE, the cache write and the attention
    over slots [0, write_pos] (the mask every decode step builds), or None where the PyTorch code runs.
    A cache of at most SHORT_CACHE slots (the code predictor's) is one kernel, short_attention.py's, instead
    of ~5 compiled ones; the talker's long cache two, attention.py's, reading only each row's filled slots,
    instead of ~10."""
    if not (qkv.shape[1] == 1 and qkv.is_cuda and triton_available() and qkv.dtype in (torch.bfloat16, torch.float16)
            and norm_weight.dtype == qkv.dtype and runs_on(qkv.device)):
        return None
    if k_cache.shape[2] <= SHORT_CACHE:
        from engine.core.gpu_kernels.short_attention import short_attention_block

        return short_attention_block
    from engine.core.gpu_kernels.attention import filled_slots_attention_block

    return filled_slots_attention_block


def one_query_attention(q, keys, values, mask) -> torch.Tensor:
    """A decode step's attention on CUDA where ``attention_block`` does not run, one query position per row
    (q: [B, H, 1, D]): the code predictor's few slots as plain products and sums, the talker's long cache as
    two batched products."""
    if keys.shape[2] <= SHORT_CACHE:
        return short_attention(q, keys, values, mask)
    return decode_attention(q, keys, values, mask)


def prefill_attention(q, keys, values, mask) -> torch.Tensor:
    """Attention of several positions per row on CUDA outside compiled code (a prefill, eager or captured):
    q [B, H, T, D]; keys, values [B, KV, S, D]; mask [B, 1, T, S] -> [B, H, T, D], through the
    memory-efficient kernel, the keys and values repeated for the query heads sharing them. Left to choose,
    PyTorch 2.11 sends grouped heads with a mask to cuDNN, which builds an execution plan for every new
    shape (a tenth of a second or more: each batched admission of the many-streams loop is a new shape),
    and without cuDNN to the math kernel, which materialises every score in float32."""
    group = q.shape[1] // keys.shape[1]
    if group > 1:
        keys, values = keys.repeat_interleave(group, dim=1), values.repeat_interleave(group, dim=1)
    with sdpa_kernel([SDPBackend.EFFICIENT_ATTENTION, SDPBackend.FLASH_ATTENTION, SDPBackend.MATH]):
        return F.scaled_dot_product_attention(q, keys, values, attn_mask=mask)


def decode_attention(q, keys, values, mask) -> torch.Tensor:
    """Attention of one query position per row over a long cache, as two batched matrix products.

    q: [B, H, 1, D]; keys, values: [B, KV, S, D]; mask: [B, 1, 1, S] -> [B, H, 1, D]. On CUDA, SDPA
    sends this shape to cuDNN's split-sequence ("lean") kernel, whose partial results are reduced in
    an order that changes from run to run; these products are deterministic. In bf16/fp16 with fused
    projections the Triton kernels of engine/core/gpu_kernels/attention.py replace this (``attention_block``),
    reading only each row's filled slots."""
    b, h, _, d = q.shape
    kv, s = keys.shape[1], keys.shape[2]
    qg = q.view(b, kv, h // kv, d)  # the query heads sharing each key/value head
    scores = torch.matmul(qg, keys.transpose(-1, -2))  # [B, KV, G, S]
    scores = scores.to(torch.promote_types(scores.dtype, torch.float32)) * d**-0.5  # softmax in float32 at least
    scores = scores.masked_fill(~mask.view(b, 1, 1, s), float("-inf"))
    out = torch.matmul(scores.softmax(dim=-1).to(values.dtype), values)  # [B, KV, G, D]
    return out.view(b, h, 1, d)


def short_attention(q, keys, values, mask) -> torch.Tensor:
    """``decode_attention`` for a cache of a few slots (the code predictor's 16) as plain products and sums,
    which the compiler fuses with the surrounding norm and RoPE instead of calling an attention kernel
    (in bf16/fp16 with fused projections, ``attention_block`` replaces all of it)."""
    b, h, _, d = q.shape
    kv, s = keys.shape[1], keys.shape[2]
    acc = torch.promote_types(q.dtype, torch.float32)  # float32 at least
    qg = q.view(b, kv, h // kv, 1, d).to(acc)
    scores = (qg * keys[:, :, None].to(acc)).sum(-1) * d**-0.5  # [B, KV, G, S]
    scores = scores.masked_fill(~mask.view(b, 1, 1, s), float("-inf"))
    out = (scores.softmax(dim=-1)[..., None] * values[:, :, None].to(acc)).sum(-2)  # [B, KV, G, D]
    return out.to(q.dtype).view(b, h, 1, d)


class MLP(nn.Module):
    def __init__(self, hidden, intermediate):
        super().__init__()
        self.gate_proj = nn.Linear(hidden, intermediate, bias=False)
        self.up_proj = nn.Linear(hidden, intermediate, bias=False)
        self.down_proj = nn.Linear(intermediate, hidden, bias=False)
        self.gate_up_weight = None  # set by fuse()
        self.down_weight = None  # set by fuse(): the down projection's (an Int8Weight on the fast CPU path)

    def fuse(self) -> None:
        """Compute the gate and up projections with one matrix product (already so where ``engine.core.cpu.int8``
        made the fused weights)."""
        if self.gate_up_weight is not None:
            return
        self.gate_up_weight = _fuse_linears(self.gate_proj, self.up_proj)
        self.down_weight = self.down_proj.weight.detach()

    def forward(self, x, norm):
        """``x + mlp(norm(x))``."""
        if self.gate_up_weight is not None:
            return silu_mul_linear(norm_linear(x, norm, self.gate_up_weight), self.down_weight, residual=x)
        h = norm(x)
        return x + self.down_proj(F.silu(self.gate_proj(h)) * self.up_proj(h))


def _fuse_linears(*linears: nn.Linear) -> torch.Tensor:
    """Concatenate bias-free linear weights along the output dim; each layer keeps a view of its rows."""
    fused = torch.cat([lin.weight.detach() for lin in linears], dim=0)
    row = 0
    for lin in linears:
        n = lin.weight.shape[0]
        lin.weight = nn.Parameter(fused[row : row + n], requires_grad=False)
        row += n
    return fused


def fuse_projections(module: nn.Module) -> None:
    """Fuse the q/k/v and gate/up projections of every decoder layer under ``module``."""
    for m in module.modules():
        if isinstance(m, (Attention, MLP)):
            m.fuse()


class DecoderLayer(nn.Module):
    def __init__(self, hidden, intermediate, heads, kv_heads, head_dim, eps):
        super().__init__()
        self.self_attn = Attention(hidden, heads, kv_heads, head_dim, eps)
        self.mlp = MLP(hidden, intermediate)
        self.input_layernorm = RMSNorm(hidden, eps)
        self.post_attention_layernorm = RMSNorm(hidden, eps)

    def forward(self, x, cos, sin, k_cache, v_cache, write_pos, mask, kv_len):
        # each block normalises its input and adds its residual itself (fused into one kernel at batch 1)
        x = self.self_attn(x, self.input_layernorm, cos, sin, k_cache, v_cache, write_pos, mask, kv_len)
        return self.mlp(x, self.post_attention_layernorm)


class DecoderStack(nn.Module):
    """``layers`` + final ``norm``: runs a block of positions through every layer against a KV cache."""

    def __init__(self, n_layers, hidden, intermediate, heads, kv_heads, head_dim, eps, rope_theta):
        super().__init__()
        self.layers = nn.ModuleList(
            DecoderLayer(hidden, intermediate, heads, kv_heads, head_dim, eps) for _ in range(n_layers)
        )
        self.norm = RMSNorm(hidden, eps)
        self.rotary = RotaryEmbedding(head_dim, rope_theta)
        self.kv_heads, self.head_dim = kv_heads, head_dim

    def new_cache(self, batch: int, max_len: int, dtype, device) -> KVCache:
        return KVCache(len(self.layers), batch, self.kv_heads, max_len, self.head_dim, dtype, device)

    def forward(self, x, positions, cache: KVCache, kv_len: int | None = None) -> torch.Tensor:
        """x: [B, T, H]; positions: [B, T] (also the cache slots). Attends to slots <= own position
        within the first ``kv_len`` slots (all of the cache when None). Returns normed [B, T, H]."""
        kv_len = cache.max_len if kv_len is None else kv_len
        cos, sin = self.rotary(positions, x.dtype)
        slots = torch.arange(kv_len, device=x.device)
        mask = (slots[None, None, :] <= positions[:, :, None])[:, None]  # [B, 1, T, kv_len]
        for i, layer in enumerate(self.layers):
            x = layer(x, cos, sin, cache.k[i], cache.v[i], positions, mask, kv_len)
        return self.norm(x)
