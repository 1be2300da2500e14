"""Synthetic model directories: released tensor names and shapes, the official file layout, seeds.

The released shapes are a copy of the reference list (tests/data/qwen3_tts_tensor_shapes.json),
so this test runs wherever the checkout does.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from safetensors import safe_open

from engine.core.config import ModelConfig
from engine.core.model import Qwen3TTS
from engine.synthetic.__main__ import main as synthetic_main
from engine.synthetic.checkpoint import TYPES, build_checkpoint, config_dict

SHAPES_FILE = Path(__file__).resolve().parents[2] / "data" / "qwen3_tts_tensor_shapes.json"
RELEASED = {
    ("0.6b", "base"): "0.6B-Base",
    ("0.6b", "custom_voice"): "0.6B-CustomVoice",
    ("1.7b", "base"): "1.7B-Base",
    ("1.7b", "custom_voice"): "1.7B-CustomVoice_or_VoiceDesign",
    ("1.7b", "voice_design"): "1.7B-CustomVoice_or_VoiceDesign",
}
OFFICIAL_FILES = [
    "config.json", "generation_config.json", "merges.txt", "model.safetensors", "preprocessor_config.json",
    "speech_tokenizer/config.json", "speech_tokenizer/model.safetensors", "speech_tokenizer/preprocessor_config.json",
    "tokenizer_config.json", "vocab.json",
]


@pytest.fixture(scope="module")
def released_shapes() -> dict:
    return json.loads(SHAPES_FILE.read_text(encoding="utf-8"))


@pytest.mark.parametrize(("size", "model_type"), sorted(RELEASED))
def test_root_module_has_every_released_name_and_shape(size, model_type, released_shapes):
    with torch.device("meta"):
        model = Qwen3TTS(ModelConfig.from_dict(config_dict(size, model_type)))
    built = {name: list(t.shape) for name, t in model.state_dict().items()}
    expected = released_shapes[RELEASED[size, model_type]]
    assert sorted(set(built) - set(expected)) == []  # no tensor the release lacks
    assert sorted(set(expected) - set(built)) == []  # no released tensor missing
    assert built == expected


def test_there_is_no_small_voice_design_model():
    with pytest.raises(ValueError, match="VoiceDesign"):
        config_dict("0.6b", "voice_design")


@pytest.mark.parametrize("model_type", TYPES)
def test_tiny_directory_has_the_official_layout(model_type, tiny_model_dir):
    path = tiny_model_dir(model_type)
    files = sorted(str(p.relative_to(path)) for p in path.rglob("*") if p.is_file())
    assert files == OFFICIAL_FILES
    config = json.loads((path / "config.json").read_text(encoding="utf-8"))
    assert config["tts_model_type"] == model_type
    with safe_open(str(path / "model.safetensors"), framework="pt") as f:
        dtypes = {f.get_slice(name).get_dtype() for name in f.keys()}
        names = set(f.keys())
    assert dtypes == {"BF16"}
    assert any(n.startswith("speaker_encoder.") for n in names) == (model_type == "base")
    for name in ("vocab.json", "tokenizer_config.json", "generation_config.json", "speech_tokenizer/config.json"):
        json.loads((path / name).read_text(encoding="utf-8"))  # every JSON file parses


def test_command_line_build_is_deterministic_per_seed(tiny_model_dir, tmp_path, capsys):
    reference = tiny_model_dir("custom_voice")  # seed 0
    synthetic_main([str(tmp_path / "again"), "--size", "tiny", "--type", "custom_voice", "--seed", "0"])
    assert "wrote tiny custom_voice checkpoint" in capsys.readouterr().out
    again = tmp_path / "again"
    assert sorted(str(p.relative_to(again)) for p in again.rglob("*") if p.is_file()) == OFFICIAL_FILES
    for name in ("model.safetensors", "speech_tokenizer/model.safetensors", "config.json"):
        assert (again / name).read_bytes() == (reference / name).read_bytes(), name

    other = build_checkpoint(tmp_path / "other", "tiny", "custom_voice", seed=1)
    assert (other / "model.safetensors").read_bytes() != (reference / "model.safetensors").read_bytes()
    assert (other / "config.json").read_bytes() == (reference / "config.json").read_bytes()


@pytest.mark.parametrize(("size", "projected"), [("tiny", True), ("tiny-equal", False)])
def test_the_tiny_sizes_have_both_predictor_layouts(size, projected):
    """``tiny`` projects the talker's width to its predictor's (as the 1.7B does), ``tiny-equal`` does not (the 0.6B):
    the Numba warm-up compiles the predictor frame for both (engine.core.cpu.numba_cache.warmup)."""
    model = Qwen3TTS(ModelConfig.from_dict(config_dict(size, "custom_voice")))
    assert isinstance(model.talker.code_predictor.small_to_mtp_projection, torch.nn.Linear) == projected
