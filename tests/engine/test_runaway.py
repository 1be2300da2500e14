"""The runaway guard end to end: a model that never ends is cut at each segment's frame budget, one that is stuck
on one code is cut once its loop is certain; the call goes on with its next segment, the caller hears why on the
segment's last chunk, and the single-stream and batched paths cut the same frames."""

from __future__ import annotations

import numpy as np
import pytest

from engine import Engine, Sampling, Voice
from engine.core.frames.guard import LOOP_WINDOW, describe_cuts
from engine.core.speech_plan import default_max_frames
from engine.synthetic.checkpoint import build_checkpoint
from tests.engine.concurrent_streams import assert_same_chunks

GREEDY = Sampling(greedy=True, repetition_penalty=1.0)  # the misbehaving heads misbehave under argmax
TWO_LINES = "The first line.\nThe second line."


@pytest.fixture(scope="module")
def misbehaving(tmp_path_factory):
    """Engines on tiny checkpoints whose codec head never ends ("never_ends") or is stuck on code 0 ("stuck")."""
    loaded = {}

    def get(head: str, precision: str | None = None) -> Engine:
        """``precision``: the plan's (default: this machine's); the tests holding two frame loops equal ask for the
        exact one, whose steps are the same in both."""
        if (head, precision) not in loaded:
            path = build_checkpoint(tmp_path_factory.mktemp(head), "tiny", "custom_voice", seed=0, head=head)
            loaded[head, precision] = Engine.from_pretrained(path, device="cpu", precision=precision)
        return loaded[head, precision]

    return get


def voice(eng) -> Voice:
    return Voice.preset(eng.speakers[0], language="english")


def per_segment(chunks) -> dict[int, tuple[int, list]]:
    """segment -> (frames, warnings of its chunks)."""
    out: dict[int, tuple[int, list]] = {}
    for c in chunks:
        frames, warnings = out.get(c.segment, (0, []))
        out[c.segment] = (frames + c.n_frames, warnings + ([c.warning] if c.warning else []))
    return out


def test_a_model_that_never_ends_is_cut_at_every_segments_budget(misbehaving, caplog):
    eng = misbehaving("never_ends")
    with caplog.at_level("DEBUG", logger="engine"):
        chunks = list(eng.stream(TWO_LINES, voice(eng), chunk_frames=4, sampling=GREEDY, max_frames=9))
    got = per_segment(chunks)
    assert list(got) == [0, 1]  # the cut segment is not the end of the call
    for frames, warnings in got.values():
        assert frames == 9 and len(warnings) == 1 and "frame budget (9 frames" in warnings[0]
    last_of_each = [c for c in chunks if c.warning]
    assert [c.segment for c in last_of_each] == [0, 1] and last_of_each[-1] is chunks[-1] and chunks[-1].final
    cut_records = [r for r in caplog.records if " cut " in r.getMessage()]
    assert [r.getMessage().split(" cut ")[0] for r in cut_records] == ["segment 0 (0-15)", "segment 1 (16-32)"]
    assert {r.levelname for r in cut_records} == {"DEBUG"}  # a long job cuts hundreds: callers say it once
    assert describe_cuts([c.warning for c in last_of_each], len(got)) == (
        "2 of 2 segments were cut short: 2 at their frame budget (speech that did not end)")


def test_cuts_are_described_once_by_kind():
    budget = "cut at its frame budget (9 frames, 0.7 s) before the model ended it"
    loop = "cut after 5.0 s: its speech codes repeat a pattern of 1 frame for 5 s"
    assert describe_cuts([], 250) is None
    assert describe_cuts([budget] * 3, 250) == (
        "3 of 250 segments were cut short: 3 at their frame budget (speech that did not end)")
    assert describe_cuts([budget, loop], 2) == (
        "2 of 2 segments were cut short: 1 at its frame budget (speech that did not end), 1 because its speech "
        "codes looped")
    assert describe_cuts([loop], 1) == "1 of 1 segment was cut short: 1 because its speech codes looped"


def test_the_default_budget_scales_with_the_segments_text(misbehaving):
    eng = misbehaving("never_ends")
    got = per_segment(eng.stream("Hi.", voice(eng), chunk_frames=25, sampling=GREEDY))
    assert got[0][0] == default_max_frames("Hi.") and len(got[0][1]) == 1
    plan = eng.plan("Hi.\nA longer second line, with more to say.", voice(eng))
    assert [plan.frame_budget(s) for s in plan.segments] == [default_max_frames(s.text) for s in plan.segments]
    assert plan.frame_budget(plan.segments[0]) < plan.frame_budget(plan.segments[1])


def test_a_model_stuck_on_one_code_is_cut_when_the_loop_is_certain(misbehaving):
    eng = misbehaving("stuck")
    chunks = list(eng.stream("Stuck.", voice(eng), chunk_frames=5, sampling=GREEDY, max_frames=500))
    codes = eng.generate_codes("Stuck.", voice(eng), sampling=GREEDY, max_frames=500)
    assert (codes[:, 0] == 0).all()
    # frame 0 starts the run and each of the next LOOP_WINDOW - 1 repeats it; the frame that completes it goes
    assert sum(c.n_frames for c in chunks) == len(codes) == LOOP_WINDOW
    assert [c.warning is not None for c in chunks].count(True) == 1 and "repeat a pattern of 1 frame" in \
        chunks[-1].warning and chunks[-1].final


def test_a_cut_on_a_chunk_boundary_ends_its_segment_with_an_empty_chunk(misbehaving):
    eng = misbehaving("stuck")
    chunks = list(eng.stream("Stuck.", voice(eng), chunk_frames=LOOP_WINDOW - 1, first_chunk_frames=1,
                             sampling=GREEDY, max_frames=500))
    assert [c.n_frames for c in chunks] == [1, LOOP_WINDOW - 1, 0]
    assert chunks[-1].warning and chunks[-1].final and len(chunks[-1].samples) == 0


@pytest.mark.parametrize("head", ["never_ends", "stuck"])
def test_the_batched_path_cuts_the_same_frames_with_the_same_warnings(misbehaving, head):
    eng = misbehaving(head, "exact")
    alone = list(eng.stream(TWO_LINES, voice(eng), chunk_frames=3, sampling=GREEDY, max_frames=70,
                            largest_chunk_frames=3))  # the batched path's fixed sizes
    streams = eng.batched(2, warmup=False)
    batched = list(streams.stream(TWO_LINES, voice(eng), chunk_frames=3, sampling=GREEDY, max_frames=70))
    assert_same_chunks(batched, alone, atol=1e-5)
    assert [c.warning for c in batched] == [c.warning for c in alone]
    assert sum(1 for c in alone if c.warning) == 2


def test_a_normal_model_is_not_cut_before_its_budget(tiny_engine):
    """The tiny random model (it rarely ends) speaks its whole budget with no loop warning."""
    eng = tiny_engine("custom_voice")
    chunks = list(eng.stream("A normal sentence.", voice(eng), chunk_frames=8, sampling=Sampling(seed=3),
                             max_frames=120))
    assert sum(c.n_frames for c in chunks) == 120
    assert [c.warning for c in chunks if c.warning] == [chunks[-1].warning]
    assert "frame budget" in chunks[-1].warning
    assert np.isfinite(np.concatenate([c.samples for c in chunks])).all()


@pytest.mark.parametrize("head", ["never_ends", "stuck"])
def test_the_static_step_path_cuts_the_same_frames_with_the_same_warnings(misbehaving, head):
    """The single-stream graphs path, run eagerly on a CPU, consults the same guard at its chunk read-backs."""
    from engine.core.frames.graphs.runner import GraphStreamer

    eng = misbehaving(head, "exact")
    alone = list(eng.stream(TWO_LINES, voice(eng), chunk_frames=4, sampling=GREEDY, max_frames=70,
                            largest_chunk_frames=4))  # the graphs' fixed sizes
    eng._single = GraphStreamer(eng.model.talker, eng.decoder, (1, 4), enabled=False)
    try:
        static = list(eng.stream(TWO_LINES, voice(eng), chunk_frames=4, sampling=GREEDY, max_frames=70,
                                 largest_chunk_frames=4))
    finally:
        eng._single = None
    assert_same_chunks(static, alone, atol=1e-5)
    assert [c.warning for c in static] == [c.warning for c in alone] and sum(1 for c in alone if c.warning) == 2
