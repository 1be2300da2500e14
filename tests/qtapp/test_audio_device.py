"""The real audio path: Player -> sounddevice -> PortAudio -> PulseAudio null sink, recorded back.

scripts/test.sh starts a PulseAudio daemon whose default sink is a null sink. This test plays two
known noise bursts through our Player with the real ``sounddevice`` while ``parec`` records the
sink's monitor, deliberately starving the buffer between them for a known time. It checks that
both bursts arrive intact and in order, that the silence between them lasts exactly as long as the
player says it starved, and that the player counted exactly one underrun.

Skipped only where no PulseAudio server answers and CI is not set; on CI it must run.
"""

from __future__ import annotations

import shutil
import subprocess
import threading

import numpy as np
import pytest

from qtapp.player import Player
from tests.qtapp.pulse import unavailable

SR = 24000
BURST_S = 0.8
STARVE_S = 0.6


@pytest.fixture
def monitor_source() -> str:
    """The monitor source of PulseAudio's default sink."""
    if shutil.which("pactl") is None or shutil.which("parec") is None:
        unavailable("pactl/parec not installed")
    probe = subprocess.run(["pactl", "get-default-sink"], capture_output=True, text=True, timeout=10)
    if probe.returncode != 0 or not probe.stdout.strip():
        unavailable(" ".join(probe.stderr.split()) or "pactl found no default sink")
    try:
        import sounddevice  # noqa: F401 - needs the PortAudio library
    except OSError as exc:
        unavailable(f"PortAudio missing: {exc}")
    return probe.stdout.strip() + ".monitor"


class MonitorRecorder:
    """``parec`` on a monitor source, read continuously so nothing is lost at the end."""

    def __init__(self, source: str):
        self._process = subprocess.Popen(
            ["parec", "-d", source, "--format=float32le", f"--rate={SR}", "--channels=1", "--raw",
             "--latency-msec=20"], stdout=subprocess.PIPE, bufsize=0)
        self._data = bytearray()
        self._reader = threading.Thread(target=self._pump, daemon=True)
        self._reader.start()

    def _pump(self) -> None:
        while block := self._process.stdout.read(4096):
            self._data.extend(block)

    @property
    def seconds(self) -> float:
        return len(self._data) / 4 / SR

    def stop(self) -> np.ndarray:
        self._process.terminate()
        self._process.wait(timeout=5)
        self._reader.join(timeout=5)
        usable = len(self._data) // 4 * 4
        return np.frombuffer(bytes(self._data[:usable]), dtype=np.float32)


def locate(recording: np.ndarray, burst: np.ndarray) -> tuple[int, float]:
    """(offset of ``burst`` in ``recording``, correlation coefficient there), by FFT cross-correlation."""
    n = 1 << (len(recording) + len(burst)).bit_length()
    xcorr = np.fft.irfft(np.fft.rfft(recording, n) * np.conj(np.fft.rfft(burst, n)), n)
    offset = int(np.argmax(xcorr[:len(recording) - len(burst) + 1]))
    heard = recording[offset:offset + len(burst)]
    return offset, float(np.corrcoef(heard, burst)[0, 1])


def noise_burst(seed: int) -> np.ndarray:
    """Noise band-limited to 100 Hz - 4 kHz, RMS 0.3. (The sink resamples to 44.1 kHz and back, which
    shifts the signal by a fraction of a sample: higher frequencies would lose correlation.)"""
    spectrum = np.fft.rfft(np.random.default_rng(seed).standard_normal(int(BURST_S * SR)))
    freqs = np.fft.rfftfreq(int(BURST_S * SR), 1 / SR)
    spectrum[(freqs < 100) | (freqs > 4000)] = 0
    burst = np.fft.irfft(spectrum, int(BURST_S * SR))
    return (0.3 * burst / np.sqrt(np.mean(burst**2))).astype(np.float32)


def test_played_audio_reaches_the_sink_and_starvation_is_counted(qtbot, monitor_source):
    first, second = noise_burst(1), noise_burst(2)
    recorder = MonitorRecorder(monitor_source)
    player = Player(sample_rate=SR, latency=0.1)
    try:
        errors, positions = [], []
        player.error.connect(errors.append)
        player.position_changed.connect(positions.append)
        qtbot.waitUntil(lambda: recorder.seconds > 0 or recorder._process.poll() is not None, timeout=5000)

        player.write(first, 0)
        qtbot.waitUntil(lambda: player.buffered_seconds() == 0, timeout=10000)
        qtbot.wait(int(STARVE_S * 1000))  # starve the playing stream on purpose
        player.write(second, 1)
        with qtbot.waitSignal(player.finished, timeout=10000):
            player.end_of_stream()
        qtbot.wait(500)  # the device's own latency
    finally:
        player.close()
        recording = recorder.stop()

    assert errors == []
    assert positions == [0, 1]
    assert player.underruns == 1
    starved = player.starved_seconds
    assert STARVE_S - 0.15 <= starved <= STARVE_S + 0.5  # the device pulls in blocks

    start_first, match_first = locate(recording, first)
    start_second, match_second = locate(recording, second)
    assert match_first > 0.85 and match_second > 0.85, (match_first, match_second)  # unrelated: ~0
    gap = (start_second - start_first - len(first)) / SR
    assert gap == pytest.approx(starved, abs=0.03)  # the silence heard is the starvation counted
    silence = recording[start_first + len(first) + SR // 100:start_second - SR // 100]
    assert np.sqrt(np.mean(silence**2)) < 0.01
    assert np.sqrt(np.mean(recording[start_first:start_first + len(first)] ** 2)) == pytest.approx(0.3, rel=0.1)
