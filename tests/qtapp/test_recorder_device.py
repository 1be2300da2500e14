"""The real capture path: MicRecorder -> sounddevice -> PortAudio -> PulseAudio, recording a null
sink's monitor while ``paplay`` plays a known tone into that sink.

scripts/test.sh starts a PulseAudio daemon (its default sink is the null sink ``orator_null``).
The test adds a null sink of its own, so audio other tests or processes play into the default sink
cannot leak into the recording, and sets ``PULSE_SOURCE`` so PortAudio's default input is that
sink's monitor. The recording must hold the tone at its frequency and level. Skipped only where no
PulseAudio server answers and CI is not set.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import time

import numpy as np
import pytest
import soundfile

from qtapp.recorder import RECORD_RATE, MicRecorder
from tests.qtapp.pulse import unavailable

TONE_HZ = 440.0
TONE_S = 1.0
AMPLITUDE = 0.4


@pytest.fixture
def private_sink(monkeypatch):
    """A null sink of this test whose monitor is PortAudio's default input; the sink's name."""
    if shutil.which("pactl") is None or shutil.which("paplay") is None:
        unavailable("pactl/paplay not installed")
    probe = subprocess.run(["pactl", "info"], capture_output=True, text=True, timeout=10)
    if probe.returncode != 0:
        unavailable(" ".join(probe.stderr.split()) or "pactl info failed")
    try:
        import sounddevice  # noqa: F401 - needs the PortAudio library
    except OSError as exc:
        unavailable(f"PortAudio missing: {exc}")
    sink = f"orator_record_test_{os.getpid()}"
    module = subprocess.run(["pactl", "load-module", "module-null-sink", f"sink_name={sink}"],
                            capture_output=True, text=True, timeout=10, check=True).stdout.strip()
    monkeypatch.setenv("PULSE_SOURCE", f"{sink}.monitor")  # read by libpulse when the input stream opens
    yield sink
    subprocess.run(["pactl", "unload-module", module], timeout=10, check=True)


def test_recorder_captures_a_tone_played_into_the_sink(tmp_path, private_sink):
    t = np.arange(int(TONE_S * RECORD_RATE)) / RECORD_RATE
    tone_path = tmp_path / "tone.wav"
    soundfile.write(tone_path, (AMPLITUDE * np.sin(2 * np.pi * TONE_HZ * t)).astype(np.float32), RECORD_RATE)
    recorder = MicRecorder(sample_rate=RECORD_RATE)
    recorder.start()
    try:
        time.sleep(0.3)
        subprocess.run(["paplay", "-d", private_sink, str(tone_path)], check=True, timeout=20)
        time.sleep(0.3)
    finally:
        recording = recorder.stop()

    assert len(recording) / RECORD_RATE >= TONE_S + 0.3
    frame = RECORD_RATE // 20
    loudness = np.sqrt(np.mean(recording[:len(recording) // frame * frame].reshape(-1, frame) ** 2, axis=1))
    loud = np.flatnonzero(loudness > AMPLITUDE / 4)  # 50 ms frames holding the tone
    assert len(loud) * 0.05 == pytest.approx(TONE_S, abs=0.15)
    heard = recording[(loud[0] + 1) * frame:loud[-1] * frame]  # the tone without its edges
    spectrum = np.abs(np.fft.rfft(heard * np.hanning(len(heard))))
    frequency = np.fft.rfftfreq(len(heard), 1 / RECORD_RATE)[np.argmax(spectrum)]
    assert frequency == pytest.approx(TONE_HZ, rel=0.01)
    assert np.sqrt(2 * np.mean(heard**2)) == pytest.approx(AMPLITUDE, rel=0.15)
