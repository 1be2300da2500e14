"""``BatchedFrames``: each stream's codes in a batch equal the same stream run alone, whatever joins or leaves
around it; slots, buckets and the read-back of steps queued ahead."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from engine import Sampling, Voice
from engine.core.frames.batched import BatchedFrames
from engine.core.prompts import build_prompt
from tests.engine.frames.batched.loop_helpers import REQUESTS, generate_batch


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
    import engine.core.frames.batched.frames

    monkeypatch.setattr(engine.core.frames.batched.frames, "PREFILL_TOKENS", budget)
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
