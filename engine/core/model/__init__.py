"""Model modules with the checkpoint's parameter names: ``Qwen3TTS`` is the root of ``model.safetensors``."""

from __future__ import annotations

from torch import nn

from engine.core.config import ModelConfig
from engine.core.model.talker import Talker


class Qwen3TTS(nn.Module):
    """Root module: ``talker.*`` always, ``speaker_encoder.*`` for Base models."""

    def __init__(self, config: ModelConfig):
        super().__init__()
        self.config = config
        self.talker = Talker(config.talker_config)
        if config.tts_model_type == "base":
            from engine.core.model.speaker_encoder import SpeakerEncoder

            self.speaker_encoder = SpeakerEncoder(config.speaker_encoder_config)
        else:
            self.speaker_encoder = None


__all__ = ["Qwen3TTS"]
