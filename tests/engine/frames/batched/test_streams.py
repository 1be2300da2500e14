"""``BatchedStreams``: concurrent callers get what each gets alone, whatever the loop thread does around them
(admissions, prompts built meanwhile, steps queued ahead, failures, closed streams, clones and segments)."""

from __future__ import annotations

import functools
import threading

import numpy as np
import pytest

from engine import Sampling, Voice
from engine.core.frames.batched import LOOP_FRAMES
from tests.engine.concurrent_streams import assert_same_chunks, stream_concurrently
from tests.engine.frames.batched.loop_helpers import REQUESTS, late_caller, outstanding_steps, start_during_step


def random_clone(eng, rng: np.random.Generator, ref_frames: int | None) -> Voice:
    """A cloned voice of random encodings: by x-vector only, or in context with ``ref_frames`` reference codes."""
    embedding = rng.standard_normal(eng.config.talker_config.hidden_size).astype(np.float32)
    if ref_frames is None:
        return Voice("clone", language="english", speaker_embedding=embedding)
    return Voice("clone", language="english", ref_text="Some reference words.", speaker_embedding=embedding,
                 ref_codes=rng.integers(0, 2048, size=(ref_frames, 16)))


def assert_each_got_its_stream_alone(eng, requests, results: dict[int, list]) -> None:
    """Caller i of ``requests`` (text, voice, sampling, frames) got in ``results[i]`` the chunks (of 3 frames) and
    audio that ``Engine.stream`` gives it alone."""
    for i, (text, voice, sampling, frames) in enumerate(requests):
        alone = list(eng.stream(text, voice, chunk_frames=3, first_chunk_frames=1, sampling=sampling,
                                max_frames=frames))
        assert_same_chunks(results[i], alone, atol=1e-6)


@pytest.mark.parametrize("warmup", [False, True], ids=["lazy", "warmed-up"])
def test_concurrent_callers_get_what_each_would_get_alone(engine64, warmup):
    """Three threads stream at once through two slots; each caller's audio equals its solo synthesis,
    whether every bucket's step and decodes were prepared up front or on first use."""


    eng = engine64
    progress = []
    streams = eng.batched(2, warmup=warmup,
                             warmup_progress=lambda *told: progress.append(told))
    if warmup:
        assert set(streams.frames._steps) == {1, 2}
        assert set(streams.decoding.graphs) == {(b, n) for b in (1, 2) for n in range(1, LOOP_FRAMES + 1)}
        assert progress == [(0, 4, "the 1-stream frame step"), (1, 4, "the 2-stream frame step"),
                            (2, 4, "the 1-stream decodes"), (3, 4, "the 2-stream decodes"), (4, 4, "done")]
    else:
        assert progress == [] and not streams.frames._steps and not streams.decoding.graphs
    requests = REQUESTS[:3]
    results = stream_concurrently(streams, requests, chunk_frames=3)
    for i, (text, voice, sampling, frames) in enumerate(requests):
        chunks = results[i]
        alone = eng.synthesize(text, voice, sampling, max_frames=frames)
        assert chunks[0].n_frames == 1 and chunks[-1].final
        np.testing.assert_allclose(np.concatenate([c.samples for c in chunks]), alone.samples, atol=1e-9)


def test_a_closed_stream_frees_its_slot(engine64):

    streams = engine64.batched(1)
    first = streams.stream("Long enough to be cut short.", Voice.preset("vivian"), sampling=Sampling(greedy=True),
                           max_frames=200)
    next(first)
    first.close()  # the caller goes away after one chunk
    chunks = list(streams.stream("Next.", Voice.preset("ryan"), sampling=Sampling(greedy=True), max_frames=3))
    assert sum(c.n_frames for c in chunks) == 3


def test_a_failed_step_reaches_the_caller_whose_audio_awaits_handout_and_the_loop_goes_on(engine64):
    """A device failure in a step reaches the caller (its first frame, decoded the iteration before and not
    yet handed out, is lost with it); the slot is freed and the next caller is served."""

    streams = engine64.batched(1)
    real_step, calls = streams.frames.step, []

    def step_failing_the_second_time(n=1):
        calls.append(n)
        if len(calls) == 2:
            raise RuntimeError("device lost")
        real_step(n)

    streams.frames.step = step_failing_the_second_time
    with pytest.raises(RuntimeError, match="device lost"):
        list(streams.stream("Long enough to fail midway.", Voice.preset("vivian"), sampling=Sampling(greedy=True),
                            max_frames=50))
    assert calls == [1, LOOP_FRAMES]  # a single first frame, then the failing full iteration
    chunks = list(streams.stream("Next.", Voice.preset("ryan"), sampling=Sampling(greedy=True), max_frames=3))
    assert sum(c.n_frames for c in chunks) == 3


def test_a_failed_admission_reaches_its_callers_and_frees_their_slots(engine64):
    """A failure while an admission writes its streams' decoder rows (after their prefill took slots) reaches
    those callers, and the slots are free again for the next. (A one-segment preset stream starts its row
    from silence: ``clear_rows``, no state of the caller's.)"""

    streams = engine64.batched(1)
    real_clear_rows, calls = streams.decoder_state.clear_rows, []

    def clear_rows_failing_once(rows):
        calls.append(rows.tolist())
        if len(calls) == 1:
            raise RuntimeError("device lost")
        real_clear_rows(rows)

    streams.decoder_state.clear_rows = clear_rows_failing_once
    streams.decoder_state.put_rows = None  # not called: neither stream has a state of its own
    with pytest.raises(RuntimeError, match="device lost"):
        list(streams.stream("Fails on admission.", Voice.preset("vivian"), sampling=Sampling(greedy=True),
                            max_frames=5))
    chunks = list(streams.stream("Next.", Voice.preset("ryan"), sampling=Sampling(greedy=True), max_frames=3))
    assert sum(c.n_frames for c in chunks) == 3 and calls == [[0], [0]]


def test_prompts_are_built_by_the_loop_and_a_refused_one_reaches_only_its_caller(engine64, monkeypatch):
    """The loop thread builds every prompt (callers' threads would fight it for the GIL); a prompt that does
    not fit the slots' cache is refused to its own caller, while a caller admitted with it is served."""
    streams = engine64.batched(2)
    built_on, real_build = [], streams._build_prompts

    def build_prompts_recording_its_thread(*args, **kwargs):
        built_on.append(threading.current_thread().name)
        return real_build(*args, **kwargs)

    streams._build_prompts = build_prompts_recording_its_thread
    streams.frames.state.max_seq = 40  # the long text's prompt no longer fits
    long_text = "This sentence is far too long to fit into a forty position cache of this test. " * 2
    results: dict[str, object] = {}

    def speak(name, text):
        try:
            results[name] = list(streams.stream(text, Voice.preset("vivian"), sampling=Sampling(greedy=True),
                                                max_frames=3))
        except ValueError as e:
            results[name] = e

    callers = [threading.Thread(target=speak, args=args) for args in (("long", long_text), ("short", "Hi."))]
    for caller in callers:
        caller.start()
    for caller in callers:
        caller.join(timeout=120)
    assert isinstance(results["long"], ValueError) and "does not fit" in str(results["long"])
    assert sum(c.n_frames for c in results["short"]) == 3
    assert built_on and set(built_on) == {"orator-batch"}


def test_requests_that_come_while_an_idle_batchs_prompts_are_built_join_that_admission(engine64, monkeypatch):
    """Into an idle batch, three callers that come while the first caller's prompt is built are prefilled with it,
    in one admission, and each gets what it gets alone."""
    streams = engine64.batched(4)
    admitted, real_add = [], streams.frames.add_many
    streams.frames.add_many = lambda requests: admitted.append(len(requests)) or real_add(requests)
    burst = [late_caller(streams, f"Caller {i} came a moment later.", Voice.preset("ryan"), 5) for i in range(3)]
    real_build = streams._build_prompts

    def build_while_the_burst_comes(*args, **kwargs):
        if burst[0][0].ident is None:  # the first build: the others come meanwhile
            for caller, _ in burst:
                caller.start()
            while streams._requests.qsize() < len(burst):
                threading.Event().wait(0.001)
        return real_build(*args, **kwargs)

    streams._build_prompts = build_while_the_burst_comes
    first = list(streams.stream("The first caller.", Voice.preset("vivian"), sampling=Sampling(greedy=True),
                                max_frames=5))
    for caller, _ in burst:
        caller.join(timeout=120)
    assert admitted == [4]
    streams._build_prompts = real_build
    for text, voice, got in [("The first caller.", "vivian", first)] + [
            (f"Caller {i} came a moment later.", "ryan", chunks) for i, (_, chunks) in enumerate(burst)]:
        alone = list(engine64.stream(text, Voice.preset(voice), sampling=Sampling(greedy=True), max_frames=5))
        assert_same_chunks(got, alone, atol=1e-9)


def test_no_prompt_is_built_during_a_step_while_every_slot_is_taken(engine64):
    """With the batch full, a request that comes while the loop steps waits unbuilt (no phase "build"); its
    prompt is built at the admission that frees a slot for it, and it gets what it gets alone."""

    streams = engine64.batched(1)
    events: list[str] = []
    streams.phase_timer = events.append
    caller, late = late_caller(streams, "Sent while the slot is taken.", Voice.preset("ryan"), 6)
    steps = start_during_step(streams, caller, lambda steps: len(steps) == 2)
    list(streams.stream("The first caller holds the only slot.", Voice.preset("vivian"),
                        sampling=Sampling(greedy=True), max_frames=12))
    caller.join(timeout=120)
    streams.phase_timer = None
    assert len(steps) >= 3 and "build" not in events
    alone = list(engine64.stream("Sent while the slot is taken.", Voice.preset("ryan"), sampling=Sampling(greedy=True),
                                 max_frames=6))
    np.testing.assert_allclose(np.concatenate([c.samples for c in late]),
                               np.concatenate([c.samples for c in alone]), atol=1e-9)


def test_a_request_sent_while_a_step_runs_has_its_prompt_built_before_its_admission(engine64, monkeypatch):
    """A request that comes while the loop steps has its prompt built right after that step is queued (phase
    "build"), and the next admission takes it as built; both callers get what they get alone."""
    streams = engine64.batched(2)
    events, real_build = [], streams._build_prompts

    def build_prompts_recorded(*args, **kwargs):
        events.append("built")
        return real_build(*args, **kwargs)

    streams._build_prompts = build_prompts_recorded
    streams.phase_timer = events.append
    second: dict[str, list] = {}

    def speak(name: str, text: str) -> None:
        second[name] = list(streams.stream(text, Voice.preset("ryan"), sampling=Sampling(greedy=True), max_frames=6))

    caller = threading.Thread(target=speak, args=("late", "Sent while a step runs."))
    start_during_step(streams, caller, lambda steps: len(steps) == 3)
    first = list(streams.stream("The first caller speaks for a while.", Voice.preset("vivian"),
                                sampling=Sampling(greedy=True), max_frames=20))
    caller.join(timeout=120)
    streams.phase_timer = None
    built = [i for i, event in enumerate(events) if event == "built"]
    assert len(built) == 2 and events[built[1] - 1] == "build"  # the late prompt: right after a step
    assert "admit" in events[built[1]:]  # then admitted, as built, at the next admission
    for text, voice, frames, got in (("The first caller speaks for a while.", "vivian", 20, first),
                                     ("Sent while a step runs.", "ryan", 6, second["late"])):
        alone = list(engine64.stream(text, Voice.preset(voice), sampling=Sampling(greedy=True), max_frames=frames))
        np.testing.assert_allclose(np.concatenate([c.samples for c in got]),
                                   np.concatenate([c.samples for c in alone]), atol=1e-9)


def test_steady_iterations_queue_the_next_step_before_reading_back_the_last(engine64):
    """When nobody waits for a slot, the loop queues the next step before it reads back the last one (two steps
    queued and not collected), ahead of the handouts, the collect and the decode's launch, and admits nobody
    while two are queued; three callers through two slots, streams ending and slots reused meanwhile, still get
    what each gets alone."""

    streams = engine64.batched(2)
    events: list[str] = []
    streams.phase_timer = events.append
    requests = [(text, voice, sampling, 3 * frames) for text, voice, sampling, frames in REQUESTS[:3]]
    results = stream_concurrently(streams, requests, chunk_frames=3)
    streams.phase_timer = None
    outstanding = outstanding_steps(events)
    ahead = [i for i, count in enumerate(outstanding) if count == 2 and outstanding[i - 1] == 1]
    assert len(ahead) >= 3 and max(outstanding) == 2
    for i in ahead:
        assert events[i] == "step" and "collect" in events[i:]
        assert "admit" not in events[i : i + events[i:].index("collect")]
    for i, (text, voice, sampling, frames) in enumerate(requests):
        alone = list(engine64.stream(text, voice, chunk_frames=3, first_chunk_frames=1, sampling=sampling,
                                     max_frames=frames))
        assert_same_chunks(results[i], alone, atol=1e-9)


@pytest.mark.parametrize("frames", [9, 17, 20])
def test_no_step_is_queued_ahead_for_streams_at_their_last_frame(engine64, frames):
    """A stream of ``frames`` frames steps one frame, then eight at a time: once it has stepped its last frame no
    step is queued ahead for it (it would only keep the GPU from its last decode)."""

    streams = engine64.batched(2)
    events: list[str] = []
    streams.phase_timer = events.append
    chunks = list(streams.stream("A stream that runs to its last frame.", Voice.preset("vivian"),
                                 sampling=Sampling(greedy=True, min_frames=frames), max_frames=frames))
    streams.phase_timer = None
    assert sum(c.n_frames for c in chunks) == frames
    assert events.count("step") == 1 + -(-(frames - 1) // LOOP_FRAMES)
    assert max(outstanding_steps(events)) == (2 if frames > 1 + LOOP_FRAMES else 1)


def test_a_request_sent_while_a_step_is_queued_ahead_joins_the_step_after_and_gets_its_audio_alone(engine64):
    """A request that comes while the step queued ahead runs is not admitted before that step is collected (its
    row would be decoded with frames it did not make); it joins the next one and gets what it gets alone."""

    streams = engine64.batched(2)
    events: list[str] = []
    streams.phase_timer = events.append
    caller, late = late_caller(streams, "Sent during a step queued ahead.", Voice.preset("ryan"), 10)
    start_during_step(streams, caller, lambda _: outstanding_steps(events)[-1] == 2)  # a step queued ahead
    first = list(streams.stream("The first caller speaks for quite a while.", Voice.preset("vivian"),
                                sampling=Sampling(greedy=True), max_frames=40))
    caller.join(timeout=120)
    streams.phase_timer = None
    assert late, "no step was queued ahead"
    for text, voice, frames, got in (("The first caller speaks for quite a while.", "vivian", 40, first),
                                     ("Sent during a step queued ahead.", "ryan", 10, late)):
        alone = list(engine64.stream(text, Voice.preset(voice), sampling=Sampling(greedy=True), max_frames=frames))
        assert_same_chunks(got, alone, atol=1e-9)


def test_clones_and_segments_through_shared_slots_equal_each_caller_alone(base64):
    """Callers with in-context and x-vector clones, some speaking several segments, share two slots; a
    segment ends mid-iteration and the next one continues its decoder state in another slot. Each caller
    gets the chunks and audio it would get from ``Engine.stream`` alone."""


    eng = base64
    rng = np.random.default_rng(4)
    clone = functools.partial(random_clone, eng, rng)
    requests = [
        ("One sentence here. And a second one, a little longer than the first!", clone(6), Sampling(seed=3), 7),
        ("Hi there. Bye now. See you.", clone(None), Sampling(greedy=True), 6),
        ("A single segment.", clone(9), Sampling(seed=8, top_k=20), 9),
        ("Two parts. The second part.", clone(4), Sampling(seed=1), 5),
    ]
    streams = eng.batched(2)
    assert_each_got_its_stream_alone(eng, requests, stream_concurrently(streams, requests, chunk_frames=3))


def test_callers_on_an_event_loop_and_on_threads_share_the_slots_and_each_gets_its_stream_alone(base64):
    """``stream_async``: callers on one asyncio event loop (cloned voices, in context and by x-vector, several
    segments) and callers on threads at the same moment, more of them than slots; each gets the chunks
    and audio ``Engine.stream`` gives it alone, and the loop's callers need no thread of their own."""
    import asyncio


    eng = base64
    rng = np.random.default_rng(7)
    clone = functools.partial(random_clone, eng, rng)
    on_loop = [
        ("One sentence here. And a second one!", clone(5), Sampling(seed=2), 6),
        ("Hi there. Bye now.", clone(None), Sampling(greedy=True), 5),
        ("Plain words. Two parts.", clone(3), Sampling(seed=4), 4),
    ]
    on_threads = [("A single segment.", clone(8), Sampling(seed=9, top_k=20), 7),
                  ("Another caller.", clone(None), Sampling(seed=5), 3)]
    streams = eng.batched(2)

    async def speak(text, voice, sampling, frames):
        return [c async for c in streams.stream_async(text, voice, chunk_frames=3, first_chunk_frames=1,
                                                     sampling=sampling, max_frames=frames)]

    async def main():
        threaded = asyncio.ensure_future(asyncio.to_thread(stream_concurrently, streams, on_threads, 3))
        return await asyncio.gather(*(speak(*r) for r in on_loop)), await threaded

    looped, threaded = asyncio.run(main())
    assert_each_got_its_stream_alone(eng, on_loop, dict(enumerate(looped)))
    assert_each_got_its_stream_alone(eng, on_threads, threaded)


def test_an_async_caller_that_leaves_frees_its_slot_and_errors_reach_async_callers(engine64):
    """A caller on the loop with a preset voice runs on no thread but the loop's (and the batch's); after it leaves,
    the next one (two segments) gets its stream alone; a text the engine refuses and a prompt the loop thread
    refuses raise in their callers."""
    import asyncio

    from engine import TextError

    streams = engine64.batched(1)
    streams.frames.state.max_seq = 40  # a long text's prompt does not fit: refused by the loop thread
    long_text = "This sentence is far too long to fit into a forty position cache of this test. " * 2
    threads = set(threading.enumerate())

    async def main():
        first = streams.stream_async("Long enough to be cut short.", Voice.preset("vivian"),
                                     sampling=Sampling(greedy=True), max_frames=200)
        await anext(first)
        assert set(threading.enumerate()) == threads  # streaming, and no thread was started for it
        await first.aclose()  # the caller goes away after one chunk: its slot frees for the next
        chunks = [c async for c in streams.stream_async("Next.\nAnd then more.", Voice.preset("ryan"),
                                                        chunk_frames=2, sampling=Sampling(seed=6), max_frames=3)]
        errors = []
        for text in ("   ", long_text):
            try:
                async for _ in streams.stream_async(text, Voice.preset("ryan"), max_frames=3):
                    pass
            except (TextError, ValueError) as e:
                errors.append(e)
        return chunks, errors

    chunks, errors = asyncio.run(asyncio.wait_for(main(), timeout=120))
    # two segments, the preset prepared on the event loop itself
    alone = list(engine64.stream("Next.\nAnd then more.", Voice.preset("ryan"), chunk_frames=2,
                                 sampling=Sampling(seed=6), max_frames=3))
    assert_same_chunks(chunks, alone, atol=1e-9)
    assert {c.segment for c in chunks} == {0, 1}
    assert isinstance(errors[0], TextError) and "does not fit" in str(errors[1])


def test_close_lets_a_running_stream_finish_then_ends_the_loop_thread_and_refuses_new_streams(engine64):
    streams = engine64.batched(1, warmup=False)
    text, voice, sampling, frames = REQUESTS[0]
    alone = list(engine64.stream(text, voice, chunk_frames=3, sampling=sampling, max_frames=frames))
    running = streams.stream(text, voice, chunk_frames=3, sampling=sampling, max_frames=frames)
    first = next(running)  # the stream has begun
    streams.close(timeout=0)
    assert_same_chunks([first, *running], alone, atol=1e-6)  # it was heard to its end all the same
    streams._loop.join(10)
    assert not streams._loop.is_alive()
    with pytest.raises(RuntimeError, match="closed"):
        next(streams.stream(text, voice, max_frames=2))


def test_closing_an_idle_loop_ends_its_thread_at_once(engine64):
    streams = engine64.batched(2, warmup=False)
    assert streams.close(timeout=10)
