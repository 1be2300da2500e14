"""12 Hz codec decoder: 16 codes per frame -> 1920 samples of 24 kHz audio, whole or streamed exactly.

``SpeechDecoder`` is a plain stack of modules whose parameter names are the checkpoint's
``decoder.*`` names without the ``decoder.`` prefix:

    codes [B, T, 16] -> quantizer [B, 512, T] -> pre_conv (causal k3) [B, 1024, T]
    -> pre_transformer (sliding window 72) -> upsample: 2 x (ConvTranspose x2, ConvNeXt) [B, 1024, 4T]
    -> decoder: causal conv k7, 4 upsampling blocks (x8 x5 x4 x3), Snake, conv k7 -> clamp [B, 1920T]

Every layer is causal, so the output of a frame depends only on frames up to it. Activations between
the layers are channels-last ([B, C, T] stored [B, T, C]; engine/core/codec/conv.py says why). Exact streaming
carries a ``DecoderState`` across calls: the left tails of every causal convolution, the previous
input frame of every overlapping transposed convolution, and the keys/values of the last 71
frames of each attention layer with their positions. ``decode_chunk`` on consecutive chunks
therefore returns exactly (up to float rounding) what ``decode`` returns on the whole sequence.
``decode`` is ``decode_chunk`` on a fresh state; it is the official ``forward`` on the whole
sequence, not the official windowed ``chunked_decode``, which drifts past 300 frames.

CUDA graphs: the state is allocated once by ``new_state`` with fixed shapes, every call updates it
in place (``copy_``/``add_``), positions live on the device, and no call reads a value back to the
host. So ``decode_chunk(codes, state, validate=False)`` for a fixed chunk length and batch can be
captured once and replayed; ``reset(state)`` starts a new utterance without reallocating.
Range checking of codes reads a value back, hence ``validate=False`` inside a graph.

Rows of a batched state are independent streams (each with its own attention positions):
``state.rows(start, stop)`` is a smaller state over the same memory, so decoding into it updates
those rows of the whole; with ``reset`` and ``copy_`` a row can be cleared, saved, or primed
(e.g. with a voice's context codes decoded on a 1-row state).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import torch
from torch import nn

from engine.core.checkpoint import load_weights
from engine.core.codec.config import CodecDecoderConfig, SpeechTokenizerConfig
from engine.core.codec.conv import (
    CausalConv1d,
    CausalConvTranspose1d,
    ConvNeXtBlock,
    SnakeBeta,
    StreamingLayer,
    UpsampleBlock,
    lay_out_weight,
)
from engine.core.codec.quantizer import SplitQuantizer
from engine.core.codec.transformer import SlidingWindowTransformer, WindowCache

CHECKPOINT_PREFIX = "decoder."


@dataclass
class DecoderState:
    """Everything a stream remembers between ``decode_chunk`` calls; fixed shapes, updated in place."""

    tails: dict[str, torch.Tensor]  # module path -> last inputs of that layer [B, C_in, history]
    attention: WindowCache
    batch: int

    def reset(self) -> None:
        for tail in self.tails.values():
            tail.zero_()
        self.attention.reset()

    def rows(self, start: int, stop: int) -> DecoderState:
        """Rows [start, stop) as a state of batch ``stop - start`` over the same memory (views: updates go through)."""
        return DecoderState({name: tail[start:stop] for name, tail in self.tails.items()},
                            self.attention.rows(start, stop), stop - start)

    def copy_(self, other: DecoderState) -> None:
        """Overwrite this state with ``other`` (same batch), in place."""
        if other.batch != self.batch:
            raise ValueError(f"cannot copy a decoder state of batch {other.batch} into one of batch {self.batch}")
        for name, tail in self.tails.items():
            tail.copy_(other.tails[name])
        self.attention.copy_(other.attention)

    def put_rows(self, rows: torch.Tensor, others: list[DecoderState]) -> None:
        """Row ``rows[i]`` (a device tensor of row indices) becomes the 1-row state ``others[i]``, in place: a
        few indexed writes for all of them, however many (streams joining a batch together)."""
        if any(other.batch != 1 for other in others) or len(others) != len(rows):
            raise ValueError("put_rows takes one 1-row state per row")
        for name, tail in self.tails.items():
            tail.index_copy_(0, rows, torch.cat([other.tails[name] for other in others]))
        self.attention.put_rows(rows, [other.attention for other in others])

    def clear_rows(self, rows: torch.Tensor) -> None:
        """Rows ``rows`` (a device tensor of row indices) start from silence, as after ``reset``, in place."""
        for tail in self.tails.values():
            tail.index_fill_(0, rows, 0)
        self.attention.clear_rows(rows)


class SpeechDecoder(nn.Module):
    def __init__(self, cfg: CodecDecoderConfig):
        super().__init__()
        self.cfg = cfg
        self.quantizer = SplitQuantizer(cfg.num_quantizers, cfg.codebook_dim, cfg.codebook_size)
        self.pre_conv = CausalConv1d(cfg.codebook_dim, cfg.latent_dim, kernel_size=3)
        self.pre_transformer = SlidingWindowTransformer(cfg)
        latent = cfg.latent_dim
        self.upsample = nn.ModuleList(
            nn.ModuleList([CausalConvTranspose1d(latent, latent, ratio, ratio), ConvNeXtBlock(latent)])
            for ratio in cfg.upsampling_ratios
        )
        dims = [cfg.decoder_dim // 2**i for i in range(len(cfg.upsample_rates) + 1)]
        self.decoder = nn.ModuleList(
            [CausalConv1d(cfg.latent_dim, cfg.decoder_dim, kernel_size=7)]
            + [UpsampleBlock(dims[i], dims[i + 1], rate) for i, rate in enumerate(cfg.upsample_rates)]
            + [SnakeBeta(dims[-1]), CausalConv1d(dims[-1], 1, kernel_size=7)]
        )
        self._streaming_layers: dict[str, StreamingLayer] = {}
        for name, module in self.named_modules():
            if isinstance(module, StreamingLayer) and module.history:
                module.state_key = name
                self._streaming_layers[name] = module

    @property
    def samples_per_frame(self) -> int:
        return self.cfg.samples_per_frame

    # ---- state ---------------------------------------------------------------------------------

    def new_state(self, batch: int = 1, device: torch.device | str | None = None) -> DecoderState:
        """Zeroed streaming state for ``batch`` parallel streams, on ``device`` (default: the weights')."""
        weight = self.pre_conv.conv.weight
        device = torch.device(device) if device is not None else weight.device
        tails = {name: layer.new_tail(batch, device, weight.dtype) for name, layer in self._streaming_layers.items()}
        return DecoderState(tails, self.pre_transformer.new_cache(batch, device, weight.dtype), batch)

    @staticmethod
    def reset(state: DecoderState) -> None:
        """Clear ``state`` in place for a new utterance (same tensors, so captured graphs stay valid)."""
        state.reset()

    # ---- decoding ------------------------------------------------------------------------------

    @torch.no_grad()
    def decode(self, codes: torch.Tensor, validate: bool = True) -> torch.Tensor:
        """Codes ``[B, T, 16]`` int64 -> float32 audio ``[B, T * 1920]``, the whole sequence at once."""
        if validate:
            self.check_codes(codes)
        return self.decode_chunk(codes, self.new_state(codes.shape[0], codes.device), validate=False)

    @torch.no_grad()
    def decode_chunk(self, codes: torch.Tensor, state: DecoderState, validate: bool = True) -> torch.Tensor:
        """The next ``n`` frames ``[B, n, 16]`` of a stream -> float32 audio ``[B, n * 1920]``; updates ``state``."""
        if validate:
            self.check_codes(codes)
            if codes.shape[0] != state.batch:
                raise ValueError(f"codes have batch {codes.shape[0]} but the decoder state was made for {state.batch}")
        tails = state.tails
        h = self.pre_conv(self.quantizer(codes), tails)  # [B, latent, n]
        h = self.pre_transformer(h.transpose(1, 2), state.attention).transpose(1, 2)  # [B, latent, n]
        for upsample, convnext in self.upsample:
            h = convnext(upsample(h, tails), tails)  # [B, latent, n * 2], then * 4
        first, *blocks, snake, last = self.decoder
        h = first(h, tails)  # [B, decoder_dim, 4n]
        for block in blocks:
            h = block(h, tails)
        audio = last(h, tails, activation=snake).clamp(-1.0, 1.0)  # [B, 1, n * 1920]
        return audio[:, 0].float()

    def check_codes(self, codes: torch.Tensor) -> None:
        """Raise ``ValueError`` unless ``codes`` is an integer ``[B, T>0, num_quantizers]`` tensor in range."""
        cfg = self.cfg
        if not isinstance(codes, torch.Tensor) or codes.dtype.is_floating_point or codes.dtype == torch.bool:
            raise ValueError("codes must be an integer tensor [batch, frames, codebooks]")
        if codes.dim() != 3 or codes.shape[2] != cfg.num_quantizers or codes.shape[1] == 0:
            raise ValueError(
                f"codes must have shape [batch, frames > 0, {cfg.num_quantizers}], got {list(codes.shape)}"
            )
        low, high = int(codes.min()), int(codes.max())
        if low < 0 or high >= cfg.codebook_size:
            raise ValueError(f"codes must lie in [0, {cfg.codebook_size}), got values from {low} to {high}")

    # ---- loading -------------------------------------------------------------------------------

    @classmethod
    def from_dir(
        cls,
        speech_tokenizer_dir: str | Path,
        device: torch.device | str = "cpu",
        dtype: torch.dtype = torch.float32,
    ) -> SpeechDecoder:
        """Build from ``config.json`` and load the ``decoder.*`` tensors of ``model.safetensors`` (memory-mapped)."""
        directory = Path(speech_tokenizer_dir)
        cfg = SpeechTokenizerConfig.from_dir(directory).decoder
        with torch.device("meta"):
            model = cls(cfg)
        load_weights(model, directory / "model.safetensors", prefix=CHECKPOINT_PREFIX, device=device, dtype=dtype)
        for module in model.modules():  # the layers run channels-last (engine/core/codec/conv.py)
            if isinstance(module, nn.Conv1d | nn.ConvTranspose1d):
                module.weight.data = lay_out_weight(module.weight.data)
        return model.eval()
