"""The official implementation loads a tiny synthetic checkpoint of every type unchanged.

Every tensor the official model holds comes from the files (none left at random init, none
ignored), the speech tokenizer loads from `speech_tokenizer/`, and the official processor
tokenizes the chat wrapping to the official ids.
"""

import json

import pytest
import torch
from safetensors.torch import load_file

from tests.oracle import load_official, official_available

pytestmark = [
    pytest.mark.oracle,
    pytest.mark.skipif(not official_available(), reason="official qwen-tts not installed"),
]

CHAT_WRAPPED = "<|im_start|>assistant\nHello world.<|im_end|>\n<|im_start|>assistant\n"


def assert_state_matches_file(module: torch.nn.Module, weights_path) -> None:
    stored = load_file(weights_path)
    state = module.state_dict()
    assert sorted(state) == sorted(stored)
    for name, tensor in stored.items():
        assert torch.equal(state[name], tensor.to(state[name].dtype)), name


@pytest.mark.parametrize("model_type", ["base", "custom_voice", "voice_design"])
def test_official_code_loads_synthetic_checkpoint(tiny_model_dir, model_type):
    model_dir = tiny_model_dir(model_type)
    official = load_official(model_dir)
    config = json.loads((model_dir / "config.json").read_text(encoding="utf-8"))

    assert official.model.tts_model_type == model_type
    assert next(official.model.parameters()).dtype == torch.float64
    speakers = official.model.get_supported_speakers() or []
    assert sorted(speakers) == sorted(config["talker_config"]["spk_id"])
    assert_state_matches_file(official.model, model_dir / "model.safetensors")
    assert_state_matches_file(
        official.model.speech_tokenizer.model, model_dir / "speech_tokenizer" / "model.safetensors"
    )

    ids = official.processor(text=CHAT_WRAPPED, return_tensors="pt")["input_ids"][0].tolist()
    assert ids[:3] == [151644, 77091, 198]
    assert ids[-5:] == [151645, 198, 151644, 77091, 198]
