"""Reference audio -> speech-tokenizer codes [T, 16], for in-context voice cloning.

The 12 Hz tokenizer's encoder is transformers' ``MimiModel`` (configured from the ``encoder_config``
of ``speech_tokenizer/config.json``) of which only the encoder half and the first 16 of 32
quantizers are used. Two details keep the codes identical to the official tokenizer's:
- attention is fully causal: the official loader widens Mimi's sliding window to
  ``max_position_embeddings`` (what transformers 4.57 computed); here it is set before construction;
- the checkpoint stores Mimi in its original flat layout (``encoder.layers.*``,
  ``encoder_transformer.*``, ``downsample.*``, ``quantizer.*``); recent transformers nest the
  encoder half, so names are mapped onto whichever layout the installed version builds.
This path runs once per voice, so it stays in float32.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import torch
from safetensors import SafetensorError, safe_open
from transformers import MimiConfig, MimiModel
from transformers.initialization import no_init_weights

from engine import json_limits
from engine.errors import CheckpointError, VoiceError

SAMPLE_RATE = 24000
CHECKPOINT_PREFIX = "encoder."  # the encoder's tensors in speech_tokenizer/model.safetensors

# Flat checkpoint names -> the nested layout of MimiModel in recent transformers (encoder half as a submodule).
_NESTED_LAYOUT = (
    ("encoder.layers.", "encoder.encoder_seanet.layers."),
    ("encoder_transformer.", "encoder.encoder_transformer."),
    ("downsample.", "encoder.downsample."),
)
_DECODER_PARTS = ("decoder", "decoder_transformer", "upsample")


class SpeechEncoder:
    """Encodes mono 24 kHz audio into codes of the 12 Hz speech tokenizer."""

    def __init__(self, model: MimiModel, num_quantizers: int, samples_per_frame: int):
        self.model = model.eval()
        self.num_quantizers = num_quantizers
        self.samples_per_frame = samples_per_frame

    @property
    def device(self) -> torch.device:
        return next(self.model.parameters()).device

    @classmethod
    def from_dir(cls, speech_tokenizer_dir: str | Path, device: str | torch.device = "cpu") -> SpeechEncoder:
        """Load ``config.json`` and the ``encoder.*`` tensors of ``model.safetensors`` from a
        ``speech_tokenizer/`` directory."""
        directory = Path(speech_tokenizer_dir)
        config = _read_config(directory / "config.json")
        tensors = _read_encoder_tensors(directory / "model.safetensors")
        return cls.from_tensors(config, tensors, device)

    @classmethod
    def from_tensors(cls, tokenizer_config: dict, tensors: dict[str, torch.Tensor],
                     device: str | torch.device = "cpu") -> SpeechEncoder:
        """Build from a parsed speech-tokenizer ``config.json`` and the tensors of its
        ``model.safetensors`` (those not named ``encoder.*`` are ignored)."""
        if int(tokenizer_config.get("input_sample_rate", SAMPLE_RATE)) != SAMPLE_RATE:
            raise CheckpointError(f"speech tokenizer: input_sample_rate must be {SAMPLE_RATE}")
        try:
            mimi_config = MimiConfig(**tokenizer_config.get("encoder_config", {}))
        except (TypeError, ValueError) as e:
            raise CheckpointError(f"speech tokenizer: invalid encoder_config: {e}") from None
        mimi_config.sliding_window = mimi_config.max_position_embeddings  # fully causal attention
        num_quantizers = int(tokenizer_config.get("encoder_valid_num_quantizers", 16))
        if not 0 < num_quantizers <= mimi_config.num_quantizers:
            raise CheckpointError(f"speech tokenizer: encoder_valid_num_quantizers {num_quantizers} is not in "
                                  f"1..{mimi_config.num_quantizers}")

        with torch.device(device), no_init_weights():
            model = MimiModel(mimi_config)
        for part in _DECODER_PARTS:
            if isinstance(model._modules.get(part), torch.nn.Module):
                setattr(model, part, None)
        _load_encoder_state(model, tensors)
        samples_per_frame = int(tokenizer_config.get("encode_downsample_rate", 1920))
        return cls(model, num_quantizers, samples_per_frame)

    @torch.inference_mode()
    def encode(self, audio_24k: np.ndarray) -> np.ndarray:
        """Mono 24 kHz float audio [N] -> codes int64 [ceil(N / 1920), num_quantizers]."""
        audio = np.asarray(audio_24k, dtype=np.float32)
        if audio.ndim != 1 or audio.size == 0:
            raise VoiceError(f"the speech encoder expects non-empty mono audio [N], got shape {audio.shape}")
        waveform = torch.from_numpy(audio).to(self.device).view(1, 1, -1)  # [B=1, C=1, N]
        codes = self.model.encode(waveform, num_quantizers=self.num_quantizers).audio_codes  # [1, Q, T']
        frames = -(-audio.size // self.samples_per_frame)
        return codes[0, :, :frames].transpose(0, 1).to(torch.int64).cpu().numpy()  # [T, Q]


def _read_config(path: Path) -> dict:
    try:
        return json_limits.load_file(path)
    except FileNotFoundError:
        raise CheckpointError(f"{path} is missing: not a speech_tokenizer directory") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise CheckpointError(f"{path} is not valid JSON: {e}") from None


def _read_encoder_tensors(path: Path) -> dict[str, torch.Tensor]:
    if not path.is_file():
        raise CheckpointError(f"{path} is missing: the speech tokenizer weights are needed to encode references")
    try:
        with safe_open(str(path), framework="pt") as f:
            return {name: f.get_tensor(name) for name in f.keys() if name.startswith(CHECKPOINT_PREFIX)}
    except (SafetensorError, OSError) as e:
        raise CheckpointError(f"{path} cannot be read (truncated or corrupted?): {e}") from None


def _load_encoder_state(model: MimiModel, tensors: dict[str, torch.Tensor]) -> None:
    """Copy checkpoint tensors into ``model``; every encoder-side tensor must be present with its shape."""
    expected = model.state_dict()
    loaded = {}
    for name, tensor in tensors.items():
        if not name.startswith(CHECKPOINT_PREFIX):
            continue
        flat = name[len(CHECKPOINT_PREFIX):]
        target = flat if flat in expected else _nested_name(flat)
        if target not in expected:
            raise CheckpointError(f"speech tokenizer: unexpected encoder tensor {name!r}")
        if tuple(tensor.shape) != tuple(expected[target].shape):
            raise CheckpointError(f"speech tokenizer: {name} has shape {tuple(tensor.shape)}, the encoder_config "
                                  f"implies {tuple(expected[target].shape)}")
        loaded[target] = tensor
    missing = sorted(set(expected) - set(loaded))
    if missing:
        raise CheckpointError(f"speech tokenizer: {len(missing)} encoder tensors are missing "
                              f"(MimiModel names, e.g. {', '.join(missing[:3])})")
    model.load_state_dict(loaded, strict=True)


def _nested_name(flat_name: str) -> str:
    for flat_prefix, nested_prefix in _NESTED_LAYOUT:
        if flat_name.startswith(flat_prefix):
            return nested_prefix + flat_name[len(flat_prefix):]
    return flat_name
