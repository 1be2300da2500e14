"""Reference loading (files and arrays, conversion, refusals) and audio writing."""

from __future__ import annotations

import numpy as np
import pytest
import soundfile as sf

from engine.core.audio_files import (
    CLIPPED_PEAK_TARGET,
    ICL_SILENCE_SECONDS,
    SAMPLE_RATE,
    load_reference,
    with_icl_silence,
    write_audio,
)
from engine.errors import UnsupportedError, VoiceError


def _tone(hz: float, seconds: float, sample_rate: int, amplitude: float = 0.5) -> np.ndarray:
    t = np.arange(int(seconds * sample_rate)) / sample_rate
    return (amplitude * np.sin(2 * np.pi * hz * t)).astype(np.float32)


def _dominant_hz(audio: np.ndarray, sample_rate: int) -> float:
    spectrum = np.abs(np.fft.rfft(audio))
    return float(np.argmax(spectrum) * sample_rate / audio.size)


def test_a_24k_mono_wav_loads_unchanged(tmp_path):
    tone = _tone(440, 1.5, SAMPLE_RATE)
    sf.write(tmp_path / "ref.wav", tone, SAMPLE_RATE, subtype="FLOAT")
    audio, source = load_reference(tmp_path / "ref.wav")
    assert audio.dtype == np.float32 and audio.ndim == 1
    np.testing.assert_array_equal(audio, tone)
    assert "ref.wav" in source and "24000 Hz" in source and "1.50 s" in source


def test_8k_stereo_is_downmixed_and_resampled(tmp_path):
    left = _tone(440, 2.0, 8000)
    sf.write(tmp_path / "ref.wav", np.stack([left, 0.5 * left], axis=1), 8000, subtype="PCM_16")
    audio, source = load_reference(str(tmp_path / "ref.wav"))
    assert audio.size == 2 * SAMPLE_RATE
    assert abs(_dominant_hz(audio, SAMPLE_RATE) - 440) < 1
    middle = audio[SAMPLE_RATE // 2 : -SAMPLE_RATE // 2]
    assert np.max(np.abs(middle)) == pytest.approx(0.75 * 0.5, rel=0.01)
    assert "8000 Hz" in source and "2 ch" in source


@pytest.mark.parametrize(("suffix", "subtype"), [(".flac", "PCM_16"), (".ogg", "VORBIS"), (".mp3", "MPEG_LAYER_III")])
def test_compressed_formats_are_read(tmp_path, suffix, subtype):
    path = tmp_path / f"ref{suffix}"
    try:
        sf.write(path, _tone(300, 1.5, 44100), 44100, subtype=subtype)
    except (sf.LibsndfileError, ValueError, TypeError) as e:
        pytest.skip(f"this libsndfile cannot write {subtype}: {e}")
    audio, _ = load_reference(path)
    assert abs(audio.size - 1.5 * SAMPLE_RATE) < 0.05 * SAMPLE_RATE  # mp3 adds encoder padding
    assert abs(_dominant_hz(audio, SAMPLE_RATE) - 300) < 2


def test_missing_directory_and_non_audio_files(tmp_path):
    with pytest.raises(VoiceError, match="not found"):
        load_reference(tmp_path / "absent.wav")
    with pytest.raises(VoiceError, match="not a file"):
        load_reference(tmp_path)
    (tmp_path / "notes.wav").write_text("these are not audio samples, just text\n" * 20)
    with pytest.raises(VoiceError, match=r"notes\.wav is not a readable audio file \(wav, flac"):
        load_reference(tmp_path / "notes.wav")
    (tmp_path / "empty.flac").write_bytes(b"")
    with pytest.raises(VoiceError, match=r"empty\.flac is not a readable audio file"):
        load_reference(tmp_path / "empty.flac")
    (tmp_path / "garbage.mp3").write_bytes(bytes(range(256)) * 16)  # libsndfile: "File does not exist or..."
    with pytest.raises(VoiceError, match=r"^garbage\.mp3 is not a readable audio file \(wav, flac, ogg and mp3"):
        load_reference(tmp_path / "garbage.mp3")


def test_silent_short_and_long_references_are_refused(tmp_path):
    with pytest.raises(VoiceError, match="silent"):
        load_reference((np.zeros(3 * SAMPLE_RATE, dtype=np.float32), SAMPLE_RATE))
    with pytest.raises(VoiceError, match="silent"):
        load_reference((np.full(3 * 16000, 1e-4, dtype=np.float32), 16000))
    sf.write(tmp_path / "short.wav", _tone(200, 0.6, 16000), 16000)
    with pytest.raises(VoiceError, match=r"0\.60 s; at least 1 s"):
        load_reference(tmp_path / "short.wav")
    with pytest.raises(VoiceError, match="limit is 60 s"):
        load_reference((_tone(200, 61, 8000), 8000))


def test_arrays_of_any_layout_and_sample_type():
    tone = _tone(500, 1.2, 16000)
    reference, source = load_reference((tone, 16000))
    assert reference.size == int(1.2 * SAMPLE_RATE) and "array (16000 Hz, 1 ch)" in source
    channels_first, _ = load_reference((np.stack([tone, tone]), 16000))
    np.testing.assert_allclose(channels_first, reference, atol=1e-6)
    pcm16, _ = load_reference(((tone * 32768).astype(np.int16), 16000))
    np.testing.assert_allclose(pcm16, reference, atol=1e-3)
    with pytest.raises(VoiceError, match="sample rate"):
        load_reference((tone, 0))
    with pytest.raises(VoiceError, match="sample rate"):
        load_reference((tone, 16000.5))
    with pytest.raises(VoiceError, match="NaN"):
        load_reference((np.full(SAMPLE_RATE * 2, np.nan, dtype=np.float32), SAMPLE_RATE))
    with pytest.raises(VoiceError, match="file path or an"):
        load_reference(tone)
    with pytest.raises(VoiceError, match="channel"):
        load_reference((np.zeros((100, 100), dtype=np.float32), SAMPLE_RATE))


def test_clipping_reference_is_scaled_down_and_quiet_one_kept():
    loud, _ = load_reference((_tone(300, 1.5, SAMPLE_RATE, amplitude=1.6), SAMPLE_RATE))
    assert np.max(np.abs(loud)) == pytest.approx(CLIPPED_PEAK_TARGET, rel=1e-6)
    quiet, _ = load_reference((_tone(300, 1.5, SAMPLE_RATE, amplitude=0.1), SAMPLE_RATE))
    assert np.max(np.abs(quiet)) == pytest.approx(0.1, rel=1e-3)


def test_trailing_silence_for_in_context_cloning():
    tone = _tone(300, 1.0, SAMPLE_RATE)
    padded = with_icl_silence(tone)
    assert padded.size == tone.size + int(ICL_SILENCE_SECONDS * SAMPLE_RATE)
    np.testing.assert_array_equal(padded[: tone.size], tone)
    assert not padded[tone.size :].any()


@pytest.mark.parametrize("suffix", [".wav", ".flac", ".WAV"])
def test_write_audio_round_trip(tmp_path, suffix):
    tone = _tone(440, 0.5, SAMPLE_RATE)
    write_audio(tmp_path / f"out{suffix}", tone, SAMPLE_RATE)
    back, rate = sf.read(tmp_path / f"out{suffix}", dtype="float32")
    assert rate == SAMPLE_RATE
    np.testing.assert_allclose(back, tone, atol=1 / 32768 + 1e-6)


def test_write_audio_refuses_other_formats(tmp_path):
    with pytest.raises(UnsupportedError, match=r"\.wav, \.flac"):
        write_audio(tmp_path / "out.mp3", np.zeros(100, dtype=np.float32), SAMPLE_RATE)
    assert not (tmp_path / "out.mp3").exists()
