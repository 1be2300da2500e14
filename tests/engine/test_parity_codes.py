"""Exact agreement with the official implementation: same prompts, same per-step logits, same codes.

Both sides run in float64 on the same tiny synthetic weights (drawn in float32, stored as bf16 like
a real checkpoint), with greedy decoding for the talker and the code predictor, in every mode and
sub-mode. The official model is driven through its own ``generate`` with the same token ids.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from engine.core.config import ModelConfig
from engine.core.frames.eager import FrameGenerator
from engine.core.model import Qwen3TTS
from engine.core.prompts import build_prompt
from engine.core.sampling import Sampling
from engine.core.text.segments import split_segments
from engine.synthetic.checkpoint import config_dict
from engine.synthetic.init import randomize_
from engine.voices import Voice
from tests.oracle import official_available

pytestmark = [
    pytest.mark.oracle,
    pytest.mark.skipif(not official_available(), reason="official qwen-tts not installed"),
]

FRAMES = 24
TEXT = "Hello there! This is a short test of the speech engine."
REF_TEXT = "A reference sentence, spoken before."


def _official_model(cfg_dict: dict, state: dict):
    from qwen_tts.core.models.configuration_qwen3_tts import Qwen3TTSConfig
    from qwen_tts.core.models.modeling_qwen3_tts import Qwen3TTSForConditionalGeneration

    config = Qwen3TTSConfig(**cfg_dict)
    config._attn_implementation = "sdpa"
    config.talker_config._attn_implementation = "sdpa"
    config.talker_config.code_predictor_config._attn_implementation = "sdpa"
    model = Qwen3TTSForConditionalGeneration(config).to(torch.float64)
    model.load_state_dict(state, strict=True)
    return model.eval()


class Pair:
    """Our model and the official one holding identical float64 weights."""

    def __init__(self, model_type: str, size_tag: str = "0b6"):
        d = config_dict("tiny", model_type)
        d["tts_model_size"] = size_tag
        self.config = ModelConfig.from_dict(d)
        ours = Qwen3TTS(self.config)
        randomize_(ours, seed=7)
        state = {k: v.to(torch.bfloat16).to(torch.float64) for k, v in ours.state_dict().items()}
        self.ours = ours.to(torch.float64).eval()
        self.ours.load_state_dict(state)
        self.official = _official_model(d, state)


@pytest.fixture(scope="module")
def pairs():
    cache = {}

    def get(model_type, size_tag="0b6"):
        key = (model_type, size_tag)
        if key not in cache:
            cache[key] = Pair(model_type, size_tag)
        return cache[key]

    return get


def _run_ours(pair: Pair, tok, voice: Voice, non_streaming: bool, text: str = TEXT):
    import engine.core.frames.codes

    logits = []
    head, plain = pair.ours.talker.codec_head.weight, engine.core.frames.codes.linear

    def recording(x, weight, bias=None):  # the talker's codec head goes through engine.core.frames.codes.linear
        out = plain(x, weight, bias)
        if weight is head:
            logits.append(out.detach())  # [1, V]
        return out

    engine.core.frames.codes.linear = recording
    try:
        prompt = build_prompt(pair.ours.talker, pair.config, tok, voice, text, non_streaming)
        gen = FrameGenerator(pair.ours.talker, prompt, Sampling(greedy=True), FRAMES)
        codes = [f.numpy() for f in gen.frames()]
    finally:
        engine.core.frames.codes.linear = plain
    return np.stack(codes), torch.cat(logits)


def _run_official(pair: Pair, tok, voice: Voice, non_streaming: bool, text: str = TEXT):
    logits = []
    hook = pair.official.talker.codec_head.register_forward_hook(lambda m, i, o: logits.append(o[:, -1].detach()))
    ids = lambda x: torch.tensor([x], dtype=torch.long)  # noqa: E731
    kwargs = dict(
        input_ids=[ids(tok.speech_ids(text))], languages=[voice.language], non_streaming_mode=non_streaming,
        max_new_tokens=FRAMES + 1, do_sample=False, subtalker_dosample=False, repetition_penalty=1.05,
    )
    if voice.instruct:
        kwargs["instruct_ids"] = [ids(tok.instruct_ids(voice.instruct))]
    if voice.kind == "preset":
        kwargs["speakers"] = [voice.speaker]
    if voice.kind == "clone":
        kwargs["voice_clone_prompt"] = {
            "ref_code": [torch.as_tensor(voice.ref_codes)] if voice.in_context else [None],
            "ref_spk_embedding": [torch.as_tensor(voice.speaker_embedding, dtype=torch.float64)],
            "x_vector_only_mode": [not voice.in_context],
            "icl_mode": [voice.in_context],
        }
        if voice.in_context:
            kwargs["ref_ids"] = [ids(tok.encode(f"<|im_start|>assistant\n{voice.ref_text}<|im_end|>\n"))]
    try:
        with torch.no_grad():
            codes, _ = pair.official.generate(**kwargs)
    finally:
        hook.remove()
    return codes[0].numpy(), torch.cat(logits)


def _clone_voice(pair: Pair, in_context: bool) -> Voice:
    rng = np.random.default_rng(3)
    emb = rng.standard_normal(pair.config.talker_config.hidden_size).astype(np.float32)
    if not in_context:
        return Voice("clone", language="english", speaker_embedding=emb)
    codes = rng.integers(0, 2048, size=(9, 16), dtype=np.int64)
    return Voice("clone", language="english", speaker_embedding=emb, ref_codes=codes, ref_text=REF_TEXT)


CASES = {
    "preset": ("custom_voice", "0b6", lambda p: Voice.preset("vivian", "english")),
    "preset-auto": ("custom_voice", "0b6", lambda p: Voice.preset("ryan", "auto")),
    "preset-dialect": ("custom_voice", "0b6", lambda p: Voice.preset("eric", "chinese")),
    "preset-instruct": ("custom_voice", "1b7", lambda p: Voice.preset("serena", "english", "whisper, slowly")),
    "design": ("voice_design", "1b7", lambda p: Voice.design("a calm, low male voice", "english")),
    "clone-xvector": ("base", "0b6", lambda p: _clone_voice(p, in_context=False)),
    "clone-icl": ("base", "0b6", lambda p: _clone_voice(p, in_context=True)),
}


@pytest.mark.parametrize("non_streaming", [True, False], ids=["non-streaming", "streaming"])
@pytest.mark.parametrize("case", list(CASES))
def test_greedy_codes_and_logits_match_official(pairs, text_tokenizer, case, non_streaming):
    model_type, size_tag, make_voice = CASES[case]
    pair = pairs(model_type, size_tag)
    voice = make_voice(pair)
    ours, our_logits = _run_ours(pair, text_tokenizer, voice, non_streaming)
    theirs, their_logits = _run_official(pair, text_tokenizer, voice, non_streaming)
    assert ours.shape == theirs.shape and len(ours) > 0
    np.testing.assert_array_equal(ours, theirs)
    # teacher-forced: the same inputs reach both talkers at every step
    n = min(len(our_logits), len(their_logits))
    torch.testing.assert_close(our_logits[:n].float(), their_logits[:n].float(), rtol=1e-5, atol=1e-5)


MERGED = "Quick! Close the door! It is cold outside, and the wind is up."


@pytest.mark.parametrize("case", ["preset", "design", "clone-icl"])
def test_a_multi_sentence_text_is_one_generation_equal_to_officials(pairs, text_tokenizer, case):
    """Short sentences of one line are one segment (engine.core.text.segments), so the engine speaks them as one
    generation: the official code's for the whole text, frame for frame."""
    [segment] = split_segments(MERGED)
    assert segment.text == MERGED and len(split_segments(MERGED, target_chars=0)) == 3
    model_type, size_tag, make_voice = CASES[case]
    pair = pairs(model_type, size_tag)
    voice = make_voice(pair)
    non_streaming = voice.kind != "clone"
    ours, _ = _run_ours(pair, text_tokenizer, voice, non_streaming, segment.text)
    theirs, _ = _run_official(pair, text_tokenizer, voice, non_streaming, MERGED)
    assert len(ours) > 0
    np.testing.assert_array_equal(ours, theirs)
