"""Batched streams: each stream's codes in a batch equal the same stream run alone, whatever joins or
leaves around it (float64, so batch-size-dependent rounding cannot flip a choice)."""

from __future__ import annotations

import threading
from collections.abc import Callable

import numpy as np
import pytest
import torch

from engine import Engine, Sampling, Voice
from engine.batch import LOOP_FRAMES, BatchedFrames, generate_batch
from engine.prompts import build_prompt
from tests.engine.concurrent_streams import assert_same_chunks, stream_concurrently

REQUESTS = [
    ("Good morning to you.", Voice.preset("vivian", "english"), Sampling(greedy=True), 11),
    ("A second, different request.", Voice.preset("ryan", "english"), Sampling(seed=5), 17),
    ("你好，世界。", Voice.preset("eric", "chinese"), Sampling(seed=9, top_k=10), 7),
    ("Short.", Voice.preset("serena", "auto"), Sampling(greedy=True, repetition_penalty=1.3), 13),
    ("The last one waits for a free slot.", Voice.preset("aiden", "english"), Sampling(seed=2, top_p=0.8), 9),
]


@pytest.fixture(scope="module")
def engine64(tiny_model_dir):
    return Engine.from_pretrained(tiny_model_dir("custom_voice"), dtype=torch.float64)


@pytest.mark.parametrize("slots", [2])
def test_batched_codes_equal_each_stream_alone(engine64, slots):
    eng = engine64
    prompts = [(build_prompt(eng.model.talker, eng.config, eng.tokenizer, v, text), s, s.seed or 0, n)
               for text, v, s, n in REQUESTS]
    batched = generate_batch(eng.model.talker, prompts, slots=slots, chunk=3, graphs=False)
    for (text, voice, sampling, frames), got in zip(REQUESTS, batched, strict=True):
        alone = eng.generate_codes(text, voice, sampling, max_frames=frames)
        assert got.shape == (frames, 16)
        np.testing.assert_array_equal(got, alone)


@pytest.mark.parametrize("budget", [16384, 40], ids=["one-pass", "split-passes"])
def test_prompts_prefilled_together_equal_each_prefilled_alone(engine64, monkeypatch, budget):
    """All five prompts (of different lengths) join at once: one padded talker pass, or several when the
    positions budget is small; each stream's codes equal the stream alone."""
    import engine.batch

    monkeypatch.setattr(engine.batch, "PREFILL_TOKENS", budget)
    eng = engine64
    prompts = [(build_prompt(eng.model.talker, eng.config, eng.tokenizer, v, text), s, s.seed or 0, n)
               for text, v, s, n in REQUESTS]
    assert len({p.length for p, *_ in prompts}) > 1
    batched = generate_batch(eng.model.talker, prompts, slots=len(REQUESTS), chunk=4, graphs=False)
    for (text, voice, sampling, frames), got in zip(REQUESTS, batched, strict=True):
        np.testing.assert_array_equal(got, eng.generate_codes(text, voice, sampling, max_frames=frames))


def test_slots_are_freed_and_a_full_batch_refuses(engine64):
    eng = engine64
    prompt = build_prompt(eng.model.talker, eng.config, eng.tokenizer, Voice.preset("vivian"), "Hi.")
    batch = BatchedFrames(eng.model.talker, slots=2, graphs=False)
    a = batch.add(prompt, Sampling(greedy=True), 0, 4)
    batch.add(prompt, Sampling(greedy=True), 0, 4)
    with pytest.raises(RuntimeError, match="full"):
        batch.add(prompt, Sampling(greedy=True), 0, 4)
    batch.release(a)
    assert batch.add(prompt, Sampling(greedy=True), 0, 4) == a
    with torch.inference_mode():
        batch.step(5)
    out = batch.collect()
    assert all(codes.shape == (4, 16) and ended for codes, ended in out.values())
    assert batch.add_many([]) == []


def test_a_freed_slot_stays_at_position_zero_while_the_others_step(engine64):
    """Its attention then reads one cache slot per step, not a growing (or the whole) cache."""
    eng = engine64
    prompt = build_prompt(eng.model.talker, eng.config, eng.tokenizer, Voice.preset("vivian"), "Hi.")
    batch = BatchedFrames(eng.model.talker, slots=2, graphs=False)
    a, b = batch.add_many([(prompt, Sampling(greedy=True), 0, 20)] * 2)
    with torch.inference_mode():
        batch.step(3)
        batch.release(a)
        batch.step(4)
    assert batch.state.pos.tolist()[a] == 0 and batch.state.live.tolist() == [int(s == b) for s in range(2)]
    assert batch.state.pos.tolist()[b] == prompt.length + 7


@pytest.mark.parametrize("warmup", [False, True], ids=["lazy", "warmed-up"])
def test_concurrent_callers_get_what_each_would_get_alone(engine64, warmup):
    """Three threads stream at once through two slots; each caller's audio equals its solo synthesis,
    whether every bucket's step and decodes were prepared up front or on first use."""

    from engine.batch import BatchedStreams

    eng = engine64
    progress = []
    streams = BatchedStreams(eng, slots=2, graphs=False, warmup=warmup,
                             warmup_progress=lambda *told: progress.append(told))
    if warmup:
        assert set(streams.frames._steps) == {1, 2}
        assert set(streams._decoders) == {(b, n) for b in (1, 2) for n in range(1, LOOP_FRAMES + 1)}
        assert progress == [(0, 4, "the 1-stream frame step"), (1, 4, "the 2-stream frame step"),
                            (2, 4, "the 1-stream decodes"), (3, 4, "the 2-stream decodes"), (4, 4, "done")]
    else:
        assert progress == [] and not streams.frames._steps and not streams._decoders
    requests = REQUESTS[:3]
    results = stream_concurrently(streams, requests, chunk_frames=3)
    for i, (text, voice, sampling, frames) in enumerate(requests):
        chunks = results[i]
        alone = eng.synthesize(text, voice, sampling, max_frames=frames)
        assert chunks[0].n_frames == 1 and chunks[-1].final
        np.testing.assert_allclose(np.concatenate([c.samples for c in chunks]), alone.samples, atol=1e-9)


def test_a_closed_stream_frees_its_slot(engine64):
    from engine.batch import BatchedStreams

    streams = BatchedStreams(engine64, slots=1, graphs=False)
    first = streams.stream("Long enough to be cut short.", Voice.preset("vivian"), sampling=Sampling(greedy=True),
                           max_frames=200)
    next(first)
    first.close()  # the caller goes away after one chunk
    chunks = list(streams.stream("Next.", Voice.preset("ryan"), sampling=Sampling(greedy=True), max_frames=3))
    assert sum(c.n_frames for c in chunks) == 3


def test_a_failed_step_reaches_the_caller_whose_audio_awaits_handout_and_the_loop_goes_on(engine64):
    """A device failure in a step reaches the caller (its first frame, decoded the iteration before and not
    yet handed out, is lost with it); the slot is freed and the next caller is served."""
    from engine.batch import BatchedStreams

    streams = BatchedStreams(engine64, slots=1, graphs=False)
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
    from engine.batch import BatchedStreams

    streams = BatchedStreams(engine64, slots=1, graphs=False)
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
    import engine.batch as batch_module
    from engine.batch import BatchedStreams

    built_on, real_build = [], batch_module.build_prompts

    def build_prompts_recording_its_thread(*args, **kwargs):
        built_on.append(threading.current_thread().name)
        return real_build(*args, **kwargs)

    monkeypatch.setattr(batch_module, "build_prompts", build_prompts_recording_its_thread)
    streams = BatchedStreams(engine64, slots=2, graphs=False)
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


def late_caller(streams, text: str, voice: Voice, max_frames: int) -> tuple[threading.Thread, list]:
    """A thread (not started) that streams ``text`` greedily, and the list its chunks land in."""
    chunks: list = []
    caller = threading.Thread(target=lambda: chunks.extend(streams.stream(
        text, voice, sampling=Sampling(greedy=True), max_frames=max_frames)))
    return caller, chunks


def start_during_step(streams, caller, when: Callable[[list[int]], bool]) -> list[int]:
    """Make ``streams``' loop start the thread ``caller`` during the first step for which ``when(steps)`` holds
    (``steps``: the frames of each step taken so far, this one last), on the loop thread, and return only once
    the caller's request is queued; returns ``steps`` (a list that grows)."""
    real_step, steps = streams.frames.step, []

    def step_starting_the_caller(n=1):
        steps.append(n)
        real_step(n)
        if caller.ident is None and when(steps):  # not started yet
            caller.start()
            while streams._requests.empty():
                threading.Event().wait(0.001)

    streams.frames.step = step_starting_the_caller
    return steps


def test_requests_that_come_while_an_idle_batchs_prompts_are_built_join_that_admission(engine64, monkeypatch):
    """Into an idle batch, three callers that come while the first caller's prompt is built are prefilled with it,
    in one admission, and each gets what it gets alone."""
    import engine.batch as batch_module
    from engine.batch import BatchedStreams

    streams = BatchedStreams(engine64, slots=4, graphs=False)
    admitted, real_add = [], streams.frames.add_many
    streams.frames.add_many = lambda requests: admitted.append(len(requests)) or real_add(requests)
    burst = [late_caller(streams, f"Caller {i} came a moment later.", Voice.preset("ryan"), 5) for i in range(3)]
    real_build = batch_module.build_prompts

    def build_while_the_burst_comes(*args, **kwargs):
        if burst[0][0].ident is None:  # the first build: the others come meanwhile
            for caller, _ in burst:
                caller.start()
            while streams._requests.qsize() < len(burst):
                threading.Event().wait(0.001)
        return real_build(*args, **kwargs)

    monkeypatch.setattr(batch_module, "build_prompts", build_while_the_burst_comes)
    first = list(streams.stream("The first caller.", Voice.preset("vivian"), sampling=Sampling(greedy=True),
                                max_frames=5))
    for caller, _ in burst:
        caller.join(timeout=120)
    assert admitted == [4]
    monkeypatch.setattr(batch_module, "build_prompts", real_build)
    for text, voice, got in [("The first caller.", "vivian", first)] + [
            (f"Caller {i} came a moment later.", "ryan", chunks) for i, (_, chunks) in enumerate(burst)]:
        alone = list(engine64.stream(text, Voice.preset(voice), sampling=Sampling(greedy=True), max_frames=5))
        assert_same_chunks(got, alone, atol=1e-9)


def test_no_prompt_is_built_during_a_step_while_every_slot_is_taken(engine64):
    """With the batch full, a request that comes while the loop steps waits unbuilt (no phase "build"); its
    prompt is built at the admission that frees a slot for it, and it gets what it gets alone."""
    from engine.batch import BatchedStreams

    streams = BatchedStreams(engine64, slots=1, graphs=False)
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
    import engine.batch as batch_module
    from engine.batch import BatchedStreams

    events, real_build = [], batch_module.build_prompts

    def build_prompts_recorded(*args, **kwargs):
        events.append("built")
        return real_build(*args, **kwargs)

    monkeypatch.setattr(batch_module, "build_prompts", build_prompts_recorded)
    streams = BatchedStreams(engine64, slots=2, graphs=False)
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


def outstanding_steps(events: list[str]) -> list[int]:
    """After each phase event: the steps queued and not yet collected."""
    queued, counts = 0, []
    for event in events:
        queued += {"step": 1, "collect": -1}.get(event, 0)
        counts.append(queued)
    return counts


def test_steady_iterations_queue_the_next_step_before_reading_back_the_last(engine64):
    """When nobody waits for a slot, the loop queues the next step before it reads back the last one (two steps
    queued and not collected), ahead of the handouts, the collect and the decode's launch, and admits nobody
    while two are queued; three callers through two slots, streams ending and slots reused meanwhile, still get
    what each gets alone."""
    from engine.batch import BatchedStreams

    streams = BatchedStreams(engine64, slots=2, graphs=False)
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
    from engine.batch import BatchedStreams

    streams = BatchedStreams(engine64, slots=2, graphs=False)
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
    from engine.batch import BatchedStreams

    streams = BatchedStreams(engine64, slots=2, graphs=False)
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


def test_steps_queued_before_a_collect_change_nothing_that_it_hands_out(engine64):
    """Two steps queued, then two collects: the first hands out the first step's frames and the second the
    second's, the same frames and ends as collecting after each step."""
    eng = engine64
    prompts = [build_prompt(eng.model.talker, eng.config, eng.tokenizer, Voice.preset(v), t)
               for v, t in (("vivian", "Hi."), ("ryan", "A second one."))]
    got = []
    for queued_ahead in (False, True):
        batch = BatchedFrames(eng.model.talker, slots=2, graphs=False)
        batch.add_many([(p, Sampling(greedy=True), 0, 5) for p in prompts])  # the second step passes frame 5
        with torch.inference_mode():
            batch.step(3)
            if queued_ahead:
                batch.step(3)
                first = batch.collect()
            else:
                first = batch.collect()
                batch.step(3)
            got.append([first, batch.collect()])
    for plain, ahead in zip(got[0], got[1], strict=True):
        assert plain.keys() == ahead.keys()
        for slot, (codes, ended) in plain.items():
            np.testing.assert_array_equal(ahead[slot][0], codes)
            assert ahead[slot][1] == ended
    assert [len(c) for c, _ in got[1][0].values()] == [3, 3] and all(e for _, e in got[1][1].values())


def test_a_collect_skips_slots_released_since_their_step_and_taken_by_new_streams(engine64):
    """A step queued, its slot released and given to a new stream before the collect: that collect hands the
    new stream nothing (the frames were the old stream's), and the next step's collect its own frames."""
    eng = engine64
    prompt = build_prompt(eng.model.talker, eng.config, eng.tokenizer, Voice.preset("vivian"), "Hi.")
    batch = BatchedFrames(eng.model.talker, slots=2, graphs=False)
    batch.add_many([(prompt, Sampling(greedy=True), 0, 9)] * 2)
    with torch.inference_mode():
        batch.step(2)
        batch.release(1)
        assert batch.add(prompt, Sampling(greedy=True), 0, 9) == 1
        collected = batch.collect()
        assert set(collected) == {0} and len(collected[0][0]) == 2
        batch.step(2)
        collected = batch.collect()
    assert set(collected) == {0, 1} and len(collected[1][0]) == 2
    alone = eng.generate_codes("Hi.", Voice.preset("vivian"), Sampling(greedy=True), max_frames=4)
    np.testing.assert_array_equal(collected[1][0], alone[:2])  # the new stream's first frames
    np.testing.assert_array_equal(collected[0][0], alone[2:4])  # the old one's next


def test_steps_run_over_the_smallest_bucket_holding_the_active_slots(engine64):
    eng = engine64
    prompt = build_prompt(eng.model.talker, eng.config, eng.tokenizer, Voice.preset("vivian"), "Hi.")
    batch = BatchedFrames(eng.model.talker, slots=6, graphs=False)
    assert batch.buckets == [1, 2, 4, 6]
    slots = [batch.add(prompt, Sampling(greedy=True), 0, 4) for _ in range(3)]
    assert slots == [0, 1, 2]
    with torch.inference_mode():
        batch.step(1)
    assert set(batch._steps) == {4}
    batch.release(1)
    batch.release(2)
    with torch.inference_mode():
        batch.step(1)
    assert set(batch._steps) == {1, 4}
    assert batch.add(prompt, Sampling(greedy=True), 0, 4) == 1  # the lowest free slot


@pytest.fixture(scope="module")
def base64(tiny_model_dir):
    return Engine.from_pretrained(tiny_model_dir("base"), dtype=torch.float64)


def test_clones_and_segments_through_shared_slots_equal_each_caller_alone(base64):
    """Callers with in-context and x-vector clones, some speaking several segments, share two slots; a
    segment ends mid-iteration and the next one continues its decoder state in another slot. Each caller
    gets the chunks and audio it would get from ``Engine.stream`` alone."""

    from engine.batch import BatchedStreams

    eng = base64
    rng = np.random.default_rng(4)

    def clone(ref_frames: int | None) -> Voice:
        embedding = rng.standard_normal(eng.config.talker_config.hidden_size).astype(np.float32)
        if ref_frames is None:
            return Voice("clone", language="english", speaker_embedding=embedding)
        return Voice("clone", language="english", ref_text="Some reference words.", speaker_embedding=embedding,
                     ref_codes=rng.integers(0, 2048, size=(ref_frames, 16)))

    requests = [
        ("One sentence here. And a second one, a little longer than the first!", clone(6), Sampling(seed=3), 7),
        ("Hi there. Bye now. See you.", clone(None), Sampling(greedy=True), 6),
        ("A single segment.", clone(9), Sampling(seed=8, top_k=20), 9),
        ("Two parts. The second part.", clone(4), Sampling(seed=1), 5),
    ]
    streams = BatchedStreams(eng, slots=2, graphs=False)
    results = stream_concurrently(streams, requests, chunk_frames=3)
    for i, (text, voice, sampling, frames) in enumerate(requests):
        alone = list(eng.stream(text, voice, chunk_frames=3, first_chunk_frames=1, sampling=sampling,
                                max_frames=frames))
        assert_same_chunks(results[i], alone, atol=1e-6)
