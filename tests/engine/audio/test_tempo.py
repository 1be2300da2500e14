"""Tempo change without pitch change: output duration is input / speed, the pitch stays put."""

from __future__ import annotations

import numpy as np
import pytest

from engine.audio.tempo import TimeStretcher, stretch

RATE = 24000


def voiced(seconds: float = 2.0, f0: float = 180.0) -> np.ndarray:
    t = np.arange(int(RATE * seconds)) / RATE
    return (0.3 * np.sin(2 * np.pi * f0 * t) + 0.1 * np.sin(2 * np.pi * 3 * f0 * t)).astype(np.float32)


def dominant_frequency(samples: np.ndarray) -> float:
    middle = samples[len(samples) // 4: 3 * len(samples) // 4]
    spectrum = np.abs(np.fft.rfft(middle * np.hanning(len(middle))))
    return float(np.fft.rfftfreq(len(middle), 1 / RATE)[np.argmax(spectrum)])


@pytest.mark.parametrize("speed", [0.25, 0.5, 0.8, 1.25, 2.0, 4.0])
def test_duration_scales_and_pitch_is_kept(speed):
    samples = voiced()
    out = stretch(samples, speed)
    assert len(out) == round(len(samples) / speed)
    assert dominant_frequency(out) == pytest.approx(180.0, rel=0.02)
    rms_in, rms_out = np.sqrt(np.mean(samples ** 2)), np.sqrt(np.mean(out[len(out) // 4: -len(out) // 4] ** 2))
    assert rms_out == pytest.approx(rms_in, rel=0.1)  # no cancellation from misaligned overlaps


def test_streaming_in_chunks_equals_the_whole():
    samples = voiced(1.5)
    stretcher = TimeStretcher(1.5)
    pieces = [stretcher.process(samples[i:i + 1920]) for i in range(0, len(samples), 1920)]
    assert sum(len(p) for p in pieces) > 0  # output flows before the end
    np.testing.assert_array_equal(np.concatenate(pieces + [stretcher.flush()]), stretch(samples, 1.5))


@pytest.mark.parametrize("speed", [0.2, 4.5, 0.0])
def test_out_of_range_speed_is_refused(speed):
    with pytest.raises(ValueError):
        TimeStretcher(speed)
