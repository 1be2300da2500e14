"""Live text (engine.core.text.live_text, engine.core.live_speech): speech that starts before the text is complete,
follows it as it arrives, and equals ``Engine.stream`` of the same text when all of it is there at once."""

from __future__ import annotations

import dataclasses
import itertools
import threading
import time

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from engine import LiveText, Sampling, TextError, Voice
from engine.core import options
from engine.core.text.segments import settled_end, split_segments
from tests.plans import BF16_DECODED_ATOL

TEXT = "Hello there, my friend. How are you doing today? I am fine, thanks."
FRAMES = 6  # per segment: the tiny model's speech is cut at this budget


@pytest.fixture(scope="module")
def engine(tiny_engine):
    """The tiny engine with its thread count pinned through the plan's option: these tests compare calls sample for
    sample, and the codec decoder's float32 output differs in its last bits between counts, which the fast plan's
    governor picks from frame times."""
    made = tiny_engine("custom_voice")
    before, streamer = options.current(), made._single
    options.configure(threads=torch.get_num_threads())
    made._single = None  # a streamer made under the pinned count
    yield made
    options.configure(before)
    made._single = streamer


def _voice(engine):
    return Voice.preset(engine.speakers[0], language="english")


def _audio(chunks) -> np.ndarray:
    return np.concatenate([c.samples for c in chunks])


def _closed(text: str) -> LiveText:
    live = LiveText()
    live.append(text)
    live.close()
    return live


def _word_by_word(live: LiveText, text: str, pause: float) -> threading.Thread:
    def produce():
        for i, word in enumerate(text.split(" ")):
            live.append(word if i == 0 else " " + word)
            time.sleep(pause)
        live.close()

    thread = threading.Thread(target=produce, daemon=True)
    thread.start()
    return thread


# ---- planning what is certain ---------------------------------------------------------------------
_PIECES = st.sampled_from(["Dr.", "Smith", "went", "home", ".", "!", "?", ",", " ", "  ", "\n", "\n\n", "e.g.", "it",
                           "3.5", "J.", "R.", "Why?", "she", "said", "AND", "'quoted.'", "…", "Mr.", "x" * 40,
                           # clause marks and conjunctions, where a sentence too long for one segment is cut
                           ";", ":", "—", "--", " - ", " and ", " that ", " which ", "1,000", "words " * 6])


@settings(max_examples=300, deadline=None)
@given(st.lists(_PIECES, min_size=1, max_size=60), st.integers(20, 80))
def test_the_settled_words_of_a_prefix_belong_to_the_first_segment_of_any_continuation(pieces, max_chars):
    """A word spoken before its segment is final stays in that segment: however the text goes on, a long
    sentence's cut never falls before what was settled (cuts only move later as text arrives)."""
    text = "".join(pieces)
    segments = split_segments(text, max_chars)
    if not segments:
        return
    first = segments[0]
    for cut in range(first.start, len(text) + 1):
        end = settled_end(text[:cut], first.start, max_chars)
        assert first.start <= end <= first.end, (text[:cut], end, first)
        assert end == first.start or text[end].isspace()  # a whole word: the next character is no part of it


def test_the_settled_words_tokenize_as_the_start_of_their_segment(text_tokenizer):
    body = lambda s: text_tokenizer.speech_ids(s)[3:-5]  # noqa: E731
    for cut in range(1, len(TEXT) + 1):
        segment = split_segments(TEXT)[0]
        end = settled_end(TEXT[:cut], 0)
        ids = body(TEXT[:end]) if end else []
        assert body(segment.text)[: len(ids)] == ids, TEXT[:end]


def test_settled_words_wait_at_a_sentence_end_until_it_is_decided():
    assert settled_end("Hello there. Next", 0) == len("Hello there.")  # undecided: nothing past the period yet
    assert settled_end("Hello there.\nNext", 0) == len("Hello")  # the newline would join the period's token
    assert settled_end("Dr. Smith came home and", 0) == len("Dr. Smith came home")  # an abbreviation: goes on
    assert settled_end("Hello there. And then more text", 0) == len("Hello there.")  # decided: the segment ends


# ---- the live text handle -------------------------------------------------------------------------
@pytest.mark.parametrize("bad", [None, 3, b"bytes", "\ud800"])
def test_live_text_refuses_what_cannot_be_spoken(bad):
    live = LiveText()
    with pytest.raises(TextError):
        live.append(bad)


def test_live_text_refuses_text_after_close():
    live = LiveText()
    live.close()
    with pytest.raises(TextError, match="closed"):
        live.append("more")


@pytest.mark.parametrize("bad", ["a plain string", 42])
def test_stream_live_takes_a_handle_or_an_iterator_of_deltas(engine, bad):
    with pytest.raises(TextError, match="LiveText or an iterator"):
        next(engine.stream_live(bad, _voice(engine)))


# ---- speaking ---------------------------------------------------------------------------------------
def _stream(engine, sampling, non_streaming):
    """``Engine.stream`` of TEXT as live text plans it: one sentence a segment (``engine.core.text.live_text``), in
    live text's chunk sizes (they do not grow: live speech follows its text)."""
    return engine.stream(TEXT, _voice(engine), sampling=sampling, max_frames=FRAMES, segment_chars=0,
                         non_streaming=non_streaming, largest_chunk_frames=4)


def test_with_all_the_text_there_the_audio_is_that_of_stream(engine):
    sampling = Sampling(seed=11)
    expected = list(_stream(engine, sampling, False))
    got = list(engine.stream_live(_closed(TEXT), _voice(engine), sampling=sampling, max_frames=FRAMES))
    assert np.array_equal(_audio(got), _audio(expected))
    assert [(c.segment, c.span, c.n_frames, c.final) for c in got] == [
        (c.segment, c.span, c.n_frames, c.final) for c in expected]


def test_text_arriving_word_by_word_is_heard_before_it_is_complete(engine):
    sampling = Sampling(seed=12)
    live = LiveText()
    producer = _word_by_word(live, TEXT, 0.05)
    received = [(live.closed, c) for c in engine.stream_live(live, _voice(engine), sampling=sampling,
                                                             max_frames=FRAMES)]
    producer.join()
    assert not received[0][0], "the first audio came only once the text was complete"
    chunks = [c for _, c in received]
    assert chunks[-1].final and sorted({c.segment for c in chunks}) == [0, 1, 2]
    expected = list(_stream(engine, sampling, False))
    for segment in range(3):  # the same frames; a chunk's span: its segment's text known when it was made
        got = [c for c in chunks if c.segment == segment]
        want = [c for c in expected if c.segment == segment]
        assert sum(c.n_frames for c in got) == sum(c.n_frames for c in want)
        assert all(c.span[0] == want[0].span[0] and c.span[1] <= want[0].span[1] for c in got)
    # the same codes: the audio differs only by the decoder's rounding over other chunk sizes
    atol = BF16_DECODED_ATOL if engine.execution_plan.decoder == "bfloat16" else 1e-4
    np.testing.assert_allclose(_audio(chunks), _audio(expected), atol=atol)


def test_an_iterator_of_deltas_is_spoken_as_it_is_read(engine):
    sampling = Sampling(seed=13)
    read = []

    def deltas():
        for word in TEXT.split(" "):
            read.append(word)
            yield word + " "

    chunks = list(engine.stream_live(deltas(), _voice(engine), sampling=sampling, max_frames=FRAMES))
    expected = list(_stream(engine, sampling, False))
    np.testing.assert_allclose(_audio(chunks), _audio(expected), atol=1e-4)
    assert len(read) == len(TEXT.split(" "))


def test_speech_waits_for_text_instead_of_padding_and_a_cancel_frees_the_engine(engine):
    live = LiveText()
    live.append("Hello there my friend and")  # an open sentence: the model has a few words, then none
    cancel = threading.Event()
    stream = engine.stream_live(live, _voice(engine), sampling=Sampling(seed=1), cancel=cancel, max_frames=200)
    first = next(stream)
    assert first.n_frames >= 1
    frames, waited = first.n_frames, time.perf_counter()
    timer = threading.Timer(0.5, cancel.set)
    timer.start()
    frames += sum(c.n_frames for c in stream)  # ends once cancelled
    assert time.perf_counter() - waited >= 0.4
    words = len(engine.tokenizer.speech_ids("Hello there my friend")[3:-5])
    assert frames <= words + 1, "frames were made past the text that had arrived"
    # the engine is free again: the next call runs at once
    assert list(engine.stream("Next.", _voice(engine), max_frames=2))


def test_an_aborted_text_stops_a_waiting_generation(engine):
    live = LiveText()
    live.append("Some words that go")
    stream = engine.stream_live(live, _voice(engine), sampling=Sampling(seed=2), max_frames=200)
    next(stream)
    threading.Timer(0.2, live.abort).start()
    rest = list(stream)
    assert not any(c.final for c in rest)  # cut, not complete


def test_the_non_streaming_layout_speaks_each_segment_once_it_is_final(engine):
    sampling = Sampling(seed=14)
    live = LiveText()
    producer = _word_by_word(live, TEXT, 0.01)
    got = list(engine.stream_live(live, _voice(engine), sampling=sampling, max_frames=FRAMES, non_streaming=True))
    producer.join()
    expected = list(_stream(engine, sampling, True))
    assert np.array_equal(_audio(got), _audio(expected))


def test_the_batched_loop_speaks_live_text_segment_by_segment(plan_engine):
    """Two frame loops agreeing sample for sample: exactness is the point, so the exact plan (on the fast one
    the single stream's Numba steps and the batched loop's PyTorch products round otherwise)."""
    import asyncio

    from engine.core.live_speech import stream_live_batched

    engine = plan_engine("exact")

    many = engine.batched(slots=2)
    sampling = dataclasses.replace(engine.defaults, seed=20)

    async def speak():
        live = LiveText()
        for i, word in enumerate(TEXT.split(" ")):
            live.append(word if i == 0 else " " + word)
        live.close()
        return [c async for c in stream_live_batched(many, live, _voice(engine), sampling, max_frames=FRAMES)]

    chunks = asyncio.run(speak())
    assert chunks[-1].final and [c.segment for c in chunks] == sorted(c.segment for c in chunks)
    for index, segment in enumerate(split_segments(TEXT, target_chars=0)):  # each its own request, seed + index
        alone = engine.stream([segment], _voice(engine), sampling=dataclasses.replace(sampling, seed=20 + index),
                              max_frames=FRAMES, non_streaming=None)
        np.testing.assert_allclose(_audio([c for c in chunks if c.segment == index]), _audio(list(alone)),
                                   atol=1e-4)


def test_the_graph_runner_follows_live_text_as_the_eager_loop_does(plan_engine, tiny_model_dir):
    """Two frame loops agreeing sample for sample: on the exact plan (exactness is the point)."""
    from engine import Engine
    from engine.core.frames.graphs.runner import GraphStreamer

    engine = plan_engine("exact")
    fast = Engine.from_pretrained(tiny_model_dir("custom_voice"), device="cpu", precision="exact")
    fast._single = GraphStreamer(fast.model.talker, fast.decoder, (1, 4), enabled=False)  # its loop, not captured
    sampling = Sampling(seed=15)
    expected = _audio(list(engine.stream(TEXT, _voice(engine), sampling=sampling, max_frames=FRAMES,
                                         segment_chars=0, non_streaming=False)))
    at_once = list(fast.stream_live(_closed(TEXT), _voice(fast), sampling=sampling, max_frames=FRAMES))
    np.testing.assert_allclose(_audio(at_once), expected, atol=1e-4)
    live = LiveText()
    producer = _word_by_word(live, TEXT, 0.05)
    received = [(live.closed, c) for c in fast.stream_live(live, _voice(fast), sampling=sampling, max_frames=FRAMES)]
    producer.join()
    assert not received[0][0]
    np.testing.assert_allclose(_audio([c for _, c in received]), expected, atol=1e-4)


@pytest.mark.gpu
def test_on_a_gpu_the_captured_graphs_follow_live_text(tiny_model_dir):
    import torch

    from engine import Engine

    if not torch.cuda.is_available():
        pytest.skip("needs CUDA")
    eng = Engine.from_pretrained(tiny_model_dir("custom_voice"), device="cuda", dtype=torch.float32)
    sampling = Sampling(seed=16)
    expected = _audio(list(eng.stream(TEXT, _voice(eng), sampling=sampling, max_frames=FRAMES,
                                      segment_chars=0, non_streaming=False)))
    at_once = _audio(list(eng.stream_live(_closed(TEXT), _voice(eng), sampling=sampling, max_frames=FRAMES)))
    np.testing.assert_allclose(at_once, expected, atol=1e-3)
    live = LiveText()
    producer = _word_by_word(live, TEXT, 0.05)
    received = [(live.closed, c) for c in eng.stream_live(live, _voice(eng), sampling=sampling, max_frames=FRAMES)]
    producer.join()
    assert not received[0][0]
    # word by word a chunk is cut where text is awaited: a CUDA float32 decode of other chunk lengths picks other
    # convolution algorithms, ~1e-3 apart (at most 1.2e-3 on an H200)
    np.testing.assert_allclose(_audio([c for _, c in received]), expected, atol=5e-3)


_WORDS = st.sampled_from(["Hello", "there", "Dr.", "Smith", "e.g.", "it's", "3.5", "42", "naïve", "café", "，", "。",
                          "你好", "why?", "OK!", "\u2026", "'quote'", "(aside)", "x" * 30, "end.", "\n", "\n\n", " "])


@settings(max_examples=60, deadline=None)
@given(st.lists(_WORDS, min_size=1, max_size=30), st.lists(st.integers(0, 400), max_size=12), st.data())
def test_the_words_taken_early_are_the_start_of_their_segment_however_the_text_is_split(text_tokenizer, words,
                                                                                          cuts, data):
    from engine.core.text.live_text import LivePlanner

    text = " ".join(words)
    bounds = sorted({c % (len(text) + 1) for c in cuts} | {0, len(text)})
    live = LiveText()
    body = lambda s: text_tokenizer.speech_ids(s)[3:-5]  # noqa: E731
    planner = LivePlanner(live, body, max_chars=data.draw(st.integers(20, 120)))
    taken, open_ids = [], []  # the final segments in order; for each, every early view of its ids
    early: list[list[int]] = []
    for a, b in itertools.pairwise(bounds):
        live.append(text[a:b])
        planner.pull(wait=False)
        while planner.finals:
            taken.append(planner.take_final())
            open_ids.append(early)
            early = []
        early.append(planner.open_ids()[2])
    live.close()
    planner.pull(wait=False)
    while planner.finals:
        taken.append(planner.take_final())
        open_ids.append(early)
        early = []
    assert taken == split_segments(text, planner.max_chars, target_chars=0)
    for segment, views in zip(taken, open_ids, strict=True):
        final = body(segment.text)
        for ids in views:
            assert final[: len(ids)] == ids, (segment.text, ids)


def test_a_long_live_text_keeps_only_a_window_of_itself(text_tokenizer):
    from engine.core.text.live_text import LivePlanner

    text = " ".join(f"Sentence number {i} says something, Dr. Who said. Then {i}.5 more" for i in range(400)) + "."
    live = LiveText()
    body = lambda s: text_tokenizer.speech_ids(s)[3:-5]  # noqa: E731
    planner = LivePlanner(live, body)
    taken, longest = [], 0
    for at in range(0, len(text), 7):
        live.append(text[at : at + 7])
        planner.pull(wait=False)
        while planner.finals:
            taken.append(planner.take_final())
        start, end, ids = planner.open_ids()
        assert text[start:end] == text[start:end].strip() and (not ids or ids == body(text[start:end]))
        longest = max(longest, len(planner.text))
    live.close()
    planner.pull(wait=False)
    taken += list(planner.finals)
    assert taken == split_segments(text, target_chars=0)
    assert longest < 8000 < len(text)


def test_live_text_takes_appends_from_many_threads_while_it_is_read():
    live, writers = LiveText(), 4
    got: list[str] = []

    def write(w: int) -> None:
        for i in range(300):
            live.append(f"<{w}:{i}>")

    threads = [threading.Thread(target=write, args=(w,)) for w in range(writers)]
    for thread in threads:
        thread.start()
    while len(got) < writers * 300:
        pieces, _ = live.read(len(got), 0.01)
        got += pieces
    for thread in threads:
        thread.join()
    live.close()
    assert live.read(len(got), 0) == ([], True)
    for w in range(writers):  # every piece once, each writer's in its order
        assert [p for p in got if p.startswith(f"<{w}:")] == [f"<{w}:{i}>" for i in range(300)]
    assert live.chars == sum(map(len, got))
