"""Player with a fake sounddevice (tests/qtapp/conftest.py): the callback, counters and signals."""

from __future__ import annotations

import numpy as np
import pytest

from qtapp.player import Player

SR = 24000


@pytest.fixture
def player(qtbot, fake_sd):
    p = Player(sd_module=fake_sd, sample_rate=SR, capacity_s=1.0)
    yield p
    p.close()


def pull(fake_sd, frames: int) -> np.ndarray:
    """What the device plays in one callback of ``frames`` samples."""
    out = np.full((frames, 1), np.nan, dtype=np.float32)
    fake_sd.streams[-1].callback(out, frames, None, None)
    return out[:, 0]


def ramp(n: int, start: float = 0.0) -> np.ndarray:
    return (start + np.arange(n) / 1e5).astype(np.float32)


def test_one_stream_is_opened_on_first_write_and_reused(player, fake_sd):
    assert fake_sd.streams == []
    player.write(ramp(100), 0)
    player.write(ramp(100), 1)
    player.stop()
    player.write(ramp(100), 0)
    assert len(fake_sd.streams) == 1
    stream = fake_sd.streams[0]
    assert stream.started
    assert stream.kwargs["samplerate"] == SR
    assert stream.kwargs["channels"] == 1
    assert stream.kwargs["dtype"] == "float32"


def test_plays_samples_in_order_then_counts_one_underrun_per_dry_spell(player, fake_sd):
    a, b = ramp(1000), ramp(300, start=0.5)
    player.write(a, 0)
    assert player.playing
    np.testing.assert_array_equal(pull(fake_sd, 600), a[:600])
    out = pull(fake_sd, 600)
    np.testing.assert_array_equal(out[:400], a[600:])
    np.testing.assert_array_equal(out[400:], 0.0)
    pull(fake_sd, 600)  # still dry: the same underrun
    assert player.underruns == 1
    assert player.starved_seconds == pytest.approx(800 / SR)
    player.write(b, 0)
    np.testing.assert_array_equal(pull(fake_sd, 300), b)
    pull(fake_sd, 10)
    assert player.underruns == 2


def test_draining_after_end_of_stream_is_not_an_underrun(player, fake_sd, qtbot):
    player.write(ramp(500), 0)
    player.end_of_stream()
    pull(fake_sd, 400)
    with qtbot.waitSignal(player.finished, timeout=1000):
        pull(fake_sd, 400)
    assert player.underruns == 0
    assert not player.playing
    np.testing.assert_array_equal(pull(fake_sd, 100), 0.0)  # idle: silence, no underrun
    assert player.underruns == 0


def test_end_of_stream_waits_for_the_buffer(player, fake_sd, qtbot):
    finished = []
    player.finished.connect(lambda: finished.append(True))
    player.write(ramp(500), 0)
    player.end_of_stream()
    qtbot.wait(100)
    assert finished == []
    pull(fake_sd, 500)
    qtbot.waitUntil(lambda: finished == [True], timeout=1000)


def test_position_follows_the_segment_being_heard(player, fake_sd, qtbot):
    heard = []
    player.position_changed.connect(heard.append)
    player.write(ramp(1000), 0)
    player.write(ramp(1000), 0)
    player.write(ramp(500), 1)
    player.write(ramp(500), 2)
    qtbot.waitUntil(lambda: heard == [0], timeout=1000)
    pull(fake_sd, 1999)
    qtbot.wait(80)
    assert heard == [0]
    pull(fake_sd, 2)
    qtbot.waitUntil(lambda: heard == [0, 1], timeout=1000)
    pull(fake_sd, 1000)  # passes segment 2's start within one poll
    qtbot.waitUntil(lambda: heard == [0, 1, 2], timeout=1000)


def test_pause_outputs_silence_without_consuming(player, fake_sd):
    a = ramp(800)
    player.write(a, 0)
    pull(fake_sd, 200)
    player.pause()
    assert not player.playing and player.paused
    np.testing.assert_array_equal(pull(fake_sd, 300), 0.0)
    assert player.underruns == 0
    player.resume()
    np.testing.assert_array_equal(pull(fake_sd, 300), a[200:500])


def test_stop_flushes_everything(player, fake_sd):
    player.write(ramp(1000), 0)
    player.stop()
    assert player.buffered_seconds() == 0
    assert not player.playing
    np.testing.assert_array_equal(pull(fake_sd, 480), 0.0)
    assert player.underruns == 0


def test_chunks_beyond_capacity_wait_outside_the_ring_and_arrive_intact(player, fake_sd, qtbot):
    big = ramp(int(2.5 * SR))  # the ring holds 1 s
    player.write(big, 0)
    assert player.buffered_seconds() == pytest.approx(2.5)
    played = []
    while len(played) < len(big):
        played.extend(pull(fake_sd, 4800))
        qtbot.wait(40)  # the poll timer refills the ring from the overflow
    np.testing.assert_array_equal(np.array(played[:len(big)], dtype=np.float32), big)


def test_buffer_level_and_underrun_signals(player, fake_sd, qtbot):
    levels, underruns = [], []
    player.buffer_level.connect(levels.append)
    player.underrun.connect(underruns.append)
    player.write(ramp(SR // 2), 0)
    qtbot.waitUntil(lambda: bool(levels) and levels[-1] == 0.5, timeout=1000)
    pull(fake_sd, SR // 2 + 100)
    qtbot.waitUntil(lambda: underruns == [1], timeout=1000)
    assert levels[-1] == 0.0


def test_a_device_that_cannot_open_is_reported_not_raised(qtbot, fake_sd):
    def broken(**kwargs):
        raise fake_sd.PortAudioError("no default output device")

    fake_sd.OutputStream = broken
    p = Player(sd_module=fake_sd)
    with qtbot.waitSignal(p.error, timeout=1000) as blocker:
        p.write(ramp(10), 0)
    assert "no default output device" in blocker.args[0]
    assert not p.playing
    p.close()
