"""ECAPA-TDNN speaker encoder: checkpoint names and shapes, batch behaviour, parity with the official module."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from engine.core.config import SpeakerEncoderConfig
from engine.core.model.speaker_encoder import SpeakerEncoder
from engine.errors import CheckpointError
from tests.oracle import official_available

SHAPES_FILE = Path(__file__).resolve().parents[2] / "data" / "qwen3_tts_tensor_shapes.json"
TINY = dict(enc_dim=48, enc_channels=[32, 32, 32, 32, 96], enc_attention_channels=16, enc_se_channels=16)
PREFIX = "speaker_encoder."


@pytest.mark.parametrize(("checkpoint", "enc_dim"), [("0.6B-Base", 1024), ("1.7B-Base", 2048)])
def test_parameter_names_and_shapes_match_the_checkpoint(checkpoint, enc_dim):
    shapes = json.loads(SHAPES_FILE.read_text())[checkpoint]
    expected = {name[len(PREFIX):]: list(shape) for name, shape in shapes.items() if name.startswith(PREFIX)}
    with torch.device("meta"):
        encoder = SpeakerEncoder(SpeakerEncoderConfig(enc_dim=enc_dim))
    assert {name: list(t.shape) for name, t in encoder.state_dict().items()} == expected


def test_batch_rows_are_independent_and_shaped():
    torch.manual_seed(0)
    encoder = SpeakerEncoder(SpeakerEncoderConfig(**TINY)).double().eval()
    mels = torch.randn(3, 40, 128, dtype=torch.float64)
    batch = encoder(mels)
    assert batch.shape == (3, TINY["enc_dim"])
    for i in range(3):
        torch.testing.assert_close(encoder(mels[i : i + 1])[0], batch[i])
    assert not torch.allclose(batch[0], batch[1])


def test_mismatched_layer_lists_are_rejected():
    with pytest.raises(CheckpointError, match="same length"):
        SpeakerEncoder(SpeakerEncoderConfig(**dict(TINY, enc_kernel_sizes=[5, 3, 3, 1])))


@pytest.mark.oracle
@pytest.mark.skipif(not official_available(), reason="official qwen-tts not installed")
@pytest.mark.parametrize(("dtype", "tolerance"), [(torch.float64, 1e-12), (torch.float32, 1e-5)])
def test_matches_the_official_speaker_encoder(dtype, tolerance):
    from qwen_tts.core.models.configuration_qwen3_tts import Qwen3TTSSpeakerEncoderConfig
    from qwen_tts.core.models.modeling_qwen3_tts import Qwen3TTSSpeakerEncoder

    torch.manual_seed(1)
    official = Qwen3TTSSpeakerEncoder(Qwen3TTSSpeakerEncoderConfig(**TINY)).to(dtype).eval()
    ours = SpeakerEncoder(SpeakerEncoderConfig(**TINY)).to(dtype).eval()
    ours.load_state_dict(official.state_dict(), strict=True)
    mels = torch.randn(2, 57, 128, dtype=dtype)
    with torch.no_grad():
        expected = official(mels)
        torch.testing.assert_close(ours(mels), expected, rtol=tolerance, atol=tolerance)
