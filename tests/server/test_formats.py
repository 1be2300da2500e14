"""Audio encoding: every supported format decodes back to the same length and rate, whole or streamed."""

from __future__ import annotations

import io

import numpy as np
import pytest
import soundfile as sf

from server.errors import APIError
from server.formats import LIVE_FORMATS, StreamEncoder, check_format, encode_whole, supported_formats

RATE = 24000
MP3_PADDING = 2 * 1152  # encoder delay and last-frame padding of a constant bit rate mp3


def tone(seconds: float = 1.0) -> np.ndarray:
    t = np.arange(int(RATE * seconds)) / RATE
    return (0.3 * np.sin(2 * np.pi * 220 * t)).astype(np.float32)


def decode(name: str, data: bytes) -> tuple[np.ndarray, int]:
    if name == "pcm":
        return np.frombuffer(data, dtype="<i2").astype(np.float32) / 32767, RATE
    return sf.read(io.BytesIO(data), dtype="float32")


def test_installed_libraries_encode_everything_but_aac():
    assert set(supported_formats()) == {"mp3", "opus", "flac", "wav", "pcm"}


@pytest.mark.parametrize("name", ["aac", "ogg", "m4a"])
def test_unencodable_or_unknown_formats_are_refused(name):
    with pytest.raises(APIError) as caught:
        check_format(name)
    assert caught.value.status == 400 and caught.value.param == "response_format"


@pytest.mark.parametrize("name", ["wav", "pcm", "flac", "mp3", "opus"])
def test_whole_file_decodes_to_the_same_audio_length(name):
    samples = tone()
    decoded, rate = decode(name, encode_whole(name, samples, RATE))
    assert rate == RATE
    assert len(decoded) == len(samples)
    if name in ("wav", "pcm", "flac"):  # lossless at 16 bits
        np.testing.assert_allclose(decoded, samples, atol=1 / 16000)


@pytest.mark.parametrize("name", ["wav", "pcm", "flac", "mp3", "opus"])
def test_streamed_encoding_decodes_and_live_formats_send_before_the_end(name):
    samples = tone(2.0)
    encoder = StreamEncoder(name, RATE)
    parts = [encoder.encode(samples[i:i + 1920]) for i in range(0, len(samples), 1920)]
    data = b"".join(parts) + encoder.finish()
    decoded, rate = decode(name, data)
    assert rate == RATE
    extra = MP3_PADDING if name == "mp3" else 0
    assert len(samples) <= len(decoded) <= len(samples) + extra
    sent_early = sum(len(p) for p in parts[: len(parts) // 2])
    if name in ("wav", "pcm", "mp3"):
        assert sent_early > 0
    assert (name in LIVE_FORMATS) == (name != "flac")


def test_streamed_wav_declares_unknown_sizes():
    data = StreamEncoder("wav", RATE).encode(tone(0.1))
    assert data[:4] == b"RIFF" and data[4:8] == b"\xff\xff\xff\xff" and data[40:44] == b"\xff\xff\xff\xff"
