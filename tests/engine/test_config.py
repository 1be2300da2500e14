"""``ModelConfig``: reading official-format config.json, derived facts, and refusals."""

from __future__ import annotations

import json

import pytest

from engine.core.config import ModelConfig, PredictorConfig, SpeakerEncoderConfig, TalkerConfig
from engine.errors import CheckpointError
from engine.synthetic.checkpoint import DIALECTS, LANGUAGES, SPEAKERS, config_dict


@pytest.mark.parametrize(("size", "model_type"), [("0.6b", "base"), ("0.6b", "custom_voice"),
                                                  ("1.7b", "voice_design"), ("tiny", "base")])
def test_reads_the_official_format(size, model_type):
    d = config_dict(size, model_type)
    cfg = ModelConfig.from_dict(d)
    assert (cfg.tts_model_type, cfg.tts_model_size) == (model_type, d["tts_model_size"])
    assert isinstance(cfg.talker_config, TalkerConfig)
    assert isinstance(cfg.talker_config.code_predictor_config, PredictorConfig)
    tc, dt = cfg.talker_config, d["talker_config"]
    assert (tc.hidden_size, tc.num_hidden_layers, tc.head_dim) == (dt["hidden_size"], dt["num_hidden_layers"],
                                                                   dt["head_dim"])
    assert tc.code_predictor_config.hidden_size == dt["code_predictor_config"]["hidden_size"]
    assert isinstance(cfg.speaker_encoder_config, SpeakerEncoderConfig) == (model_type == "base")


def test_round_trip_through_to_dict():
    cfg = ModelConfig.from_dict(config_dict("tiny", "base"))
    again = ModelConfig.from_dict(json.loads(json.dumps(cfg.to_dict())))
    assert again == cfg


def test_speakers_and_languages():
    cfg = ModelConfig.from_dict(config_dict("0.6b", "custom_voice"))
    assert cfg.speakers == list(SPEAKERS)
    assert cfg.languages[0] == "auto"
    assert sorted(cfg.languages[1:]) == sorted(LANGUAGES)  # dialects are reached through speakers only
    assert not set(DIALECTS) & set(cfg.languages)
    assert ModelConfig.from_dict(config_dict("0.6b", "base")).speakers == []


def test_base_without_speaker_encoder_section_gets_the_talker_width():
    d = config_dict("1.7b", "base")
    del d["speaker_encoder_config"]
    cfg = ModelConfig.from_dict(d)
    assert cfg.speaker_encoder_config.enc_dim == 2048


def test_unknown_keys_are_ignored():
    d = config_dict("tiny", "custom_voice")
    d["some_future_field"] = 1
    d["talker_config"]["another_one"] = [1, 2]
    assert ModelConfig.from_dict(d) == ModelConfig.from_dict(config_dict("tiny", "custom_voice"))


@pytest.mark.parametrize(("change", "message"), [
    ({"tts_model_type": "narrator"}, "unknown tts_model_type"),
    ({"tokenizer_type": "qwen3_tts_tokenizer_25hz"}, "12 Hz models only"),
])
def test_refuses_unsupported_models(change, message):
    d = dict(config_dict("tiny", "custom_voice"), **change)
    with pytest.raises(CheckpointError, match=message):
        ModelConfig.from_dict(d)


@pytest.mark.parametrize("section", ["talker", "code predictor"])
def test_refuses_heads_that_do_not_group(section):
    d = config_dict("tiny", "custom_voice")
    target = d["talker_config"] if section == "talker" else d["talker_config"]["code_predictor_config"]
    target["num_key_value_heads"] = 3  # 4 heads cannot share 3 kv heads
    with pytest.raises(CheckpointError, match=section):
        ModelConfig.from_dict(d)


def test_from_file_errors(tmp_path):
    with pytest.raises(CheckpointError, match="is missing"):
        ModelConfig.from_file(tmp_path / "config.json")
    bad = tmp_path / "bad.json"
    bad.write_text("{not json", encoding="utf-8")
    with pytest.raises(CheckpointError, match="not valid JSON"):
        ModelConfig.from_file(bad)
    good = tmp_path / "good.json"
    good.write_text(json.dumps(config_dict("tiny", "voice_design")), encoding="utf-8")
    assert ModelConfig.from_file(good).tts_model_type == "voice_design"


@pytest.mark.parametrize(("content", "message"), [
    ([], "JSON object"),
    ({"model_type": "qwen3", "hidden_size": 1024}, "not a Qwen3-TTS config: no tts_model_type"),
    ({"tts_model_type": "base", "tts_model_size": "0b6"}, "no talker_config"),
])
def test_refuses_json_that_is_not_a_qwen3_tts_config(content, message):
    with pytest.raises(CheckpointError, match=message):
        ModelConfig.from_dict(content)
