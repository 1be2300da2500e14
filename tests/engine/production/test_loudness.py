"""Loudness measured and normalized by engine.production.loudness (FFmpeg's ebur128 and alimiter), checked by an
independent meter: pyloudnorm for integrated loudness, and a true peak read from the signal resampled eightfold
with soxr (the oversampling BS.1770 asks for, done by another library)."""

from __future__ import annotations

import math

import numpy as np
import pyloudnorm
import pytest
import soxr
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.errors import UnsupportedError
from engine.production.loudness import (
    PRESETS,
    VOICEOVER_DEFAULT,
    LoudnessMeter,
    LoudnessTarget,
    measure,
    normalize,
    parse_target,
)

RATE = 24000


def speech_like(seconds: float, level: float, seed: int = 0, rate: int = RATE) -> np.ndarray:
    """Bursts of voiced sound (a buzz with noise) and pauses, as speech has."""
    rng = np.random.default_rng(seed)
    t = np.arange(int(seconds * rate)) / rate
    envelope = (np.sin(2 * np.pi * 0.7 * t) > 0) * (0.5 + 0.5 * np.sin(2 * np.pi * 3 * t))
    voiced = np.sign(np.sin(2 * np.pi * 140 * t)) * 0.3 + rng.standard_normal(t.size) * 0.4
    return (level * envelope * voiced).astype(np.float32)


def independent_lufs(samples: np.ndarray, rate: int = RATE) -> float:
    return pyloudnorm.Meter(rate).integrated_loudness(np.asarray(samples, dtype=np.float64))


def independent_true_peak_dbtp(samples: np.ndarray, rate: int = RATE) -> float:
    up = soxr.resample(np.asarray(samples, dtype=np.float64), rate, rate * 8, quality="VHQ")
    return 20 * math.log10(float(np.max(np.abs(up))))


def test_the_meter_agrees_with_pyloudnorm():
    for level in (0.02, 0.1, 0.5):
        audio = speech_like(20, level)
        measured = measure(audio, RATE)
        assert abs(measured.integrated_lufs - independent_lufs(audio)) < 0.3
        assert abs(measured.true_peak_dbtp - independent_true_peak_dbtp(audio)) < 0.6


def test_the_meter_streams_in_pieces_with_the_same_result():
    audio = speech_like(10, 0.1)
    meter = LoudnessMeter(RATE)
    for at in range(0, audio.size, 1001):
        meter.feed(audio[at:at + 1001])
    pieces, whole = meter.result(), measure(audio, RATE)
    assert (pieces.integrated_lufs, pieces.true_peak_dbtp) == (whole.integrated_lufs, whole.true_peak_dbtp)
    assert math.isclose(pieces.rms_db, whole.rms_db, abs_tol=1e-9)  # float sums in another order


@pytest.mark.parametrize("target", [PRESETS["web"], PRESETS["broadcast"], VOICEOVER_DEFAULT,
                                    LoudnessTarget(-20.0, -3.0)])
@pytest.mark.parametrize("level", [0.01, 0.3])
def test_normalize_reaches_the_target_under_the_ceiling(target, level):
    audio = speech_like(30, level, seed=3)
    done = normalize(audio, RATE, target)
    assert done.samples.shape == audio.shape
    assert abs(independent_lufs(done.samples) - target.lufs) <= 0.5
    assert independent_true_peak_dbtp(done.samples) <= target.ceiling_dbtp
    assert done.reached
    assert abs(done.after.integrated_lufs - independent_lufs(done.samples)) < 0.3


def test_where_the_ceiling_prevents_the_target_the_ceiling_wins_and_says_so():
    audio = speech_like(20, 0.02, seed=5)
    audio[RATE * 3] = 0.95  # a click: reaching -9 LUFS would take it far past any limiter's reach
    done = normalize(audio, RATE, LoudnessTarget(-9.0, -1.0))
    assert independent_true_peak_dbtp(done.samples) <= -1.0
    assert independent_lufs(done.samples) < -9.5
    assert not done.reached
    assert "ceiling kept it from the target" in done.report()
    assert f"{done.after.integrated_lufs:.1f} LUFS" in done.report()


def test_at_48_khz_too():
    audio = speech_like(15, 0.05, rate=48000)
    done = normalize(audio, 48000, PRESETS["broadcast"])
    assert abs(independent_lufs(done.samples, 48000) + 23.0) <= 0.5
    assert independent_true_peak_dbtp(done.samples, 48000) <= -1.0


def test_silence_is_left_as_it_is():
    silence = np.zeros(RATE * 2, dtype=np.float32)
    done = normalize(silence, RATE, VOICEOVER_DEFAULT)
    assert np.array_equal(done.samples, silence)
    assert done.after.integrated_lufs == -math.inf
    assert done.before.true_peak_dbtp == -math.inf


def test_targets_by_name_and_number():
    assert parse_target("broadcast") == LoudnessTarget(-23.0, -1.0)
    assert parse_target("Podcast") == parse_target("web") == LoudnessTarget(-16.0, -1.0)
    assert parse_target("-18") == LoudnessTarget(-18.0, -1.0)
    assert parse_target("-14 LUFS") == LoudnessTarget(-14.0, -1.0)


@settings(max_examples=60, deadline=None)
@given(st.text(max_size=40))
def test_any_other_target_text_is_refused_with_a_clear_error(text):
    try:
        target = parse_target(text)
    except UnsupportedError as e:
        assert "loudness" in str(e)
    else:
        assert -40.0 <= target.lufs <= -5.0 and math.isfinite(target.lufs)


@pytest.mark.parametrize("text", ["nan", "inf", "-1e400", "0", "-100", "loud", ""])
def test_targets_out_of_range_are_refused(text):
    with pytest.raises(UnsupportedError):
        parse_target(text)


def test_white_noise_whose_true_peaks_lie_between_samples_stays_under_the_ceiling():
    noise = (np.random.default_rng(1).standard_normal(RATE * 20) * 0.3).astype(np.float32)
    done = normalize(noise, RATE, VOICEOVER_DEFAULT)
    assert independent_true_peak_dbtp(done.samples) <= -1.0
    assert abs(independent_lufs(done.samples) + 16.0) <= 0.5


def test_memory_normalize_holds_the_result_and_little_more():
    import tracemalloc

    audio = speech_like(60, 0.3)
    tracemalloc.start()
    try:
        done = normalize(audio, RATE, VOICEOVER_DEFAULT)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert done.limited  # the path that runs the limiter, the one that holds the most
    assert peak <= 2 * audio.nbytes


def test_memory_the_meter_holds_no_audio():
    import tracemalloc

    second = speech_like(1, 0.1)
    meter = LoudnessMeter(RATE)
    meter.feed(second)
    tracemalloc.start()
    try:
        for _ in range(600):  # ten minutes, a second at a time
            meter.feed(second)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak <= 2 * second.nbytes
    assert math.isfinite(meter.result().integrated_lufs)


def independent_rms_db(samples: np.ndarray) -> float:
    wide = np.asarray(samples, dtype=np.float64)
    return 10 * math.log10(float(np.mean(wide ** 2)))


def test_the_stream_limiter_is_aligned_with_its_input_and_as_long_in_any_pieces():
    from engine.production.loudness import StreamLimiter

    audio = speech_like(6, 0.05, seed=7)
    limiter = StreamLimiter(RATE, -3.0)  # far above the signal: what comes out is what went in
    out = np.concatenate([limiter.push(audio[at:at + 777]) for at in range(0, audio.size, 777)] + [limiter.close()])
    assert out.size == audio.size
    # aligned: the two agree best with no shift (the resampling around the limiter only softens the top octave)
    agreement = {lag: float(np.dot(np.roll(out, lag), audio)) for lag in range(-3, 4)}
    assert max(agreement, key=agreement.get) == 0
    assert agreement[0] > 0.95 * float(np.dot(audio, audio))

    loud = speech_like(6, 0.9, seed=7)
    limiter = StreamLimiter(RATE, -6.0)
    out = np.concatenate([limiter.push(loud[:50_000]), limiter.push(loud[50_000:]), limiter.close()])
    assert out.size == loud.size
    # the resampling back lets peaks rise a little: limited_gain sets the limit 1 dB under the ceiling for it
    assert independent_true_peak_dbtp(out) <= -6.0 + 1.0


@pytest.mark.parametrize("level", [0.01, 0.3, 0.9])
def test_the_audiobook_preset_reaches_acx_levels(level):
    target = parse_target("audiobook")
    assert target.lufs is None and target.rms_range == (-23.0, -18.0) and target.ceiling_dbtp == -3.0
    assert 0.5 <= target.room_tone_s[0] <= 1.0 and 1.0 <= target.room_tone_s[1] <= 5.0
    done = normalize(speech_like(20, level, seed=4), RATE, target)
    assert -23.0 <= independent_rms_db(done.samples) <= -18.0
    assert 20 * math.log10(float(np.max(np.abs(done.samples)))) <= -3.0
    assert independent_true_peak_dbtp(done.samples) <= -3.0
    assert done.reached and "RMS" in done.report() and "ceiling" not in done.report()
    assert abs(done.after.rms_db - independent_rms_db(done.samples)) < 0.05
