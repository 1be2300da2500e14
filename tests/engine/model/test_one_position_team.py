"""A one-position step by a team of threads in one parallel region (``engine.model.one_position_team``): the
per-region step's values whatever the team's size, nothing written where the team cannot gather, and barriers
that hold under many rounds."""

from __future__ import annotations

import numba
import numpy as np
import pytest
import torch

import engine.model.one_position_numba as jit
from engine.model import one_position_team, team_sync
from engine.model.one_position import one_position_stacks

pytestmark = pytest.mark.skipif(jit.numba is None, reason="Numba is not installed")
POSITIONS = 14


@pytest.fixture(scope="module")
def stacks(fast):
    talker = fast.model.talker
    made = jit.numba_stacks(talker, one_position_stacks(talker))
    assert made is not None
    return made[:2]


def stepped(stack, team: int | None, vnni: bool, inputs: torch.Tensor):
    """Outputs [positions, H] and the key and value caches of ``inputs`` stepped one position at a time, by a team
    of ``team`` members on as many of Numba's threads, which must gather (None: the per-region step)."""
    stack.vnni = vnni and stack.vnni_able
    bound = stack.over(KV(stack))
    assert bound.team is not None  # the option's default: a team takes int8 stacks
    sc = bound.scratch
    outs = []
    numba.set_num_threads(team or numba.config.NUMBA_NUM_THREADS)
    try:
        for pos in range(inputs.shape[0]):
            out = np.empty(inputs.shape[1], np.float32)
            bound.x[:] = inputs[pos].numpy()
            if team is None:
                jit._stack_step(bound.x, pos, *bound.layers, True, out, *sc)
            else:  # a loaded machine may keep a member off its thread: then nothing is written, and it tries again
                assert any(one_position_team.team_step(bound.x, pos, *bound.layers, True, out, sc[1], sc[3], sc[4],
                                                       sc[5], sc[6], *bound.team, team) for _ in range(5))
            outs.append(out)
    finally:
        numba.set_num_threads(numba.config.NUMBA_NUM_THREADS)
    return np.stack(outs), bound.keys.copy(), bound.values.copy()


def KV(stack):
    from engine.model.layers import KVCache

    return KVCache(stack.in_w.shape[0], 1, stack.positions.kv_heads, 16, stack.positions.head_dim, torch.float32, "cpu")


@pytest.mark.parametrize(("which", "vnni"), [(0, False), (0, True), (1, False)],
                         ids=["talker-16-bit", "talker-vnni", "predictor-16-bit"])  # the tiny predictor's 48 columns
def test_a_team_steps_as_the_per_region_step_whatever_its_size(stacks, which, vnni):
    """Each position's output and the caches: teams of one and of two members (each gathered) and the per-region
    step agree within the activations' rounding: the same arithmetic, each row, head and norm computed whole by
    one member, in code compiled apart (fast-math may contract or order a sum's terms otherwise in each, and a
    value a float32 step apart can round an activation to its neighbouring 15-bit step, 1/16383 of the largest);
    one row of a product computed wrongly or by no member would be off by its whole value, a relative RMS of
    several percent."""
    stack = stacks[which]
    assert stack.vnni_able or not vnni
    inputs = torch.randn(POSITIONS, stack.in_w.shape[1], generator=torch.Generator().manual_seed(which))
    regions = stepped(stack, None, vnni, inputs)
    for team in range(1, min(2, numba.config.NUMBA_NUM_THREADS) + 1):
        for got, expected in zip(stepped(stack, team, vnni, inputs), regions, strict=True):
            assert relative_rms(got, expected) < 1e-3
            assert np.abs(got - expected).max() < 5e-3 * np.abs(expected).max()
    assert np.abs(regions[0]).max() > 0


def relative_rms(got: np.ndarray, expected: np.ndarray) -> float:
    return float(np.linalg.norm((got - expected).ravel()) / np.linalg.norm(expected.ravel()))


def test_a_team_that_cannot_gather_writes_nothing(stacks):
    """More members than Numba's threads: a thread would run two members one after the other, so the team gives up
    at its start: False, and the residual stream and the caches as they were."""
    stack = stacks[0]
    bound = stack.over(KV(stack))
    bound.x[:] = np.linspace(-1, 1, bound.x.shape[0], dtype=np.float32)
    before = bound.x.copy()
    out = np.full(bound.x.shape[0], 7.0, np.float32)
    sc = bound.scratch
    numba.set_num_threads(1)
    try:
        went = one_position_team.team_step(bound.x, 3, *bound.layers, True, out, sc[1], sc[3], sc[4], sc[5], sc[6],
                                           *bound.team, 2)
    finally:
        numba.set_num_threads(numba.config.NUMBA_NUM_THREADS)
    assert went is False
    assert np.array_equal(bound.x, before) and (out == 7.0).all()
    assert not bound.keys.any() and not bound.values.any()


def test_a_step_whose_team_gives_up_steps_per_region_and_stops_trying(stacks):
    """Two members on one thread: the team gives up, the per-region step runs instead (the same outputs within
    rounding), and after GIVE_UPS such steps in a row the bound step no longer tries."""
    stack = stacks[0]
    stack.vnni = False
    bound, alone = stack.over(KV(stack)), stack.over(KV(stack))
    sync = bound.team[-2]
    numba.set_num_threads(1)
    try:
        for pos in range(one_position_team.GIVE_UPS + 1):
            x = torch.linspace(-1, 1, bound.x.shape[0]) * (pos + 1)
            got, expected = np.empty(x.shape[0], np.float32), np.empty(x.shape[0], np.float32)
            bound.x[:], alone.x[:] = x.numpy(), x.numpy()
            one_position_team.step(bound.x, pos, bound.layers, True, got, bound.scratch, bound.team, 2)
            jit._stack_step(alone.x, pos, *alone.layers, True, expected, *alone.scratch)
            assert relative_rms(got, expected) < 1e-3  # the per-region step, compiled inside ``step``
            assert sync[team_sync.FAILED] == min(pos + 1, one_position_team.GIVE_UPS)
    finally:
        numba.set_num_threads(numba.config.NUMBA_NUM_THREADS)


@numba.njit(parallel=True)
def _rounds(sync, written, rounds, team, errors):
    team_sync.reset(sync)
    for member in numba.prange(team):
        if not team_sync.join_team(sync, team, team_sync.GATHER_CYCLES):
            continue
        for r in range(rounds):
            written[member] = r
            team_sync.wait_all(sync, team)
            for other in range(team):  # every member sees every other's write of this round, none of the next
                if written[other] != r:
                    errors[member] += 1
            team_sync.wait_all(sync, team)
    return team_sync.load(sync, team_sync.STATE) == team_sync.GO


def test_barriers_keep_every_member_in_the_same_round():
    team = min(2, numba.config.NUMBA_NUM_THREADS)
    numba.set_num_threads(team)
    sync, written = np.zeros(team_sync.SYNC_WORDS, np.int64), np.zeros(team, np.int64)
    errors = np.zeros(team, np.int64)
    assert _rounds(sync, written, 1, team, errors) in (True, False)  # the first call starts the threads
    assert _rounds(sync, written, 20_000, team, errors)
    assert not errors.any() and (written == 19_999).all()


def test_a_frozen_app_keeps_the_per_region_steps(fast, monkeypatch):
    """Where nothing compiled is cached (a frozen app compiles at each start), a stack is not stepped by a team:
    its compile would cost more than it saves in a short session."""
    monkeypatch.setattr(jit, "_cacheable", lambda: False)
    stack = jit.NumbaPosition(one_position_stacks(fast.model.talker)[1])
    assert not stack.team and stack.over(KV(stack)).team is None


def test_the_option_turns_the_team_off(tiny_model_dir, engine_options):
    from engine import Engine

    engine_options(cpu_team=False)
    plain = Engine.from_pretrained(tiny_model_dir("custom_voice"), device="cpu", cpu_int8=True)
    assert plain.cpu_numba_steps and not plain.cpu_team_steps
    stack = plain.model.talker._numba_stacks[1][0]
    assert stack.over(KV(stack)).team is None
    engine_options(cpu_team=True)
    teamed = Engine.from_pretrained(tiny_model_dir("custom_voice"), device="cpu", cpu_int8=True)
    assert teamed.cpu_team_steps
