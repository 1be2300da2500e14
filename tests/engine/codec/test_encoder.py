"""Speech encoder: codes shape and range, loader errors, and equality with the official tokenizer's encode."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pytest
import torch
from safetensors.torch import load_file, save_file

from engine.core.codec.encoder import SpeechEncoder
from engine.errors import CheckpointError, VoiceError
from engine.synthetic.speech_tokenizer import write_speech_tokenizer
from tests.oracle import load_official_tokenizer, official_available

SAMPLES_PER_FRAME = 1920
# A short attention window in the config: the official loader widens it to full causal attention,
# so the codes agree only if ours does too (the test audio spans more than 16 encoder steps). The
# transformer's layer scales are raised to 1 so that attention visibly moves the codes.
CONFIG_SLIDING_WINDOW = 16


@pytest.fixture(scope="module")
def tokenizer_dir(tmp_path_factory):
    path = tmp_path_factory.mktemp("speech_tokenizer")
    write_speech_tokenizer(path, "tiny", seed=0)
    config = json.loads((path / "config.json").read_text())
    config["encoder_config"]["sliding_window"] = CONFIG_SLIDING_WINDOW
    (path / "config.json").write_text(json.dumps(config))
    tensors = load_file(str(path / "model.safetensors"))
    for name in tensors:
        if name.startswith("encoder.encoder_transformer.") and name.endswith("layer_scale.scale"):
            tensors[name] = torch.ones_like(tensors[name])
    save_file(tensors, str(path / "model.safetensors"))
    return path


@pytest.fixture(scope="module")
def encoder(tokenizer_dir):
    return SpeechEncoder.from_dir(tokenizer_dir)


def _speech_like(samples: int, seed: int = 0) -> np.ndarray:
    """Noise under a slow amplitude envelope, so frames differ from one another."""
    rng = np.random.default_rng(seed)
    envelope = 0.5 + 0.4 * np.sin(np.linspace(0, 12, samples))
    return (0.3 * envelope * rng.standard_normal(samples)).astype(np.float32)


@pytest.mark.parametrize("samples", [SAMPLES_PER_FRAME * 20, SAMPLES_PER_FRAME * 20 + 1, 31_337])
def test_codes_are_int64_frames_of_16_in_range(encoder, samples):
    codes = encoder.encode(_speech_like(samples))
    assert codes.dtype == np.int64
    assert codes.shape == (-(-samples // SAMPLES_PER_FRAME), 16)
    assert codes.min() >= 0 and codes.max() < 2048
    assert len(np.unique(codes[:, 0])) > 1


def test_codes_depend_on_the_audio_and_are_repeatable(encoder):
    audio = _speech_like(SAMPLES_PER_FRAME * 12)
    first = encoder.encode(audio)
    np.testing.assert_array_equal(encoder.encode(audio), first)
    assert (encoder.encode(_speech_like(SAMPLES_PER_FRAME * 12, seed=1)) != first).any()


def test_encoder_attention_is_fully_causal(encoder):
    windows = {m.sliding_window for m in encoder.model.modules() if hasattr(m, "sliding_window")}
    assert windows == {encoder.model.config.max_position_embeddings}


def test_bad_audio_is_rejected(encoder):
    with pytest.raises(VoiceError, match="mono"):
        encoder.encode(np.zeros((100, 2), dtype=np.float32))
    with pytest.raises(VoiceError, match="mono"):
        encoder.encode(np.zeros(0, dtype=np.float32))


def _copy_dir(source, tmp_path):
    target = tmp_path / "speech_tokenizer"
    shutil.copytree(source, target)
    return target


def test_missing_directory_or_files(tmp_path, tokenizer_dir):
    with pytest.raises(CheckpointError, match="config.json is missing"):
        SpeechEncoder.from_dir(tmp_path / "nowhere")
    broken = _copy_dir(tokenizer_dir, tmp_path)
    (broken / "model.safetensors").unlink()
    with pytest.raises(CheckpointError, match="model.safetensors is missing"):
        SpeechEncoder.from_dir(broken)


def test_truncated_weights(tmp_path, tokenizer_dir):
    broken = _copy_dir(tokenizer_dir, tmp_path)
    weights = broken / "model.safetensors"
    weights.write_bytes(weights.read_bytes()[:-1000])
    with pytest.raises(CheckpointError, match="truncated or corrupted"):
        SpeechEncoder.from_dir(broken)


def test_invalid_config_json(tmp_path, tokenizer_dir):
    broken = _copy_dir(tokenizer_dir, tmp_path)
    (broken / "config.json").write_text("{not json")
    with pytest.raises(CheckpointError, match="not valid JSON"):
        SpeechEncoder.from_dir(broken)


def test_missing_or_misshapen_encoder_tensors(tmp_path, tokenizer_dir):
    tensors = load_file(str(tokenizer_dir / "model.safetensors"))
    config = json.loads((tokenizer_dir / "config.json").read_text())
    dropped = "encoder.downsample.conv.weight"
    with pytest.raises(CheckpointError, match="missing"):
        SpeechEncoder.from_tensors(config, {k: v for k, v in tensors.items() if k != dropped})
    misshapen = dict(tensors, **{dropped: torch.zeros(3, 3, 3)})
    with pytest.raises(CheckpointError, match="has shape"):
        SpeechEncoder.from_tensors(config, misshapen)
    with pytest.raises(CheckpointError, match="unexpected"):
        SpeechEncoder.from_tensors(config, dict(tensors, **{"encoder.extra.weight": torch.zeros(1)}))
    broken = _copy_dir(tokenizer_dir, tmp_path)
    save_file({k: v for k, v in tensors.items() if k != dropped}, str(broken / "model.safetensors"))
    with pytest.raises(CheckpointError, match="missing"):
        SpeechEncoder.from_dir(broken)


@pytest.fixture
def official_tokenizer(tokenizer_dir, monkeypatch):
    """The official ``Qwen3TTSTokenizer`` on the same files.

    Recent transformers turned ``MimiModel.upsample`` and ``decoder_transformer`` into read-only
    properties, which the official encoder class assigns ``None`` to; the properties are hidden for
    the duration of the load (the encode path never reads them).
    """
    return load_official_tokenizer(tokenizer_dir, monkeypatch)


@pytest.mark.oracle
@pytest.mark.skipif(not official_available(), reason="official qwen-tts not installed")
def test_codes_equal_the_official_tokenizer(encoder, official_tokenizer):
    for samples, seed in ((SAMPLES_PER_FRAME * 30, 2), (57_001, 3)):
        audio = _speech_like(samples, seed)
        expected = official_tokenizer.encode(audio, sr=24000).audio_codes[0].numpy()
        np.testing.assert_array_equal(encoder.encode(audio), expected)
