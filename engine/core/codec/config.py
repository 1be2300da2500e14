"""Speech-tokenizer configuration: dataclasses read once from ``speech_tokenizer/config.json``.

The decoder part becomes a typed ``CodecDecoderConfig`` (field names follow the official
``decoder_config`` so a reader can match them line by line, defaults are the official class
defaults); the encoder part stays the raw ``encoder_config`` dict, which the Mimi encoder reads.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field, fields
from pathlib import Path

from engine import json_limits
from engine.errors import CheckpointError

MODEL_TYPE = "qwen3_tts_tokenizer_12hz"


@dataclass(frozen=True, slots=True)
class CodecDecoderConfig:
    """The 12 Hz codec decoder: split RVQ -> causal conv -> sliding-window transformer -> upsamplers."""

    codebook_dim: int  # width of the quantizer output; each codebook holds codebook_dim // 2 values
    codebook_size: int = 2048
    num_quantizers: int = 16
    latent_dim: int = 1024
    hidden_size: int = 1024
    intermediate_size: int = 3072
    num_hidden_layers: int = 8
    num_attention_heads: int = 16
    num_key_value_heads: int = 16
    head_dim: int | None = None  # None: hidden_size // num_attention_heads, as the official code does
    attention_bias: bool = False
    hidden_act: str = "silu"
    rms_norm_eps: float = 1e-5
    rope_theta: float = 10000.0
    sliding_window: int = 72
    layer_scale_initial_scale: float = 0.01
    max_position_embeddings: int = 8000
    upsample_rates: tuple[int, ...] = (8, 5, 4, 3)
    upsampling_ratios: tuple[int, ...] = (2, 2)
    decoder_dim: int = 1536

    def __post_init__(self):
        object.__setattr__(self, "upsample_rates", tuple(self.upsample_rates))
        object.__setattr__(self, "upsampling_ratios", tuple(self.upsampling_ratios))
        if self.head_dim is None:
            object.__setattr__(self, "head_dim", self.hidden_size // self.num_attention_heads)
        if self.hidden_act != "silu":
            raise CheckpointError(f"speech tokenizer decoder: hidden_act {self.hidden_act!r} is not supported")
        if self.num_quantizers < 2:
            raise CheckpointError("speech tokenizer decoder: needs a semantic and at least one acoustic codebook")
        if self.num_attention_heads % self.num_key_value_heads:
            raise CheckpointError("speech tokenizer decoder: attention heads must be a multiple of kv heads")
        if self.codebook_dim % 2 or self.decoder_dim % 2 ** len(self.upsample_rates):
            raise CheckpointError("speech tokenizer decoder: codebook_dim or decoder_dim has the wrong divisibility")
        if self.sliding_window < 1:
            raise CheckpointError("speech tokenizer decoder: sliding_window must be positive")

    @property
    def samples_per_frame(self) -> int:
        """Output samples per code frame: the product of every upsampling factor (1920 for 12 Hz)."""
        return math.prod(self.upsampling_ratios) * math.prod(self.upsample_rates)

    @classmethod
    def from_dict(cls, d: dict) -> CodecDecoderConfig:
        if "codebook_dim" not in d:
            raise CheckpointError("speech tokenizer decoder_config has no codebook_dim")
        names = {f.name for f in fields(cls)}
        try:
            return cls(**{k: v for k, v in d.items() if k in names})
        except TypeError as e:
            raise CheckpointError(f"speech tokenizer decoder_config is malformed: {e}") from None


@dataclass(frozen=True, slots=True)
class SpeechTokenizerConfig:
    """Top level of ``speech_tokenizer/config.json``."""

    decoder: CodecDecoderConfig
    encoder: dict = field(default_factory=dict)  # raw MimiConfig fields, for the encoder
    encoder_valid_num_quantizers: int = 16
    input_sample_rate: int = 24000
    output_sample_rate: int = 24000
    decode_upsample_rate: int = 1920
    encode_downsample_rate: int = 1920

    def __post_init__(self):
        if self.decode_upsample_rate != self.decoder.samples_per_frame:
            raise CheckpointError(
                f"speech tokenizer: decode_upsample_rate {self.decode_upsample_rate} does not match the "
                f"decoder's upsampling factors ({self.decoder.samples_per_frame})"
            )

    @classmethod
    def from_dict(cls, d: dict) -> SpeechTokenizerConfig:
        model_type = d.get("model_type", MODEL_TYPE)
        if model_type != MODEL_TYPE:
            raise CheckpointError(
                f"speech tokenizer model_type {model_type!r} is not supported; expected {MODEL_TYPE!r}"
            )
        if not isinstance(d.get("decoder_config"), dict):
            raise CheckpointError("speech tokenizer config.json has no decoder_config")
        top = {f.name for f in fields(cls)} - {"decoder", "encoder"}
        return cls(
            decoder=CodecDecoderConfig.from_dict(d["decoder_config"]),
            encoder=dict(d.get("encoder_config") or {}),
            **{k: v for k, v in d.items() if k in top},
        )

    @classmethod
    def from_dir(cls, speech_tokenizer_dir: str | Path) -> SpeechTokenizerConfig:
        path = Path(speech_tokenizer_dir) / "config.json"
        try:
            d = json_limits.load_file(path)
        except FileNotFoundError:
            raise CheckpointError(f"{path} is missing: not a speech tokenizer directory") from None
        except (json.JSONDecodeError, UnicodeDecodeError) as e:
            raise CheckpointError(f"{path} is not valid JSON: {e}") from None
        if not isinstance(d, dict):
            raise CheckpointError(f"{path} does not hold a JSON object")
        return cls.from_dict(d)
