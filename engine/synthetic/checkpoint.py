"""Build a complete synthetic Qwen3-TTS model directory: official layout, random weights.

``tiny`` keeps every id, vocabulary and structural feature (16 codebooks, 3072 codec ids, 151936
text rows, a projection between talker and predictor widths, as the 1.7B has) with few, narrow layers, so CPU
tests run in seconds; ``tiny-equal`` is ``tiny`` with a predictor as wide as its talker (the 0.6B's layout).
``0.6b`` and ``1.7b`` reproduce every tensor name and shape of the released checkpoints, for GPU benchmarks (random
weights change nothing about speed).
"""

from __future__ import annotations

import json
from pathlib import Path

import torch
from safetensors.torch import save_file

from engine.core.config import ModelConfig
from engine.core.model import Qwen3TTS
from engine.synthetic.init import randomize_
from engine.synthetic.text_tokenizer import write_text_tokenizer

SIZES = ("tiny", "tiny-equal", "0.6b", "1.7b")
TYPES = ("base", "custom_voice", "voice_design")

LANGUAGES = {
    "chinese": 2055, "english": 2050, "german": 2053, "italian": 2070, "portuguese": 2071,
    "spanish": 2054, "japanese": 2058, "korean": 2064, "french": 2061, "russian": 2069,
}
DIALECTS = {"beijing_dialect": 2074, "sichuan_dialect": 2062}
SPEAKERS = {
    "aiden": 2861, "sohee": 2864, "ono_anna": 2873, "eric": 2875, "dylan": 2878,
    "uncle_fu": 3010, "ryan": 3061, "vivian": 3065, "serena": 3066,
}
SPEAKER_DIALECT = {"eric": "sichuan_dialect", "dylan": "beijing_dialect"}

# width, intermediate, layers, heads, kv heads, head_dim, text width, mrope sections (sum = head_dim/2)
_TALKER = {
    "tiny": (64, 128, 2, 4, 2, 16, 32, [4, 2, 2]),
    "tiny-equal": (64, 128, 2, 4, 2, 16, 32, [4, 2, 2]),
    "0.6b": (1024, 3072, 28, 16, 8, 128, 2048, [24, 20, 20]),
    "1.7b": (2048, 6144, 28, 16, 8, 128, 2048, [24, 20, 20]),
}
_PREDICTOR = {
    "tiny": (48, 96, 2, 4, 2, 16),
    "tiny-equal": (64, 128, 2, 4, 2, 16),
    "0.6b": (1024, 3072, 5, 16, 8, 128),
    "1.7b": (1024, 3072, 5, 16, 8, 128),
}
_SPEAKER_ENCODER_TINY = {
    "enc_channels": [32, 32, 32, 32, 96], "enc_attention_channels": 16, "enc_se_channels": 16,
}


def config_dict(size: str, model_type: str) -> dict:
    """The ``config.json`` of a synthetic model, in the official format."""
    if size not in SIZES:
        raise ValueError(f"size must be one of {SIZES}")
    if model_type not in TYPES:
        raise ValueError(f"type must be one of {TYPES}")
    if model_type == "voice_design" and size == "0.6b":
        raise ValueError("no 0.6B VoiceDesign model exists")
    hidden, inter, layers, heads, kv, head_dim, text_hidden, mrope = _TALKER[size]
    p_hidden, p_inter, p_layers, p_heads, p_kv, p_head_dim = _PREDICTOR[size]
    custom = model_type == "custom_voice"
    languages = dict(LANGUAGES, **(DIALECTS if custom else {}))
    predictor = {
        "model_type": "qwen3_tts_talker_code_predictor",
        "hidden_size": p_hidden, "intermediate_size": p_inter, "num_hidden_layers": p_layers,
        "num_attention_heads": p_heads, "num_key_value_heads": p_kv, "head_dim": p_head_dim,
        "vocab_size": 2048, "num_code_groups": 16, "hidden_act": "silu", "rms_norm_eps": 1e-6,
        "rope_theta": 1000000, "max_position_embeddings": 65536, "attention_bias": False,
        "use_sliding_window": False, "layer_types": ["full_attention"] * p_layers,
    }
    talker = {
        "model_type": "qwen3_tts_talker",
        "hidden_size": hidden, "intermediate_size": inter, "num_hidden_layers": layers,
        "num_attention_heads": heads, "num_key_value_heads": kv, "head_dim": head_dim,
        "vocab_size": 3072, "text_vocab_size": 151936, "text_hidden_size": text_hidden,
        "num_code_groups": 16, "hidden_act": "silu", "rms_norm_eps": 1e-6, "rope_theta": 1000000,
        "max_position_embeddings": 32768, "attention_bias": False, "use_sliding_window": False,
        "rope_scaling": {"interleaved": True, "mrope_section": mrope, "rope_type": "default", "type": "default"},
        "codec_eos_token_id": 2150, "codec_think_id": 2154, "codec_nothink_id": 2155,
        "codec_think_bos_id": 2156, "codec_think_eos_id": 2157, "codec_pad_id": 2148, "codec_bos_id": 2149,
        "codec_language_id": languages,
        "spk_id": dict(SPEAKERS) if custom else {},
        "spk_is_dialect": {s: SPEAKER_DIALECT.get(s, False) for s in SPEAKERS} if custom else {},
        "code_predictor_config": predictor,
    }
    d = {
        "architectures": ["Qwen3TTSForConditionalGeneration"],
        "model_type": "qwen3_tts",
        "tts_model_type": model_type,
        "tts_model_size": "1b7" if size == "1.7b" else "0b6",
        "tokenizer_type": "qwen3_tts_tokenizer_12hz",
        "im_start_token_id": 151644, "im_end_token_id": 151645,
        "tts_pad_token_id": 151671, "tts_bos_token_id": 151672, "tts_eos_token_id": 151673,
        "talker_config": talker,
    }
    if model_type == "base":
        enc = {"enc_dim": hidden, "sample_rate": 24000}
        if size.startswith("tiny"):
            enc.update(_SPEAKER_ENCODER_TINY)
        d["speaker_encoder_config"] = enc
    return d


GENERATION_CONFIG = {
    "do_sample": True, "temperature": 0.9, "top_k": 50, "top_p": 1.0, "repetition_penalty": 1.05,
    "subtalker_dosample": True, "subtalker_temperature": 0.9, "subtalker_top_k": 50, "subtalker_top_p": 1.0,
    "max_new_tokens": 8192,
}


HEADS = ("random", "never_ends", "stuck", "ends_early")  # build_checkpoint's codec heads


def build_checkpoint(out: str | Path, size: str = "tiny", model_type: str = "custom_voice",
                     seed: int = 0, dtype: torch.dtype = torch.bfloat16, head: str = "random") -> Path:
    """Write a complete model directory at ``out`` and return its path.

    ``head`` makes models that misbehave for the runaway guard's tests, under greedy decoding without
    repetition penalty (argmax takes the first of a tie): "never_ends" copies code 0's row of the codec head
    to EOS's, so EOS ties with code 0 and is never chosen; "stuck" copies it to every row, so code 0 is 0 at
    every step (a loop of one frame) and EOS never comes; "ends_early" makes EOS's row code 0's times 64, so EOS
    wins at the first step where code 0's logit is positive (a few frames in: utterances that end by
    themselves); "random" leaves the head as drawn."""
    if head not in HEADS:
        raise ValueError(f"head must be one of {', '.join(HEADS)}, not {head!r}")
    out = Path(out)
    cfg = config_dict(size, model_type)
    out.mkdir(parents=True, exist_ok=True)
    (out / "config.json").write_text(json.dumps(cfg, indent=2) + "\n", encoding="utf-8")
    (out / "generation_config.json").write_text(json.dumps(GENERATION_CONFIG, indent=2) + "\n", encoding="utf-8")
    write_text_tokenizer(out)

    model = Qwen3TTS(ModelConfig.from_dict(cfg))
    randomize_(model, seed)
    with torch.no_grad():
        rows = model.talker.codec_head.weight  # [3072, H]
        if head == "never_ends":
            rows[cfg["talker_config"]["codec_eos_token_id"]] = rows[0]
        elif head == "stuck":
            rows[:] = rows[0]
        elif head == "ends_early":
            rows[cfg["talker_config"]["codec_eos_token_id"]] = 64 * rows[0]
    state = {k: v.detach().to(dtype).contiguous() for k, v in model.state_dict().items()}
    del model
    save_file(state, str(out / "model.safetensors"), metadata={"format": "pt"})
    del state
    from engine.synthetic.speech_tokenizer import write_speech_tokenizer

    write_speech_tokenizer(out / "speech_tokenizer", "tiny" if size.startswith("tiny") else "full", seed)
    return out
