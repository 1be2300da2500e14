"""Loading the codec decoder: config parsing, strict checkpoint names and clear CheckpointErrors."""

from __future__ import annotations

import json
import shutil

import pytest
import torch
from safetensors.torch import load_file, save_file

from engine.core.codec.config import CodecDecoderConfig, SpeechTokenizerConfig
from engine.core.codec.decoder import SpeechDecoder
from engine.errors import CheckpointError
from engine.synthetic.speech_tokenizer import speech_tokenizer_config, write_speech_tokenizer


@pytest.fixture(scope="module")
def tokenizer_dir(tmp_path_factory):
    path = tmp_path_factory.mktemp("speech_tokenizer_tiny")
    write_speech_tokenizer(path, "tiny", seed=0)
    return path


def _copy(tokenizer_dir, tmp_path):
    target = tmp_path / "speech_tokenizer"
    shutil.copytree(tokenizer_dir, target)
    return target


def _edit_config(directory, edit) -> None:
    config = json.loads((directory / "config.json").read_text())
    edit(config)
    (directory / "config.json").write_text(json.dumps(config))


def test_full_config_reads_the_released_geometry():
    config = SpeechTokenizerConfig.from_dict(speech_tokenizer_config("full"))
    decoder = config.decoder
    assert (decoder.codebook_dim, decoder.latent_dim, decoder.hidden_size, decoder.head_dim) == (512, 1024, 512, 64)
    assert decoder.samples_per_frame == 1920 == config.decode_upsample_rate
    assert decoder.upsample_rates == (8, 5, 4, 3) and decoder.sliding_window == 72
    assert config.encoder["num_quantizers"] == 32 and config.encoder_valid_num_quantizers == 16


def test_head_dim_defaults_to_hidden_over_heads_like_the_official_config():
    config = CodecDecoderConfig(codebook_dim=64, hidden_size=96, num_attention_heads=4, num_key_value_heads=2)
    assert config.head_dim == 24


def test_loaded_parameters_are_exactly_the_files_decoder_tensors(tokenizer_dir):
    decoder = SpeechDecoder.from_dir(tokenizer_dir)
    stored = {k.removeprefix("decoder."): v for k, v in load_file(tokenizer_dir / "model.safetensors").items()
              if k.startswith("decoder.")}
    ours = decoder.state_dict()
    assert ours.keys() == stored.keys()
    assert all(torch.equal(ours[name], stored[name]) for name in stored)


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda c: c["decoder_config"].update(hidden_size=48), "shape"),
        (lambda c: c["decoder_config"].update(num_hidden_layers=3), "missing"),
        (lambda c: c["decoder_config"].pop("codebook_dim"), "codebook_dim"),
        (lambda c: c.pop("decoder_config"), "decoder_config"),
        (lambda c: c.update(model_type="qwen3_tts_tokenizer_25hz"), "25hz"),
        (lambda c: c.update(decode_upsample_rate=960), "decode_upsample_rate"),
        (lambda c: c["decoder_config"].update(hidden_act="gelu"), "hidden_act"),
    ],
)
def test_config_that_does_not_fit_the_weights_is_a_checkpoint_error(tokenizer_dir, tmp_path, edit, message):
    directory = _copy(tokenizer_dir, tmp_path)
    _edit_config(directory, edit)
    with pytest.raises(CheckpointError, match=message):
        SpeechDecoder.from_dir(directory)


def test_unexpected_decoder_tensor_is_a_checkpoint_error(tokenizer_dir, tmp_path):
    directory = _copy(tokenizer_dir, tmp_path)
    tensors = load_file(directory / "model.safetensors")
    tensors["decoder.extra.weight"] = torch.zeros(2)
    save_file(tensors, str(directory / "model.safetensors"))
    with pytest.raises(CheckpointError, match="unexpected"):
        SpeechDecoder.from_dir(directory)


@pytest.mark.parametrize("damage", ["no_config", "bad_json", "no_weights", "garbage_weights"])
def test_missing_or_corrupt_files_are_checkpoint_errors(tokenizer_dir, tmp_path, damage):
    directory = _copy(tokenizer_dir, tmp_path)
    if damage == "no_config":
        (directory / "config.json").unlink()
    elif damage == "bad_json":
        (directory / "config.json").write_text("{not json")
    elif damage == "no_weights":
        (directory / "model.safetensors").unlink()
    else:
        (directory / "model.safetensors").write_bytes(b"\x10\x00\x00\x00\x00\x00\x00\x00garbage")
    with pytest.raises(CheckpointError):
        SpeechDecoder.from_dir(directory)


def test_missing_directory_is_a_checkpoint_error(tmp_path):
    with pytest.raises(CheckpointError, match="missing"):
        SpeechDecoder.from_dir(tmp_path / "nowhere")
