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


def _mp3_frame_length(header: bytes) -> int:
    """The length of an MPEG-2 Layer III frame (the 24 kHz mp3 here) from its 4-byte header."""
    kbps = (0, 8, 16, 24, 32, 40, 48, 56, 64, 80, 96, 112, 128, 144, 160)[header[2] >> 4]
    rate = (22050, 24000, 16000)[(header[2] >> 2) & 3]
    return 72 * kbps * 1000 // rate + ((header[2] >> 1) & 1)


def test_a_streamed_mp3_opens_with_an_info_frame_that_decoders_skip():
    """The first frame, reserved by LAME for its tag and zeroed while streaming, is marked an Info frame without
    a frame count (the length is unknown when it is sent): it decodes to no audio, where before it was 576
    samples of silence."""
    encoder = StreamEncoder("mp3", RATE)
    samples = tone(2.0)
    first = encoder.encode(samples[:1920])
    data = first + b"".join(encoder.encode(samples[i:i + 1920]) for i in range(1920, len(samples), 1920))
    data += encoder.finish()
    assert first[13:21] == b"Info\0\0\0\0"  # MPEG-2 mono: 4 header bytes, 9 of side information
    without_it = data[_mp3_frame_length(data[:4]):]
    assert len(decode("mp3", data)[0]) == len(decode("mp3", without_it)[0])


@pytest.mark.parametrize("name", ["wav", "mp3", "flac", "opus", "pcm"])
def test_whole_writes_exact_headers(name):
    samples = tone(1.0)
    data = StreamEncoder(name, RATE).whole(samples)
    assert len(decode(name, data)[0]) == len(samples)
    if name == "wav":
        assert data[:4] == b"RIFF" and int.from_bytes(data[4:8], "little") == len(data) - 8
        at = data.index(b"data")
        assert int.from_bytes(data[at + 4:at + 8], "little") == len(data) - at - 8 == 2 * len(samples)
    if name == "mp3":  # an Info frame counting the frames that follow it
        frames = int.from_bytes(data[21:25], "big")
        assert data[13:17] == b"Info" and data[17:21] == b"\0\0\0\x0f"
        assert frames == (len(data) - _mp3_frame_length(data[:4])) // _mp3_frame_length(data[:4])
