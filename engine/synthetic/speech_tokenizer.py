"""Synthetic ``speech_tokenizer/`` directory: official file layout and tensor names, random weights.

``full`` reproduces every tensor name and shape of the released 12 Hz tokenizer. ``tiny`` keeps
what the interfaces depend on (16 codebooks of 2048, 1920 samples per frame through the same
upsampling rates, 24 kHz, the 72-frame attention window) with few, narrow layers, so CPU tests
run in seconds.

The decoder weights come from a seeded init of our own ``SpeechDecoder`` (norms near one, Snake
log-parameters near zero, positive codebook usage, small layer scales); the encoder weights from
transformers' ``MimiModel`` built from the encoder config and seeded the same way, with its decoder
half dropped. As in the released file, all 32 quantizers are stored (the tokenizer uses the first
16) under Mimi's original flat names (``encoder.encoder.layers.*``, ``encoder.quantizer.*``, ...).
"""

from __future__ import annotations

import json
import re
import zlib
from pathlib import Path

import torch
from safetensors.torch import save_file

from engine.core.codec.config import SpeechTokenizerConfig
from engine.core.codec.decoder import SpeechDecoder
from engine.synthetic.init import randomize_

SIZES = ("tiny", "full")
VALID_QUANTIZERS = 16

_DECODER = {
    "full": {
        "codebook_dim": 512, "latent_dim": 1024, "decoder_dim": 1536, "hidden_size": 512,
        "intermediate_size": 1024, "num_hidden_layers": 8, "num_attention_heads": 16,
        "num_key_value_heads": 16, "head_dim": 64,
    },
    "tiny": {
        "codebook_dim": 32, "latent_dim": 32, "decoder_dim": 64, "hidden_size": 32,
        "intermediate_size": 64, "num_hidden_layers": 2, "num_attention_heads": 2,
        "num_key_value_heads": 1, "head_dim": 16,
    },
}
_DECODER_COMMON = {
    "attention_bias": False, "attention_dropout": 0.0, "codebook_size": 2048, "hidden_act": "silu",
    "layer_scale_initial_scale": 0.01, "max_position_embeddings": 8000, "num_quantizers": 16,
    "num_semantic_quantizers": 1, "rms_norm_eps": 1e-5, "rope_theta": 10000, "semantic_codebook_size": 4096,
    "sliding_window": 72, "upsample_rates": [8, 5, 4, 3], "upsampling_ratios": [2, 2],
}
# MimiConfig class defaults, written out so the file reads the same under any transformers release.
_ENCODER_FULL = {
    "_frame_rate": 12.5, "audio_channels": 1, "codebook_dim": 256, "codebook_size": 2048, "compress": 2,
    "dilation_growth_rate": 2, "head_dim": 64, "hidden_act": "gelu", "hidden_size": 512,
    "initializer_range": 0.02, "intermediate_size": 2048, "kernel_size": 7, "last_kernel_size": 3,
    "layer_scale_initial_scale": 0.01, "max_position_embeddings": 8000, "model_type": "mimi",
    "norm_eps": 1e-5, "normalize": False, "num_attention_heads": 8, "num_filters": 64,
    "num_hidden_layers": 8, "num_key_value_heads": 8, "num_quantizers": 32, "num_residual_layers": 1,
    "num_semantic_quantizers": 1, "pad_mode": "constant", "residual_kernel_size": 3, "rope_theta": 10000.0,
    "sampling_rate": 24000, "sliding_window": 250, "trim_right_ratio": 1.0, "upsample_groups": 512,
    "upsampling_ratios": [8, 6, 5, 4], "use_cache": False, "use_causal_conv": True,
    "use_conv_shortcut": False, "vector_quantization_hidden_dimension": 256,
}
_ENCODER_TINY = dict(
    _ENCODER_FULL, codebook_dim=32, head_dim=16, hidden_size=64, intermediate_size=128, num_attention_heads=4,
    num_filters=8, num_hidden_layers=1, num_key_value_heads=4, upsample_groups=64,
    vector_quantization_hidden_dimension=32,
)
PREPROCESSOR_CONFIG = {
    "chunk_length_s": None, "feature_extractor_type": "EncodecFeatureExtractor", "feature_size": 1,
    "overlap": None, "padding_side": "right", "padding_value": 0.0, "return_attention_mask": True,
    "sampling_rate": 24000,
}

# Mimi's transformers-5 module paths -> the flat layout of the released checkpoint (and of transformers 4)
_FLAT_ENCODER_NAMES = (
    (r"^encoder\.encoder_seanet\.", "encoder."),
    (r"^encoder\.encoder_transformer\.", "encoder_transformer."),
    (r"^encoder\.downsample\.", "downsample."),
)
_DROPPED_ENCODER = re.compile(r"^(decoder|decoder_transformer|upsample)\.")


def speech_tokenizer_config(size: str) -> dict:
    """The ``config.json`` of a synthetic speech tokenizer, in the official layout."""
    if size not in SIZES:
        raise ValueError(f"size must be one of {SIZES}")
    return {
        "architectures": ["Qwen3TTSTokenizerV2Model"],
        "model_type": "qwen3_tts_tokenizer_12hz",
        "encoder_valid_num_quantizers": VALID_QUANTIZERS,
        "input_sample_rate": 24000,
        "output_sample_rate": 24000,
        "decode_upsample_rate": 1920,
        "encode_downsample_rate": 1920,
        "encoder_config": dict(_ENCODER_FULL if size == "full" else _ENCODER_TINY),
        "decoder_config": dict(_DECODER_COMMON, **_DECODER[size]),
    }


@torch.no_grad()
def random_decoder(size: str, seed: int, device: str | torch.device = "cpu") -> SpeechDecoder:
    """Our ``SpeechDecoder`` of ``size`` with seeded random weights (left uninitialised on ``meta``)."""
    cfg = SpeechTokenizerConfig.from_dict(speech_tokenizer_config(size)).decoder
    with torch.device(device):
        decoder = SpeechDecoder(cfg)
    if torch.device(device).type == "meta":
        return decoder
    randomize_(decoder, seed)
    for name, p in decoder.named_parameters():
        g = torch.Generator().manual_seed(zlib.crc32(f"{seed}:{name}".encode()))
        if name.endswith("cluster_usage"):
            p.copy_(torch.rand(p.shape, generator=g) * 1.5 + 0.5)
        elif name.endswith("embedding_sum"):
            usage = decoder.get_parameter(name.replace("embedding_sum", "cluster_usage"))
            p.copy_(torch.randn(p.shape, generator=g) * usage[:, None])
        elif name.endswith((".alpha", ".beta")):
            p.copy_(0.1 * torch.randn(p.shape, generator=g))
        elif name.endswith(("layer_scale.scale", ".gamma")):
            p.copy_(0.1 * (1.0 + 0.1 * torch.randn(p.shape, generator=g)))
        elif name.endswith("conv2.conv.weight"):  # residual branches of the upsampling blocks
            p.mul_(0.2)
    return decoder.eval()


@torch.no_grad()
def random_encoder_tensors(size: str, seed: int, device: str | torch.device = "cpu") -> dict[str, torch.Tensor]:
    """``encoder.*`` tensors: a seeded ``MimiModel`` minus its decoder half, under the flat Mimi names."""
    from transformers import MimiConfig, MimiModel

    config = MimiConfig(**speech_tokenizer_config(size)["encoder_config"])
    with torch.random.fork_rng(devices=[]), torch.device(device):
        torch.manual_seed(seed)
        model = MimiModel(config)
    tensors = {}
    for name, tensor in model.state_dict().items():
        for pattern, flat in _FLAT_ENCODER_NAMES:
            name = re.sub(pattern, flat, name)
        if _DROPPED_ENCODER.match(name):
            continue
        tensors["encoder." + name] = tensor
    if torch.device(device).type != "meta":
        _fill_encoder_codebooks(tensors, seed)
    return tensors


def _fill_encoder_codebooks(tensors: dict[str, torch.Tensor], seed: int) -> None:
    """Give every encoder codebook distinct, used entries (a fresh Mimi holds all-zero codebooks)."""
    g = torch.Generator().manual_seed(seed + 1)
    for name in sorted(tensors):
        if name.endswith("codebook.embed_sum"):
            usage = torch.rand(tensors[name].shape[0], generator=g) + 0.5
            tensors[name] = torch.randn(tensors[name].shape, generator=g) * usage[:, None]
            tensors[name.replace("embed_sum", "cluster_usage")] = usage
            tensors[name.replace("embed_sum", "initialized")] = torch.ones_like(
                tensors[name.replace("embed_sum", "initialized")]
            )


def build_state_dict(size: str, seed: int, device: str | torch.device = "cpu") -> dict[str, torch.Tensor]:
    """Every tensor of the synthetic ``model.safetensors`` (names ``encoder.*`` and ``decoder.*``)."""
    tensors = random_encoder_tensors(size, seed, device)
    decoder = random_decoder(size, seed, device)
    tensors.update({"decoder." + name: t for name, t in decoder.state_dict().items()})
    return tensors


def write_speech_tokenizer(out_dir: Path, size: str, seed: int) -> None:
    """Write ``config.json``, ``model.safetensors`` (float32) and ``preprocessor_config.json`` to ``out_dir``."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    config = speech_tokenizer_config(size)
    (out_dir / "config.json").write_text(json.dumps(config, indent=2) + "\n", encoding="utf-8")
    preprocessor = json.dumps(PREPROCESSOR_CONFIG, indent=2) + "\n"
    (out_dir / "preprocessor_config.json").write_text(preprocessor, encoding="utf-8")
    tensors = {k: v.detach().float().contiguous() for k, v in build_state_dict(size, seed).items()}
    save_file(tensors, str(out_dir / "model.safetensors"), metadata={"format": "pt"})
