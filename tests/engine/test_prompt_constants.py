"""The embeddings every prompt shares (special tokens, the role prefix, codec control ids, preset
speakers) are computed once per set of weights: later prompts come out identical with only their own
text projected, and the kept embeddings are dropped when the weights change."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from engine import Voice
from engine.core.prompts import build_prompt

TEXT = "The quick brown fox jumps over the lazy dog."


def voices(eng) -> dict[str, tuple[str, Voice]]:
    rng = np.random.default_rng(0)
    emb = rng.standard_normal(eng.config.talker_config.hidden_size).astype(np.float32)
    return {
        "preset": ("custom_voice", Voice.preset("vivian", "english")),
        "design": ("voice_design", Voice.design("a calm, low voice", "english")),
        "xvector": ("base", Voice("clone", language="english", speaker_embedding=emb)),
        "icl": ("base", Voice("clone", language="english", speaker_embedding=emb, ref_text="Reference words.",
                              ref_codes=rng.integers(0, 2048, size=(12, 16)))),
    }


def projections(talker) -> list[int]:
    """Rows through the text projection, per call, while the returned list is alive (a forward hook)."""
    rows: list[int] = []
    talker.text_projection.register_forward_hook(lambda m, args, out: rows.append(args[0].shape[-2]))
    return rows


@pytest.mark.parametrize("mode", ["preset", "design", "xvector", "icl"])
@pytest.mark.parametrize("non_streaming", [False, True])
def test_a_warm_prompt_equals_a_cold_one_and_projects_only_its_own_text(tiny_engine, mode, non_streaming):
    model_type, voice = voices(tiny_engine("custom_voice"))[mode]
    eng = tiny_engine(model_type)
    talker = eng.model.talker
    talker._constants_of = None  # as if just loaded: nothing kept
    rows = projections(talker)
    with torch.inference_mode():
        cold = build_prompt(talker, eng.config, eng.tokenizer, voice, TEXT, non_streaming)
        cold_calls = len(rows)
        warm = build_prompt(talker, eng.config, eng.tokenizer, voice, TEXT, non_streaming)
    for a, b in [(cold.embeds, warm.embeds), (cold.trailing, warm.trailing), (cold.pad_embed, warm.pad_embed)]:
        assert torch.equal(a, b)
    warm_calls = len(rows) - cold_calls
    assert warm_calls >= 1 and cold_calls - warm_calls == 2  # cold also projects bos/eos/pad and the role prefix


def test_kept_embeddings_are_those_of_the_ids_and_shared(tiny_engine):
    talker = tiny_engine("custom_voice").model.talker
    talker._constants_of = None  # as if just loaded: nothing kept
    with torch.inference_mode():
        text = talker.embed_constant("text", (5, 7, 9))
        codec = talker.embed_constant("codec", (3, 4))
        assert torch.equal(text, talker.embed_text(torch.tensor([[5, 7, 9]])))
        assert torch.equal(codec, talker.embed_codec(torch.tensor([[3, 4]])))
        assert talker.embed_constant("text", (5, 7, 9)) is text and talker.embed_constant("codec", (3, 4)) is codec
        assert not torch.equal(talker.embed_constant("codec", (5, 7, 9)), text)  # the track is part of the key


def test_weights_cast_or_replaced_drop_the_kept_embeddings(tiny_model_dir):
    from engine import Engine

    eng = Engine.from_pretrained(tiny_model_dir("custom_voice"), device="cpu")  # its own weights, to change
    voice = Voice.preset("vivian", "english")
    talker = eng.model.talker
    with torch.inference_mode():
        build_prompt(talker, eng.config, eng.tokenizer, voice, TEXT)  # keeps float32 embeddings
        talker.double()
        cast = build_prompt(talker, eng.config, eng.tokenizer, voice, TEXT)
        assert cast.embeds.dtype == torch.float64
        fresh = Engine.from_pretrained(tiny_model_dir("custom_voice"), device="cpu", dtype=torch.float64)
        assert torch.equal(cast.embeds, build_prompt(fresh.model.talker, eng.config, eng.tokenizer, voice, TEXT).embeds)
        talker.model.text_embedding.weight.data = talker.model.text_embedding.weight.data * 2  # new weights
        doubled = build_prompt(talker, eng.config, eng.tokenizer, voice, TEXT)
        assert not torch.equal(doubled.embeds, cast.embeds)

