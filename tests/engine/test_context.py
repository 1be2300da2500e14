"""One voice for a whole call (``engine.core.context``): a designed voice's later segments are prompted with its first
clean segment's text and codes as in-context reference, on the single-stream and the batched path alike; presets
carry nothing; a reference that is cut, too long or would crowd the prompt is not carried."""

from __future__ import annotations

import functools

import numpy as np
import pytest

from engine import Engine, Sampling, Voice
from engine.core.context import MAX_CONTEXT_FRAMES, VoiceContext
from engine.core.frames.capacity import MAX_SEQ, MIN_ROOM_FRAMES
from engine.core.prompts import build_prompt, prompt_positions
from engine.synthetic.checkpoint import build_checkpoint
from tests.engine.concurrent_streams import assert_same_chunks

GREEDY = Sampling(greedy=True, repetition_penalty=1.0)
LINES = ["The first line is here.", "The second line follows.", "And a third one."]
TEXT = "\n".join(LINES)  # three segments (never merged across a line break)
DESIGN = Voice.design("a calm, low voice", language="english")


@pytest.fixture(scope="module")
def ending(tmp_path_factory):
    """Engines whose utterances end by themselves a few frames in (the runaway guard cuts none of them), on the
    exact plan: these tests hold codes equal across frame loops (single and batched), which is exactness."""
    loaded = {}

    def get(model_type: str) -> Engine:
        if model_type not in loaded:
            path = build_checkpoint(tmp_path_factory.mktemp(model_type), "tiny", model_type, head="ends_early")
            loaded[model_type] = Engine.from_pretrained(path, device="cpu", precision="exact")
        return loaded[model_type]

    return get


def codes_by_segment(chunks, codes) -> dict[int, np.ndarray]:
    out, at = {}, 0
    for chunk in chunks:
        out.setdefault(chunk.segment, []).append(codes[at:at + chunk.n_frames])
        at += chunk.n_frames
    return {segment: np.concatenate(pieces) for segment, pieces in out.items()}


def test_later_segments_of_a_designed_voice_continue_the_first(ending):
    eng = ending("voice_design")
    chunks = list(eng.stream(TEXT, DESIGN, chunk_frames=4, sampling=GREEDY, max_frames=200))
    codes = eng.generate_codes(TEXT, DESIGN, sampling=GREEDY, max_frames=200)
    assert not [c for c in chunks if c.warning] and {c.segment for c in chunks} == {0, 1, 2}
    spoken = codes_by_segment(chunks, codes)
    first = eng.generate_codes(LINES[0], DESIGN, sampling=GREEDY, max_frames=200)
    np.testing.assert_array_equal(spoken[0], first)  # the first segment is the voice's own
    carried = DESIGN.with_(ref_text=LINES[0], ref_codes=first)
    for index in (1, 2):  # each later one: the description, the first segment's text and codes, then its own text
        alone = eng.generate_codes(LINES[index], carried, sampling=GREEDY, max_frames=200)
        np.testing.assert_array_equal(spoken[index], alone)
        uncarried = eng.generate_codes(LINES[index], DESIGN, sampling=GREEDY, max_frames=200)
        assert not np.array_equal(spoken[index], uncarried)  # the reference changed what it says
    # the spans and segment numbers the studio highlights from are those of the plan
    assert sorted({(c.segment, c.span) for c in chunks}) == [
        (i, (s.start, s.end)) for i, s in enumerate(eng.plan(TEXT, DESIGN).segments)]


def test_the_carried_prompt_holds_the_reference_and_fits(ending):
    eng = ending("voice_design")
    first = eng.generate_codes(LINES[0], DESIGN, sampling=GREEDY, max_frames=200)
    carried = DESIGN.with_(ref_text=LINES[0], ref_codes=first)
    plain = build_prompt(eng.model.talker, eng.config, eng.tokenizer, DESIGN, LINES[1])
    with_reference = build_prompt(eng.model.talker, eng.config, eng.tokenizer, carried, LINES[1])
    reference_tokens = len(eng.tokenizer.reference_text_ids(LINES[0]))
    # non-streaming in-context layout: reference text tokens and one position per reference frame, plus its bos
    assert with_reference.length == plain.length + reference_tokens + len(first)
    assert prompt_positions(eng.config, eng.tokenizer, carried, LINES[1]) == with_reference.length < MAX_SEQ


def test_the_batched_path_carries_the_same_voice(ending):
    eng = ending("voice_design")
    alone = list(eng.stream(TEXT, DESIGN, chunk_frames=3, sampling=GREEDY, max_frames=200,
                            largest_chunk_frames=3))  # the batched path's fixed sizes
    batched = list(eng.batched(2, warmup=False).stream(TEXT, DESIGN, chunk_frames=3, sampling=GREEDY,
                                                          max_frames=200))
    assert_same_chunks(batched, alone, atol=1e-5)


def test_a_preset_carries_nothing(ending):
    """A preset's speaker embedding fixes its voice: each segment is spoken as it would be alone."""
    eng = ending("custom_voice")
    voice = Voice.preset(eng.speakers[0], language="english")
    chunks = list(eng.stream(TEXT, voice, chunk_frames=4, sampling=GREEDY, max_frames=200))
    spoken = codes_by_segment(chunks, eng.generate_codes(TEXT, voice, sampling=GREEDY, max_frames=200))
    for index, line in enumerate(LINES):
        np.testing.assert_array_equal(spoken[index], eng.generate_codes(line, voice, sampling=GREEDY, max_frames=200))


def test_a_cancelled_call_stops_within_its_first_segment(ending):
    import threading

    eng = ending("voice_design")
    cancel = threading.Event()
    got = []
    for chunk in eng.stream(TEXT, DESIGN, chunk_frames=1, sampling=GREEDY, max_frames=200, cancel=cancel):
        got.append(chunk)
        cancel.set()
    assert len(got) == 1 and got[0].segment == 0


def positions_of(eng: Engine, non_streaming: bool | None = None):
    return functools.partial(prompt_positions, eng.config, eng.tokenizer, non_streaming=non_streaming)


def test_no_reference_from_a_cut_segment_or_one_too_long(ending):
    eng = ending("voice_design")
    frames = np.zeros((12, 16), np.int64)
    context = VoiceContext(DESIGN, positions_of(eng))
    context.offer(LINES[0], [frames], "cut at its frame budget (12 frames, 1.0 s)")
    assert context.reference is None and context.voice_for(LINES[1], 100) is DESIGN
    context.offer(LINES[0], [np.zeros((MAX_CONTEXT_FRAMES + 1, 16), np.int64)], None)
    assert context.reference is None
    context.offer(LINES[0], [], None)  # nothing spoken (cancelled at once)
    assert context.reference is None
    context.offer(LINES[0], [frames[:5], frames[5:]], None)
    assert context.reference[0] == LINES[0] and len(context.reference[1]) == 12
    context.offer(LINES[1], [frames], None)  # the first clean one stays the reference
    assert context.reference[0] == LINES[0]
    assert context.voice_for(LINES[2], 100).ref_codes is context.reference[1]


def test_a_reference_that_would_crowd_the_prompt_is_dropped(ending):
    eng = ending("voice_design")
    wordy = Voice.design("a calm voice " * 370, language="english")  # a description of many positions
    context = VoiceContext(wordy, positions_of(eng))
    context.offer(LINES[0], [np.zeros((MAX_CONTEXT_FRAMES, 16), np.int64)], None)
    assert context.reference is not None
    long_text = "word " * 50
    room_needed = positions_of(eng)(wordy.with_(ref_text=LINES[0], ref_codes=context.reference[1]), long_text)
    assert room_needed is not None and room_needed + 2 * len(long_text) + MIN_ROOM_FRAMES > MAX_SEQ  # the case
    assert context.voice_for(long_text, 1000) is wordy  # spoken without the reference, not refused
    assert context.voice_for("Short.", 1000).ref_text == LINES[0]


def test_no_context_without_a_measure_or_for_other_voices(ending):
    eng = ending("voice_design")
    unmeasured = VoiceContext(DESIGN, None)
    unmeasured.offer(LINES[0], [np.zeros((3, 16), np.int64)], None)
    assert unmeasured.reference is None
    preset = VoiceContext(Voice.preset("aiden"), positions_of(eng))
    preset.offer(LINES[0], [np.zeros((3, 16), np.int64)], None)
    assert preset.reference is None
