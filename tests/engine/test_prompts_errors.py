"""Bad input gets a clear, typed error, and leaves nothing half-done: the same engine still speaks.

Each test provokes one refusal on a tiny engine, checks the error type and that its message names
the problem, then generates again and expects exactly the codes the engine gave before the error.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engine import Sampling, TextError, UnsupportedError, Voice, VoiceError, load_voice, save_voice

GREEDY = Sampling(greedy=True)
FRAMES = 3
TEXT = "Hello there."


def clone_voice(width: int) -> Voice:
    """An already-encoded x-vector clone (no reference audio needed)."""
    embedding = np.random.default_rng(0).standard_normal(width).astype(np.float32)
    return Voice("clone", speaker_embedding=embedding)


def reference_audio() -> tuple[np.ndarray, int]:
    t = np.arange(24000 * 2) / 24000
    return (0.3 * np.sin(2 * np.pi * 220 * t)).astype(np.float32), 24000


@pytest.fixture(scope="module")
def speaks(tiny_engine):
    """``speaks(model_type)`` asserts that engine still generates what it generated before any error."""
    good_voices = {
        "custom_voice": lambda eng: Voice.preset("vivian", "english"),
        "voice_design": lambda eng: Voice.design("a calm low voice", "english"),
        "base": lambda eng: clone_voice(eng.config.talker_config.hidden_size),
    }
    before = {}

    def generate(model_type):
        eng = tiny_engine(model_type)
        return eng.generate_codes(TEXT, good_voices[model_type](eng), GREEDY, max_frames=FRAMES)

    def check(model_type: str) -> None:
        if model_type not in before:
            before[model_type] = generate(model_type)
        assert before[model_type].shape == (FRAMES, 16)
        np.testing.assert_array_equal(generate(model_type), before[model_type])

    for model_type in good_voices:  # record each engine's output before any test provokes an error
        check(model_type)
    return check


@pytest.mark.parametrize("text", ["", "   ", "\n\t \n", None])
def test_empty_text(tiny_engine, speaks, text):
    eng = tiny_engine("custom_voice")
    with pytest.raises(TextError, match="no text"):
        eng.generate_codes(text, Voice.preset("vivian", "english"), GREEDY, max_frames=FRAMES)
    with pytest.raises(TextError, match="no text"):
        next(eng.stream(text, Voice.preset("vivian", "english"), sampling=GREEDY, max_frames=FRAMES))
    speaks("custom_voice")


def test_unknown_speaker_lists_the_speakers(tiny_engine, speaks):
    eng = tiny_engine("custom_voice")
    with pytest.raises(VoiceError, match="unknown speaker 'nobody'") as err:
        eng.synthesize(TEXT, Voice.preset("nobody", "english"), GREEDY, max_frames=FRAMES)
    assert all(name in str(err.value) for name in eng.speakers)
    speaks("custom_voice")


def test_unsupported_language_lists_the_languages(tiny_engine, speaks):
    eng = tiny_engine("custom_voice")
    with pytest.raises(VoiceError, match="unsupported language 'klingon'") as err:
        eng.generate_codes(TEXT, Voice.preset("vivian", "klingon"), GREEDY, max_frames=FRAMES)
    assert "english" in str(err.value)
    speaks("custom_voice")


def test_voice_design_needs_a_description(tiny_engine, speaks):
    with pytest.raises(VoiceError, match="description"):
        Voice.design("   ")
    eng = tiny_engine("voice_design")
    with pytest.raises(VoiceError, match="description"):
        eng.generate_codes(TEXT, Voice("design", language="english"), GREEDY, max_frames=FRAMES)
    speaks("voice_design")


def test_preset_speaker_on_a_base_model(tiny_engine, speaks):
    with pytest.raises(VoiceError, match="needs a CustomVoice model, but this is a Base model"):
        tiny_engine("base").generate_codes(TEXT, Voice.preset("vivian"), GREEDY, max_frames=FRAMES)
    speaks("base")


def test_clone_on_a_custom_voice_model(tiny_engine, speaks):
    eng = tiny_engine("custom_voice")
    with pytest.raises(VoiceError, match="needs a Base model"):
        eng.generate_codes(TEXT, Voice.clone(reference_audio()), GREEDY, max_frames=FRAMES)
    with pytest.raises(VoiceError, match="needs a Base model"):
        eng.prepare_voice(Voice.clone(reference_audio()))
    encoded = clone_voice(eng.config.talker_config.hidden_size)
    with pytest.raises(VoiceError, match="clone voice needs a Base model, but this is a CustomVoice model"):
        eng.generate_codes(TEXT, encoded, GREEDY, max_frames=FRAMES)
    speaks("custom_voice")


def test_design_voice_on_a_custom_voice_model(tiny_engine, speaks):
    with pytest.raises(VoiceError, match="needs a VoiceDesign model, but this is a CustomVoice model"):
        tiny_engine("custom_voice").generate_codes(TEXT, Voice.design("a bright voice"), GREEDY,
                                                   max_frames=FRAMES)
    speaks("custom_voice")


def test_instruct_on_the_small_custom_voice_model(tiny_engine, speaks):
    eng = tiny_engine("custom_voice")
    assert eng.model_size == "0b6"
    voice = Voice.preset("vivian", "english", instruct="whisper, slowly")
    with pytest.raises(UnsupportedError, match="does not support style instructions"):
        eng.generate_codes(TEXT, voice, GREEDY, max_frames=FRAMES)
    with pytest.raises(UnsupportedError, match="0.6B"):
        list(eng.stream(TEXT, voice, sampling=GREEDY, max_frames=FRAMES))
    speaks("custom_voice")


def test_clone_embedding_of_another_model_size(tiny_engine, speaks, tmp_path):
    eng = tiny_engine("base")
    width = eng.config.talker_config.hidden_size
    save_voice(clone_voice(2048), tmp_path / "big.voice")  # as if made with the 1.7B Base model
    with pytest.raises(VoiceError, match="different model size") as err:
        eng.generate_codes(TEXT, load_voice(tmp_path / "big.voice"), GREEDY, max_frames=FRAMES)
    assert f"width {width}" in str(err.value) and "2048" in str(err.value)
    speaks("base")


def test_stream_after_an_error_is_whole(tiny_engine, speaks):
    eng = tiny_engine("custom_voice")
    with pytest.raises(VoiceError):
        next(eng.stream(TEXT, Voice.preset("nobody"), sampling=GREEDY, max_frames=FRAMES))
    chunks = list(eng.stream(TEXT, Voice.preset("vivian", "english"), chunk_frames=2, sampling=GREEDY,
                             max_frames=FRAMES))
    assert [c.n_frames for c in chunks] == [1, 2] and chunks[-1].final
    speaks("custom_voice")


def test_text_the_tokenizer_cannot_encode_is_refused_alone_in_a_batch_of_prompts(tiny_engine):
    """A lone surrogate would make the tokenizer's batch call fail: only that request is refused, and the others'
    prompts are those built alone; a text the tokenizer itself refuses fails alone too."""
    from engine.core.prompts import _speech_ids, build_prompt, build_prompts

    eng = tiny_engine("custom_voice")
    voice = Voice.preset("vivian", "english")
    texts = ["One good text.", "A broken \ud800 text.", "Another good one."]
    built = build_prompts(eng.model.talker, eng.config, eng.tokenizer, [(voice, t) for t in texts])
    assert isinstance(built[1], TextError) and "surrogate" in str(built[1])
    for text, prompt in zip(texts[::2], built[::2], strict=True):
        alone = build_prompt(eng.model.talker, eng.config, eng.tokenizer, voice, text)
        torch.testing.assert_close(prompt.embeds, alone.embeds)
        torch.testing.assert_close(prompt.trailing, alone.trailing)
    picky = type("Picky", (), {"speech_ids_many": lambda self, batch: [
        eng.tokenizer.speech_ids_many([t])[0] if "bad" not in t else 1 / 0 for t in batch]})()
    ids = _speech_ids(picky, ["fine", "bad", "also fine"])
    assert isinstance(ids[1], TextError) and ids[0] == eng.tokenizer.speech_ids_many(["fine"])[0]
    with pytest.raises(TextError, match="surrogate"):
        eng.check(texts[1], voice)
    with pytest.raises(VoiceError, match="surrogate"):
        eng.check(texts[0], Voice.preset("vivian", "english", instruct="warm \udfff"))


def test_a_prompt_that_cannot_fit_a_stream_is_refused_before_anything_is_built(tiny_engine, speaks, monkeypatch):
    """An instruction of tens of thousands of tokens would need a quadratic eager prefill (gigabytes): refused as
    too long by ``Engine.check`` and by the generation itself, before the text is embedded."""
    import engine.core.model.talker as talker_module

    eng = tiny_engine("voice_design")
    voice = Voice.design("a calm low voice, " * 3000, "english")
    with pytest.raises(TextError, match="too long.*instructions"):
        eng.check(TEXT, voice)
    embedded = []
    monkeypatch.setattr(talker_module.Talker, "embed_text", lambda self, ids: embedded.append(ids))
    with pytest.raises(TextError, match="too long"):
        eng.generate_codes(TEXT, voice, GREEDY, max_frames=FRAMES)
    assert not embedded
    monkeypatch.undo()
    speaks("voice_design")


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), min_size=1, max_size=60)
       .filter(str.strip),
       kind=st.sampled_from(["preset", "preset-instruct", "design", "xvector", "icl"]),
       non_streaming=st.sampled_from([None, True, False]), ref_frames=st.integers(1, 40))
def test_prompt_size_counts_what_build_prompts_lays_out(tiny_engine, text, kind, non_streaming, ref_frames):
    """``prompt_size``, which refuses an overlong prompt before anything is embedded, counts the positions and
    trailing tokens of the prompt that is then built, for every kind of voice and layout."""
    from engine.core.prompts import _plan, build_prompt, prompt_size

    model_type = {"preset": "custom_voice", "preset-instruct": "custom_voice", "design": "voice_design"}.get(kind,
                                                                                                         "base")
    eng = tiny_engine(model_type)
    rng = np.random.default_rng(ref_frames)
    width = eng.config.talker_config.hidden_size
    voice = {
        "preset": lambda: Voice.preset("vivian", "english"),
        "preset-instruct": lambda: Voice.preset("vivian", "english", instruct="slowly, please"),
        "design": lambda: Voice.design("a bright voice", "english"),
        "xvector": lambda: clone_voice(width),
        "icl": lambda: Voice("clone", language="english", ref_text="Some reference words.",
                             speaker_embedding=rng.standard_normal(width).astype(np.float32),
                             ref_codes=rng.integers(0, 2048, size=(ref_frames, 16))),
    }[kind]()
    if kind == "preset-instruct" and eng.model_size == "0b6":
        voice = voice.with_(instruct=None)
    prompt = build_prompt(eng.model.talker, eng.config, eng.tokenizer, voice, text, non_streaming)
    plan = _plan(eng.config, eng.tokenizer, voice, eng.tokenizer.speech_ids_many([text])[0], non_streaming)
    assert prompt_size(plan) == (prompt.length, prompt.trailing.shape[1])
