"""``BatchedPrefill`` (its graphs run eagerly here, on the CPU): the bucket each admission takes, and slots
prefilled from a padded bucket hold what the eager batched prefill writes (float64), while the other slots
are left as they were; what fits no bucket runs eagerly."""

from __future__ import annotations

import pytest
import torch

from engine import Engine, Sampling, Voice
from engine.core.frames.batched import BatchedFrames
from engine.core.frames.batched.prefill import TOKENS, BatchedPrefill
from engine.core.prompts import build_prompt

TEXTS = ["Hi.", "A somewhat longer sentence to speak aloud.", "你好，世界。", "Short, but not the shortest one."]


@pytest.fixture(scope="module")
def engine64(tiny_model_dir):
    return Engine.from_pretrained(tiny_model_dir("custom_voice"), dtype=torch.float64)


def _prompts(eng, texts):
    return [build_prompt(eng.model.talker, eng.config, eng.tokenizer, Voice.preset("vivian"), t) for t in texts]


def test_the_bucket_of_fewest_padded_positions(engine64):
    frames = BatchedFrames(engine64.model.talker, 64, graphs=False, captured_prefill=True)
    prefill = frames.prefill
    assert prefill.rows == [1, 2, 4, 8, 16, 32, 64]
    assert all(r * p <= TOKENS for r, p in prefill.buckets)
    assert prefill.bucket(1, 10) == (1, 32)
    assert prefill.bucket(3, 33) == (4, 64)
    assert prefill.bucket(63, 100) == (64, 128)
    assert prefill.bucket(64, 129) is None  # 64 x 256 positions is more than TOKENS
    assert prefill.bucket(1, 513) is None  # longer than the longest bucket
    assert frames._one_pass(63, 100) and not frames._one_pass(64, 129)


def test_slots_hold_what_the_eager_prefill_writes_and_the_others_are_untouched(engine64, monkeypatch):
    talker = engine64.model.talker
    prompts = _prompts(engine64, TEXTS)
    requests = [(p, Sampling(greedy=True), 0, 20) for p in prompts]
    eager = BatchedFrames(talker, 8, graphs=False, captured_prefill=False)
    captured = BatchedFrames(talker, 8, graphs=False, captured_prefill=True)
    calls = []
    real = BatchedPrefill.__call__

    def recording(self, slots, group):
        calls.append((slots.tolist(), len(group)))
        return real(self, slots, group)

    monkeypatch.setattr(BatchedPrefill, "__call__", recording)
    with torch.inference_mode():
        for frames in (eager, captured):
            frames.state.cache.k.fill_(7.0)  # what the slots not prefilled must still hold
            frames.state.cache.v.fill_(7.0)
            frames.add_many(requests[:1])
            frames.add_many(requests[1:])
    assert calls == [([0], 1), ([1, 2, 3], 3)]
    for slot, prompt in enumerate(prompts):
        n = prompt.length
        for name in ("k", "v"):
            got = getattr(captured.state.cache, name)[:, slot, :, :n]
            torch.testing.assert_close(got, getattr(eager.state.cache, name)[:, slot, :, :n], rtol=1e-10, atol=1e-10)
        torch.testing.assert_close(captured.state.hidden[slot], eager.state.hidden[slot], rtol=1e-10, atol=1e-10)
    assert torch.all(captured.state.cache.k[:, 4:] == 7.0) and torch.all(captured.state.cache.v[:, 4:] == 7.0)
    assert captured.state.pos.tolist()[:4] == [p.length for p in prompts]


def test_the_batch_generates_what_it_generates_with_the_eager_prefill(engine64):
    talker = engine64.model.talker
    requests = [(p, Sampling(greedy=True), 0, 12) for p in _prompts(engine64, TEXTS)]
    codes = []
    with torch.inference_mode():
        for captured_prefill in (False, True):
            frames = BatchedFrames(talker, 4, graphs=False, captured_prefill=captured_prefill)
            frames.add_many(requests)
            frames.step(8)
            codes.append({slot: c.tolist() for slot, (c, _) in frames.collect().items()})
    assert codes[0] == codes[1] and all(len(c) for c in codes[1].values())


def test_a_prompt_no_bucket_holds_is_prefilled_eagerly(engine64, monkeypatch):
    talker = engine64.model.talker
    frames = BatchedFrames(talker, 2, graphs=False, captured_prefill=True)
    monkeypatch.setattr(frames.prefill, "positions", [8])  # every prompt here is longer
    prompt = _prompts(engine64, TEXTS[1:2])[0]
    eager = BatchedFrames(talker, 2, graphs=False, captured_prefill=False)
    with torch.inference_mode():
        frames.add_many([(prompt, Sampling(greedy=True), 0, 5)])
        eager.add_many([(prompt, Sampling(greedy=True), 0, 5)])
    assert isinstance(frames.prefill, BatchedPrefill) and frames.prefill._graphs == {}  # no bucket was used
    torch.testing.assert_close(frames.state.hidden[0], eager.state.hidden[0], rtol=0, atol=0)


def test_a_bucket_whose_capture_fails_is_prefilled_eagerly(engine64, monkeypatch, caplog):
    import engine.core.frames.compile as module  # where the prefill's graphs are captured (capture_compiled)
    from engine.errors import UnsupportedError

    def failing(*args, **kwargs):
        raise UnsupportedError("capturing the prefill CUDA graph failed (test)")

    monkeypatch.setattr(module, "Graphed", failing)
    talker = engine64.model.talker
    frames = BatchedFrames(talker, 2, graphs=False, captured_prefill=True)
    eager = BatchedFrames(talker, 2, graphs=False, captured_prefill=False)
    prompt = _prompts(engine64, TEXTS[:1])[0]
    with torch.inference_mode(), caplog.at_level("WARNING"):
        frames.add_many([(prompt, Sampling(greedy=True), 0, 5)])
        eager.add_many([(prompt, Sampling(greedy=True), 0, 5)])
    assert frames.prefill._graphs == {(1, 32): None} and "prefilled eagerly" in caplog.text
    torch.testing.assert_close(frames.state.hidden[0], eager.state.hidden[0], rtol=0, atol=0)


def test_a_prefill_that_fails_to_compile_is_captured_without_compiling_and_never_compiled_again(engine64, monkeypatch,
                                                                                                 caplog):
    import engine.core.frames.compile as module

    real, captures = module.Graphed, []

    def fails_when_compiled(fn, *args, **kwargs):
        compiled = "forward" in vars(talker.model.layers[0])  # compiled_kernels patches each layer's forward
        captures.append(compiled)
        if compiled:
            raise RuntimeError("inductor failed (test)")
        return real(fn, *args, **kwargs)

    monkeypatch.setattr(module, "Graphed", fails_when_compiled)
    talker = engine64.model.talker
    frames = BatchedFrames(talker, 2, graphs=False, captured_prefill=True)
    frames.prefill._compile = True  # as on a GPU
    with torch.inference_mode(), caplog.at_level("WARNING"):
        frames.prefill._graph(1, 32)
        frames.prefill._graph(2, 32)
    assert captures == [True, False, False] and "capturing it without compilation" in caplog.text
    assert frames.prefill._graphs[1, 32] is not None and not frames.prefill._compile


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
def test_compiled_prefill_graphs_write_what_the_eager_prefill_writes_on_a_gpu(tiny_model_dir):
    """Captured with the talker layers compiled (three buckets: one static compile, then dynamic ones), the
    slots hold the eager prefill's keys, values and hidden states. To float32 precision, not float64's: the
    RMSNorms compute in float32 whatever the dtype (as the reference does), and the compiled ones sum their
    squares in another order (on an H200 the largest difference was 2.9e-7)."""
    eng = Engine.from_pretrained(tiny_model_dir("custom_voice"), device="cuda", dtype=torch.float64)
    talker = eng.model.talker
    prompts = _prompts(eng, TEXTS)
    groups = [[prompts[0]], prompts[1:3], prompts]
    with torch.inference_mode():
        for group in groups:
            requests = [(p, Sampling(greedy=True), 0, 20) for p in group]
            eager = BatchedFrames(talker, 4, graphs=False, captured_prefill=False)
            captured = BatchedFrames(talker, 4, graphs=True)
            for frames in (eager, captured):
                frames.add_many(requests)
            assert captured.prefill._compile  # compiled, and stayed so
            for slot, prompt in enumerate(group):
                n = prompt.length
                for name in ("k", "v"):
                    torch.testing.assert_close(getattr(captured.state.cache, name)[:, slot, :, :n],
                                               getattr(eager.state.cache, name)[:, slot, :, :n], rtol=1e-4, atol=1e-5)
                torch.testing.assert_close(captured.state.hidden[slot], eager.state.hidden[slot], rtol=1e-4, atol=1e-5)
