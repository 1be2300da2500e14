"""Model configuration: dataclasses read once from a checkpoint's ``config.json``.

Only the fields the engine uses are kept; names follow the official config files so a reader can
match them line by line. ``ModelConfig.from_dict`` is the inverse of ``ModelConfig.to_dict``, which
the synthetic-checkpoint builder uses to write configs the official code also accepts.
"""

from __future__ import annotations

import json
import re
from dataclasses import asdict, dataclass, field
from pathlib import Path

from engine import json_limits
from engine.errors import CheckpointError

MODEL_TYPES = ("base", "custom_voice", "voice_design")
MODEL_SIZES = ("0b6", "1b7")
# the codec decoder's precisions ``Engine.from_pretrained`` takes, by name: the command lines' choices
DECODER_DTYPE_NAMES = ("float32", "float64", "bfloat16", "float16")
MODEL_NAMES = {"custom_voice": "CustomVoice", "voice_design": "VoiceDesign", "base": "Base"}
_SIZE_TAG = re.compile(r"(\d+)b(\d+)")


def model_title(model_type: str, model_size: str) -> str:
    """A model as people name it, from its config's tags: ("voice_design", "0b6") -> "VoiceDesign 0.6B"; a tag
    this table does not know is shown as it is."""
    size = _SIZE_TAG.fullmatch(model_size or "")
    size_text = f"{size[1]}.{size[2]}B" if size else (model_size or "")
    return " ".join(part for part in (MODEL_NAMES.get(model_type, model_type or ""), size_text) if part)


@dataclass(slots=True)
class PredictorConfig:
    """The 5-layer code predictor that fills codebooks 1..15 of each frame."""

    hidden_size: int = 1024
    intermediate_size: int = 3072
    num_hidden_layers: int = 5
    num_attention_heads: int = 16
    num_key_value_heads: int = 8
    head_dim: int = 128
    vocab_size: int = 2048
    num_code_groups: int = 16
    rms_norm_eps: float = 1e-6
    rope_theta: float = 1_000_000.0
    max_position_embeddings: int = 65536

    def __post_init__(self):
        if self.num_attention_heads % self.num_key_value_heads:
            raise CheckpointError("code predictor: attention heads must be a multiple of kv heads")


@dataclass(slots=True)
class TalkerConfig:
    """The Qwen3 decoder that produces codebook 0 of each frame, plus its id tables."""

    hidden_size: int = 1024
    intermediate_size: int = 3072
    num_hidden_layers: int = 28
    num_attention_heads: int = 16
    num_key_value_heads: int = 8
    head_dim: int = 128
    vocab_size: int = 3072
    text_vocab_size: int = 151936
    text_hidden_size: int = 2048
    num_code_groups: int = 16
    rms_norm_eps: float = 1e-6
    rope_theta: float = 1_000_000.0
    max_position_embeddings: int = 32768
    codec_eos_token_id: int = 2150
    codec_think_id: int = 2154
    codec_nothink_id: int = 2155
    codec_think_bos_id: int = 2156
    codec_think_eos_id: int = 2157
    codec_pad_id: int = 2148
    codec_bos_id: int = 2149
    codec_language_id: dict[str, int] = field(default_factory=dict)
    spk_id: dict[str, int] = field(default_factory=dict)
    spk_is_dialect: dict[str, str | bool] = field(default_factory=dict)
    code_predictor_config: PredictorConfig = field(default_factory=PredictorConfig)

    def __post_init__(self):
        if isinstance(self.code_predictor_config, dict):
            self.code_predictor_config = _pick(PredictorConfig, self.code_predictor_config)
        if self.num_attention_heads % self.num_key_value_heads:
            raise CheckpointError("talker: attention heads must be a multiple of kv heads")


@dataclass(slots=True)
class SpeakerEncoderConfig:
    """ECAPA-TDNN speaker encoder (Base models only)."""

    mel_dim: int = 128
    enc_dim: int = 1024
    enc_channels: list[int] = field(default_factory=lambda: [512, 512, 512, 512, 1536])
    enc_kernel_sizes: list[int] = field(default_factory=lambda: [5, 3, 3, 3, 1])
    enc_dilations: list[int] = field(default_factory=lambda: [1, 2, 3, 4, 1])
    enc_attention_channels: int = 128
    enc_res2net_scale: int = 8
    enc_se_channels: int = 128
    sample_rate: int = 24000


@dataclass(slots=True)
class ModelConfig:
    """Top-level ``config.json`` of a Qwen3-TTS 12 Hz model directory."""

    tts_model_type: str
    tts_model_size: str
    talker_config: TalkerConfig
    speaker_encoder_config: SpeakerEncoderConfig | None = None
    tokenizer_type: str = "qwen3_tts_tokenizer_12hz"
    im_start_token_id: int = 151644
    im_end_token_id: int = 151645
    tts_pad_token_id: int = 151671
    tts_bos_token_id: int = 151672
    tts_eos_token_id: int = 151673

    def __post_init__(self):
        if isinstance(self.talker_config, dict):
            self.talker_config = _pick(TalkerConfig, self.talker_config)
        if isinstance(self.speaker_encoder_config, dict):
            self.speaker_encoder_config = _pick(SpeakerEncoderConfig, self.speaker_encoder_config)
        if self.tts_model_type not in MODEL_TYPES:
            raise CheckpointError(f"unknown tts_model_type {self.tts_model_type!r}; expected one of {MODEL_TYPES}")
        if self.tokenizer_type != "qwen3_tts_tokenizer_12hz":
            raise CheckpointError(
                f"tokenizer_type {self.tokenizer_type!r} is not supported: Orator runs the 12 Hz models only"
            )
        if self.tts_model_type == "base" and self.speaker_encoder_config is None:
            self.speaker_encoder_config = SpeakerEncoderConfig(enc_dim=self.talker_config.hidden_size)

    @classmethod
    def from_dict(cls, d: dict) -> ModelConfig:
        if not isinstance(d, dict):
            raise CheckpointError("config.json must hold a JSON object")
        missing = [k for k in ("tts_model_type", "tts_model_size", "talker_config") if k not in d]
        if missing:
            raise CheckpointError(f"config.json is not a Qwen3-TTS config: no {', '.join(missing)}")
        return _pick(cls, d)

    @classmethod
    def from_file(cls, path: str | Path) -> ModelConfig:
        path = Path(path)
        try:
            d = json_limits.load_file(path)
        except FileNotFoundError:
            raise CheckpointError(f"{path} is missing: not a Qwen3-TTS model directory") from None
        except (json.JSONDecodeError, UnicodeDecodeError) as e:
            raise CheckpointError(f"{path} is not valid JSON: {e}") from None
        return cls.from_dict(d)

    def to_dict(self) -> dict:
        return asdict(self)

    @property
    def languages(self) -> list[str]:
        """Languages a caller may ask for ("auto" first; dialect ids are reached through speakers)."""
        return ["auto"] + [k for k in self.talker_config.codec_language_id if "dialect" not in k]

    @property
    def speakers(self) -> list[str]:
        return list(self.talker_config.spk_id)


def _pick(cls, d: dict):
    """Build dataclass ``cls`` from ``d``, ignoring keys it does not declare."""
    names = set(cls.__dataclass_fields__)
    return cls(**{k: v for k, v in d.items() if k in names})
