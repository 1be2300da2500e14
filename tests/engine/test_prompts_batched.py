"""``build_prompts``: the prompts of several (voice, text), their texts tokenized in one call and embedded in one
pass and every position gathered from one table of rows, each equal to the prompt ``build_prompt`` makes of it
alone (every voice kind, streaming and not, with an instruction), and a refused request answered with its own
error while the others are built. (A design voice's description is the instruction: its ids go through the same
pass.)"""

from __future__ import annotations

import pytest
import torch

from engine import Voice
from engine.core.prompts import build_prompt, build_prompts
from engine.errors import TextError, VoiceError
from tests.engine.test_prompt_constants import projections, voices

TEXTS = ["The quick brown fox jumps over the lazy dog.", "Hi.", "A third text, somewhat longer than the second one."]


@pytest.mark.parametrize("non_streaming", [None, False, True])
@pytest.mark.parametrize("model_type", ["custom_voice", "voice_design", "base"])
def test_each_prompt_equals_its_prompt_alone_from_one_text_projection(tiny_engine, model_type, non_streaming):
    eng = tiny_engine(model_type)
    talker = eng.model.talker
    kinds = [v for t, v in voices(eng).values() if t == model_type]
    if model_type == "voice_design":
        kinds.append(Voice.design("a bright, quick voice", "english"))
    requests = [(voice, text) for voice in kinds for text in TEXTS]
    with torch.inference_mode():
        alone = [build_prompt(talker, eng.config, eng.tokenizer, v, text, non_streaming) for v, text in requests]
        rows = projections(talker)
        together = build_prompts(talker, eng.config, eng.tokenizer, requests, non_streaming)
    assert len(rows) == 1  # every prompt's text through the projection at once
    for got, expected in zip(together, alone, strict=True):
        for field in ("embeds", "trailing", "pad_embed"):
            a, b = getattr(got, field), getattr(expected, field)
            assert a.shape == b.shape
            torch.testing.assert_close(a, b, atol=1e-6, rtol=1e-6)


def test_a_refused_request_gets_its_own_error_and_the_others_their_prompts(tiny_engine):
    eng = tiny_engine("custom_voice")
    talker = eng.model.talker
    good = Voice.preset("vivian", "english")
    requests = [(good, TEXTS[0]), (good, "   "), (Voice.preset("nobody", "english"), TEXTS[1]), (good, TEXTS[2])]
    with torch.inference_mode():
        built = build_prompts(talker, eng.config, eng.tokenizer, requests)
        expected = [build_prompt(talker, eng.config, eng.tokenizer, good, text) for text in (TEXTS[0], TEXTS[2])]
    assert isinstance(built[1], TextError) and isinstance(built[2], VoiceError) and "nobody" in str(built[2])
    for got, want in zip((built[0], built[3]), expected, strict=True):
        torch.testing.assert_close(got.embeds, want.embeds, atol=1e-6, rtol=1e-6)
    with torch.inference_mode():
        assert all(isinstance(p, Exception) for p in build_prompts(talker, eng.config, eng.tokenizer, requests[1:3]))
    with pytest.raises(TextError):  # one prompt alone: its error raised
        build_prompt(talker, eng.config, eng.tokenizer, good, "")


def test_the_device_work_does_not_grow_with_the_number_of_prompts(tiny_engine):
    """The point of building prompts together: as many tensor operations for 24 prompts as for 2 (on a GPU each
    is a kernel launch, paid on the many-streams loop's thread); only views (each prompt's slice of the result)
    grow with them."""
    from torch.profiler import ProfilerActivity, profile

    eng = tiny_engine("custom_voice")
    talker = eng.model.talker
    voice = Voice.preset("vivian", "english")

    def operations(n: int) -> int:
        requests = [(voice, TEXTS[i % len(TEXTS)]) for i in range(n)]
        with torch.inference_mode():
            build_prompts(talker, eng.config, eng.tokenizer, requests)  # the constants, embedded once for good
            with profile(activities=[ProfilerActivity.CPU]) as prof:
                build_prompts(talker, eng.config, eng.tokenizer, requests)
        return sum(1 for e in prof.events() if e.name.startswith("aten::") and e.cpu_parent is None
                   and e.name not in VIEWS)

    assert operations(24) == operations(2) <= 20


VIEWS = {"aten::slice", "aten::unsqueeze", "aten::select", "aten::view", "aten::as_strided", "aten::alias"}
