"""Synthetic speech tokenizer: the released names and shapes, sensible values, official loading."""

from __future__ import annotations

import json
import pathlib

import pytest
import torch
from safetensors import safe_open

from engine.core.codec.config import SpeechTokenizerConfig
from engine.core.codec.decoder import SpeechDecoder
from engine.synthetic.speech_tokenizer import build_state_dict, random_decoder, write_speech_tokenizer
from tests.oracle import load_official_tokenizer, official_available

SHAPES_JSON = pathlib.Path(__file__).resolve().parents[2] / "data" / "qwen3_tts_tensor_shapes.json"


@pytest.fixture(scope="module")
def tokenizer_dir(tmp_path_factory):
    path = tmp_path_factory.mktemp("speech_tokenizer_tiny")
    write_speech_tokenizer(path, "tiny", seed=0)
    return path


def test_full_size_has_every_released_name_and_shape():
    released = json.loads(SHAPES_JSON.read_text())["speech_tokenizer"]
    built = {name: list(t.shape) for name, t in build_state_dict("full", seed=0, device="meta").items()}
    assert built == released


def test_tiny_directory_holds_the_official_files_in_float32(tokenizer_dir):
    assert sorted(p.name for p in tokenizer_dir.iterdir()) == [
        "config.json", "model.safetensors", "preprocessor_config.json"]
    preprocessor = json.loads((tokenizer_dir / "preprocessor_config.json").read_text())
    assert preprocessor["feature_extractor_type"] == "EncodecFeatureExtractor"
    assert preprocessor["sampling_rate"] == 24000
    config = SpeechTokenizerConfig.from_dir(tokenizer_dir)
    assert (config.decoder.codebook_size, config.decoder.num_quantizers, config.decoder.samples_per_frame) == (
        2048, 16, 1920)
    assert config.output_sample_rate == 24000
    with safe_open(str(tokenizer_dir / "model.safetensors"), framework="pt") as f:
        names = list(f.keys())
        assert {name.split(".")[0] for name in names} == {"encoder", "decoder"}
        assert all(f.get_slice(name).get_dtype() == "F32" for name in names)


def test_same_seed_same_weights_other_seed_other_weights():
    first, again, other = (random_decoder("tiny", seed).state_dict() for seed in (0, 0, 1))
    assert all(torch.equal(first[name], again[name]) for name in first)
    assert not torch.equal(first["pre_conv.conv.weight"], other["pre_conv.conv.weight"])


def test_decoder_values_are_in_their_natural_ranges():
    tensors = random_decoder("tiny", seed=0).state_dict()
    usages = [t for name, t in tensors.items() if name.endswith("cluster_usage")]
    assert len(usages) == 16 and all(u.min() > 0.1 for u in usages)
    norms = [t for name, t in tensors.items() if name.endswith("norm.weight")]
    assert all((n - 1).abs().max() < 0.5 for n in norms)
    snakes = [t for name, t in tensors.items() if name.endswith((".alpha", ".beta"))]
    assert all(s.abs().max() < 1 for s in snakes)
    scales = [t for name, t in tensors.items() if name.endswith("layer_scale.scale")]
    assert all(0 < s.min() and s.max() < 0.5 for s in scales)


def test_tiny_decoder_makes_unsaturated_audio(tokenizer_dir):
    codes = torch.randint(0, 2048, (1, 20, 16), generator=torch.Generator().manual_seed(0))
    audio = SpeechDecoder.from_dir(tokenizer_dir).decode(codes)
    assert 0.02 < audio.std() < 0.6
    assert (audio.abs() >= 1).float().mean() < 0.01


@pytest.fixture
def official_tokenizer(tokenizer_dir, monkeypatch):
    """The official ``Qwen3TTSTokenizer`` loaded from the directory as written.

    Recent transformers made ``MimiModel.upsample`` / ``decoder_transformer`` read-only properties,
    which the official encoder class assigns ``None`` to; they are hidden during the load.
    """
    return load_official_tokenizer(tokenizer_dir, monkeypatch)


@pytest.mark.oracle
@pytest.mark.skipif(not official_available(), reason="official qwen-tts not installed")
def test_official_tokenizer_loads_the_directory_and_decodes_like_ours(tokenizer_dir, official_tokenizer):
    ours = SpeechDecoder.from_dir(tokenizer_dir)
    official_decoder = official_tokenizer.model.decoder
    loaded = official_decoder.state_dict()
    assert all(torch.equal(loaded[name], t) for name, t in ours.state_dict().items())
    codes = torch.randint(0, 2048, (1, 40, 16), generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        expected = official_decoder(codes.transpose(1, 2))[:, 0]
    torch.testing.assert_close(ours.decode(codes), expected, rtol=0, atol=1e-5)
