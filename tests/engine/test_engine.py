"""The public Engine API end to end on tiny synthetic checkpoints (CPU): codes, audio, streaming."""

from __future__ import annotations

import threading

import numpy as np
import pytest
import torch

from engine import Sampling, TextError, Voice, load_voice, save_voice
from engine.core import options
from engine.core.chunks import SAMPLES_PER_FRAME
from engine.core.text.segments import Segment, split_segments
from tests.plans import BF16_DECODED_ATOL, PRECISIONS

# three paragraphs, so three segments (short sentences of one paragraph would be one)
TEXT = "Good morning.\n\nThe weather is fine today!\n\nShall we go for a walk?"


def test_generate_codes_shape_and_range(tiny_engine):
    eng = tiny_engine("custom_voice")
    codes = eng.generate_codes("Hello there.", Voice.preset("vivian", "english"), Sampling(greedy=True),
                               max_frames=10)
    assert codes.dtype == np.int64 and codes.shape == (10, 16)
    assert codes.min() >= 0 and codes.max() < 2048


def test_greedy_is_deterministic_and_seed_reproduces_sampling(tiny_engine):
    eng = tiny_engine("custom_voice")
    v = Voice.preset("aiden", "english")
    greedy = [eng.generate_codes("Hi.", v, Sampling(greedy=True), max_frames=8) for _ in range(2)]
    np.testing.assert_array_equal(*greedy)
    a, b, c = (eng.generate_codes("Hi.", v, Sampling(seed=s), max_frames=8) for s in (5, 5, 6))
    np.testing.assert_array_equal(a, b)
    assert (a != c).any()


@pytest.mark.parametrize("precision", PRECISIONS)
def test_stream_concatenation_equals_synthesize(plan_engine, precision):
    """The same codes, decoded in other chunks: the same audio to the decoder's rounding."""
    eng = plan_engine(precision)
    v = Voice.preset("serena", "english")
    s = Sampling(seed=11)
    whole = eng.synthesize(TEXT, v, s, max_frames=9)
    chunks = list(eng.stream(TEXT, v, chunk_frames=4, first_chunk_frames=1, sampling=s, max_frames=9,
                         largest_chunk_frames=4))  # fixed sizes: the chunks below are counted
    joined = np.concatenate([c.samples for c in chunks])
    assert joined.shape == whole.samples.shape == (len(whole.codes) * SAMPLES_PER_FRAME,)
    np.testing.assert_array_equal(eng.generate_codes(TEXT, v, s, max_frames=9), whole.codes)
    atol = BF16_DECODED_ATOL if eng.execution_plan.decoder == "bfloat16" else 1e-5
    np.testing.assert_allclose(joined, whole.samples, atol=atol)
    # three sentences -> three segments of 9 frames: chunks 1+4+4, then 4+4+1 twice
    assert [c.segment for c in chunks] == [0, 0, 0, 1, 1, 1, 2, 2, 2]
    assert [c.n_frames for c in chunks] == [1, 4, 4, 4, 4, 1, 4, 4, 1]
    assert [c.first_frame for c in chunks[:3]] == [0, 1, 5]
    assert [c.final for c in chunks] == [False] * 8 + [True]
    spans = sorted({c.span for c in chunks})
    assert [TEXT[a:b] for a, b in spans] == ["Good morning.", "The weather is fine today!", "Shall we go for a walk?"]
    elapsed = [c.elapsed for c in chunks]
    assert elapsed == sorted(elapsed) and elapsed[0] > 0


def test_segments_cut_by_the_caller_are_spoken_as_given_and_keep_their_spans(tiny_engine, monkeypatch):
    """A reader that plans the document itself passes its segments: the audio is that of the text they came from
    (same seed), and the chunks carry the caller's spans (here offsets in a longer document) and indices."""
    eng = tiny_engine("custom_voice")
    # sample for sample: the thread count pinned through the plan's option (the decoder's float32 output follows the
    # count, which the fast plan's governor picks from frame times), with a streamer made under it
    monkeypatch.setattr(eng, "_single", None)
    before = options.current()
    options.configure(threads=torch.get_num_threads())
    try:
        _speak_segments_as_given(eng)
    finally:
        options.configure(before)


def _speak_segments_as_given(eng):
    v, s = Voice.preset("serena", "english"), Sampling(seed=11)
    planned = [Segment(seg.start + 5000, seg.end + 5000, seg.text) for seg in split_segments(TEXT)]
    given = list(eng.stream(planned, v, sampling=s, max_frames=9))
    whole = list(eng.stream(TEXT, v, sampling=s, max_frames=9))
    np.testing.assert_array_equal(np.concatenate([c.samples for c in given]),
                                  np.concatenate([c.samples for c in whole]))
    assert [(c.segment, c.span) for c in given] == [(c.segment, (c.span[0] + 5000, c.span[1] + 5000)) for c in whole]
    assert eng.plan(planned, v).segments == planned


@pytest.mark.parametrize(("segments", "message"), [
    ([], "no text"),
    ([Segment(0, 3, "   ")], "nothing in the segment 0"),
    (["Hello."], "must be an engine.core.text.segments.Segment"),
    ([Segment(0, 6, "Hello."), Segment(9, 4, "Bye.")], "segment 1 has no valid span"),
    ([Segment(-1, 6, "Hello.")], "segment 0 has no valid span"),
    ([Segment(0, 2, "\ud800")], "surrogate"),
    (iter([Segment(0, 6, "Hello.")]), "string or a sequence"),
])
def test_bad_segments_are_refused_before_anything_is_generated(tiny_engine, segments, message):
    eng = tiny_engine("custom_voice")
    with pytest.raises(TextError, match=message):
        eng.check(segments, Voice.preset("ryan"))
    with pytest.raises(TextError, match=message):
        next(eng.stream(segments, Voice.preset("ryan")))


def test_cancel_stops_within_one_chunk(tiny_engine):
    eng = tiny_engine("custom_voice")
    cancel = threading.Event()
    got = []
    for chunk in eng.stream(TEXT, Voice.preset("ryan", "english"), chunk_frames=2, cancel=cancel,
                            sampling=Sampling(greedy=True), max_frames=20):
        got.append(chunk)
        if len(got) == 2:
            cancel.set()
    assert len(got) == 2 and not got[-1].final


def test_design_and_clone_models_speak(tiny_engine, tmp_path):
    design = tiny_engine("voice_design")
    audio = design.synthesize("Hello.", Voice.design("a bright young voice"), Sampling(greedy=True), max_frames=6)
    assert audio.samples.shape == (6 * SAMPLES_PER_FRAME,) and np.isfinite(audio.samples).all()

    base = tiny_engine("base")
    t = np.arange(24000 * 2) / 24000
    ref = (0.3 * np.sin(2 * np.pi * 220 * t)).astype(np.float32)
    for ref_text in (None, "A reference transcript."):
        voice = base.prepare_voice(Voice.clone((ref, 24000), ref_text=ref_text))
        assert voice.speaker_embedding.shape == (base.config.talker_config.hidden_size,)
        assert (voice.ref_codes is not None) == (ref_text is not None)
        save_voice(voice, tmp_path / "v.voice")
        loaded = load_voice(tmp_path / "v.voice")
        a = base.synthesize("Hello.", voice, Sampling(greedy=True), max_frames=5)
        b = base.synthesize("Hello.", loaded, Sampling(greedy=True), max_frames=5)
        np.testing.assert_array_equal(a.codes, b.codes)
        assert a.samples.shape == (5 * SAMPLES_PER_FRAME,)


def test_a_reference_is_encoded_once_and_reused(tiny_engine, monkeypatch):
    """A clone stored unencoded (as a library voice may be) is not re-encoded on every request: the engine
    keeps recent encodings by reference audio and mode."""
    base = tiny_engine("base")
    calls = []
    encode = base._encode_reference
    monkeypatch.setattr(base, "_encode_reference", lambda audio, in_context: calls.append(in_context)
                        or encode(audio, in_context))
    t = np.arange(24000) / 24000
    ref = (0.3 * np.sin(2 * np.pi * 330 * t)).astype(np.float32)
    first = base.prepare_voice(Voice.clone((ref, 24000), ref_text="Words."))
    again = base.prepare_voice(Voice.clone((ref.copy(), 24000), ref_text="Other words, same audio."))
    x_vector = base.prepare_voice(Voice.clone((ref, 24000)))
    assert calls == [True, False]  # in-context once, x-vector once
    np.testing.assert_array_equal(first.ref_codes, again.ref_codes)
    np.testing.assert_array_equal(first.speaker_embedding, again.speaker_embedding)
    assert x_vector.ref_codes is None and again.ref_text == "Other words, same audio."


def test_in_context_clone_audio_equals_decoding_with_reference_prefix(tiny_engine):
    """The reference codes are decoder context and their audio is cut off (the official recipe)."""
    base = tiny_engine("base")
    rng = np.random.default_rng(0)
    voice = Voice("clone", language="english", ref_text="Reference words.",
                  speaker_embedding=rng.standard_normal(base.config.talker_config.hidden_size).astype(np.float32),
                  ref_codes=rng.integers(0, 2048, size=(7, 16)))
    audio = base.synthesize("Hello.", voice, Sampling(greedy=True), max_frames=6)
    import torch

    full = base.decoder.decode(torch.as_tensor(np.concatenate([voice.ref_codes, audio.codes]))[None])[0].numpy()
    np.testing.assert_allclose(audio.samples, full[7 * SAMPLES_PER_FRAME:], atol=1e-5)


@pytest.mark.parametrize("chunk_frames", [0, -1])
def test_bad_chunk_sizes(tiny_engine, chunk_frames):
    with pytest.raises(ValueError):
        next(tiny_engine("custom_voice").stream("Hi.", Voice.preset("vivian"), chunk_frames=chunk_frames))


def test_clone_modes_and_a_missing_transcript(tmp_path):
    from engine import VoiceError

    t = np.arange(24000 * 2) / 24000
    ref = ((0.3 * np.sin(2 * np.pi * 180 * t)).astype(np.float32), 24000)
    with pytest.raises(VoiceError, match="transcript"):
        Voice.clone(ref, mode="in_context")
    with pytest.raises(VoiceError, match="transcript"):
        Voice.clone(ref, ref_text="   ", mode="in_context")
    with pytest.raises(VoiceError, match="mode"):
        Voice.clone(ref, mode="icl")
    assert Voice.clone(ref, ref_text="Words.", mode="in_context").in_context
    assert not Voice.clone(ref, ref_text="Words.", mode="x_vector").in_context
    assert Voice.clone(ref, ref_text="Words.").in_context and not Voice.clone(ref).in_context


def test_a_bfloat16_decoder_gives_float32_audio_close_to_the_float32_decoders(tiny_engine, tiny_model_dir):
    """``decoder_dtype=torch.bfloat16``: the same codes (the talker is unchanged), float32 audio from ``synthesize``
    and ``stream`` alike, and the float32 decoder's waveform to bf16 accuracy. The bound means something: the
    float32 decoder's audio of other codes (the same frames one step later) is nowhere near it."""
    import torch

    from engine import Engine

    eng32 = tiny_engine("custom_voice")
    eng16 = Engine.from_pretrained(tiny_model_dir("custom_voice"), device="cpu", decoder_dtype=torch.bfloat16)
    assert eng16.decoder.pre_conv.conv.weight.dtype == torch.bfloat16 and eng16.dtype == torch.float32
    v, s = Voice.preset("vivian", "english"), Sampling(greedy=True)
    want, got = (eng.synthesize("Hello there, world.", v, s, max_frames=20) for eng in (eng32, eng16))
    np.testing.assert_array_equal(got.codes, want.codes)
    assert got.samples.dtype == np.float32 and got.samples.shape == want.samples.shape

    def closeness(a, b):  # (correlation, rms of the difference relative to a's)
        return np.corrcoef(a, b)[0, 1], np.sqrt(np.mean((a - b) ** 2) / np.mean(a**2))

    corr, error = closeness(want.samples, got.samples)
    assert corr > 0.99 and error < 0.1
    shifted = torch.roll(torch.as_tensor(want.codes), 1, dims=0)[None]
    other_corr, other_error = closeness(want.samples, eng32.decoder.decode(shifted)[0].numpy())
    assert other_corr < 0.9 and other_error > 0.5  # what a decoder gone wrong would look like

    chunks = list(eng16.stream("Hello there, world.", v, chunk_frames=4, first_chunk_frames=1, sampling=s,
                               max_frames=20))
    assert all(c.samples.dtype == np.float32 for c in chunks)
    joined = np.concatenate([c.samples for c in chunks])
    assert joined.shape == got.samples.shape and closeness(want.samples, joined)[0] > 0.99


@pytest.mark.parametrize("bad", ["bfloat16", "int8", "int64"])
def test_a_decoder_dtype_that_is_not_a_float_dtype_is_refused(tiny_model_dir, bad):
    """Only torch float dtypes (a name is not one): refused before anything loads, saying which are accepted."""
    import torch

    from engine import Engine

    decoder_dtype = bad if bad == "bfloat16" else getattr(torch, bad)
    with pytest.raises(ValueError, match="decoder_dtype must be one of float32, float64, bfloat16, float16"):
        Engine.from_pretrained(tiny_model_dir("custom_voice"), device="cpu", decoder_dtype=decoder_dtype)
