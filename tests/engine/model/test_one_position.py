"""The fast CPU path's one-position steps (engine.core.cpu.one_position) against ``DecoderStack.forward``.

Tolerances: both compute the same operations on the same float32 values except the attention (its scale, softmax
and sums in another order, a few float32 ulps apart). Those differences reach the next projection through its
bfloat16 activations, where an ulp can round a value to the neighbouring bfloat16 (0.4% apart), so steps after the
first are held to 1% relative RMS; at position 0 the attention over one slot is that slot's value on both paths,
so the first step is exact.
"""

from __future__ import annotations

import pytest
import torch

import engine.core.frames.eager as eager
from engine import Engine, Sampling, Voice
from engine.core.cpu.one_position import OnePosition, one_position_stacks, runs_one_position
from engine.core.prompts import build_prompt


def relative_rms(got: torch.Tensor, expected: torch.Tensor) -> float:
    return float((got.double() - expected.double()).norm() / expected.double().norm())


@pytest.mark.parametrize("which", ["talker", "predictor"])
def test_a_step_is_the_stacks_forward_at_its_position(fast, which):
    talker = fast.model.talker
    stack = talker.model if which == "talker" else talker.code_predictor.model
    width, positions = stack.norm.weight.shape[0], 14
    x = torch.randn(1, positions, width, generator=torch.Generator().manual_seed(1))
    expected_cache = stack.new_cache(1, 16, torch.float32, "cpu")
    cache = stack.new_cache(1, 16, torch.float32, "cpu")
    step = OnePosition(stack).over(cache)
    with torch.inference_mode():
        for pos in range(positions):
            expected = stack(x[:, pos : pos + 1], torch.tensor([[pos]]), expected_cache, kv_len=pos + 1)[:, 0]
            got = step(x[:, pos], pos)
            assert got.shape == expected.shape == (1, width) and got.dtype == torch.float32
            if pos == 0:
                assert torch.equal(got, expected)
                assert torch.equal(cache.k[:, :, :, 0], expected_cache.k[:, :, :, 0])
                assert torch.equal(cache.v[:, :, :, 0], expected_cache.v[:, :, :, 0])
            assert relative_rms(got, expected) < 0.01, pos
        assert relative_rms(cache.k, expected_cache.k) < 0.01 and relative_rms(cache.v, expected_cache.v) < 0.01
        assert step(x[:, 0], positions, final_norm=False) is None  # written into the cache only
        assert cache.k[:, :, :, positions].abs().sum() > 0


def test_only_the_fast_path_steps_one_position(fast, tiny_model_dir):
    talker = fast.model.talker
    assert runs_one_position(talker.model) and runs_one_position(talker.code_predictor.model)
    assert one_position_stacks(talker) is one_position_stacks(talker)  # made once per talker
    exact = Engine.from_pretrained(tiny_model_dir("custom_voice"), device="cpu", cpu_int8=False)
    assert one_position_stacks(exact.model.talker) is None
    prompt = build_prompt(talker, fast.config, fast.tokenizer, Voice.preset("vivian"), "Hello there.")
    gen = eager.FrameGenerator(talker, prompt, Sampling(seed=1), 4)
    assert gen.talker_step is not None and gen.predictor_pass is not None


def _talkers_pass(gen: eager.FrameGenerator) -> torch.Tensor:
    """``FrameGenerator.prefill`` through the talker's own pass, whatever its steps."""
    n = gen.prompt.length
    return gen.talker.model(gen.prompt.embeds, torch.arange(n)[None], gen.cache, kv_len=n)[:, -1]


def _frame_ops(talker, prompt, monkeypatch, stepped: bool) -> tuple[int, torch.Tensor]:
    """PyTorch operations of two frames after the first (views not counted), and the frames' codes. The prompt
    goes through PyTorch's pass either way: the Numba steps' own (``NumbaBoundStep.rows``) rounds each activation
    to 15 bits where PyTorch's one-row kernel rounds it to bfloat16, enough to move a near tie of the tiny model's
    reference frames."""
    monkeypatch.setattr(eager.FrameGenerator, "prefill", _talkers_pass)
    if not stepped:
        monkeypatch.setattr(eager, "one_position_stacks", lambda t: None)
    frames = eager.FrameGenerator(talker, prompt, Sampling(greedy=True, min_frames=8), 8).frames()
    codes = [next(frames)]
    with torch.profiler.profile() as prof:
        codes += [next(frames), next(frames)]
    monkeypatch.undo()
    views = ("aten::empty", "aten::view", "aten::as_strided", "aten::_reshape_alias", "aten::expand")
    return sum(e.count for e in prof.key_averages() if not e.key.startswith(views)), torch.stack(codes)


def test_a_frame_launches_far_fewer_operations_and_makes_the_same_frames(fast, monkeypatch):
    """The point of the module: per frame at most 70% of the reference path's operations (at full size 0.6B,
    14,523 against 23,513). The greedy frames are the reference's: on the tiny
    model the two paths' few-ulp differences do not change an argmax."""
    talker = fast.model.talker
    prompt = build_prompt(talker, fast.config, fast.tokenizer, Voice.preset("vivian"), "Hello there, once more.")
    stepped, stepped_codes = _frame_ops(talker, prompt, monkeypatch, stepped=True)
    reference, reference_codes = _frame_ops(talker, prompt, monkeypatch, stepped=False)
    assert stepped < 0.7 * reference, (stepped, reference)
    assert torch.equal(stepped_codes, reference_codes)
