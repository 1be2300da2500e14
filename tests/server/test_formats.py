"""Audio encoding: every supported format decodes back to the same length and rate, whole or streamed (aac,
which libsndfile cannot read, through PyAV)."""

from __future__ import annotations

import numpy as np
import pytest

from server.errors import APIError
from server.formats import LIVE_FORMATS, StreamEncoder, check_format, encode_whole, supported_formats
from tests.server import helpers

RATE = 24000
MP3_PADDING = 2 * 1152  # encoder delay and last-frame padding of a constant bit rate mp3
AAC_PADDING = 2 * 1024  # the same for ADTS, which has no field for either


def tone(seconds: float = 1.0) -> np.ndarray:
    t = np.arange(int(RATE * seconds)) / RATE
    return (0.3 * np.sin(2 * np.pi * 220 * t)).astype(np.float32)


def decode(name: str, data: bytes) -> tuple[np.ndarray, int]:
    return helpers.decode(name, data)


def test_installed_libraries_encode_every_format():
    assert set(supported_formats()) == {"mp3", "opus", "aac", "flac", "wav", "pcm"}


def test_without_pyav_only_pcm_is_offered_and_the_rest_refused_clearly(monkeypatch):
    import sys

    from server import formats

    monkeypatch.setitem(sys.modules, "av", None)  # import av now raises ImportError
    formats.supported_formats.cache_clear()
    try:
        assert formats.supported_formats() == ("pcm",)
        with pytest.raises(APIError, match="PyAV is not installed") as caught:
            check_format("mp3")
        assert caught.value.status == 400 and caught.value.code == "unsupported_format"
    finally:
        formats.supported_formats.cache_clear()


@pytest.mark.parametrize("name", ["ogg", "m4a", "m4b"])
def test_unknown_formats_are_refused(name):
    with pytest.raises(APIError) as caught:
        check_format(name)
    assert caught.value.status == 400 and caught.value.param == "response_format"


@pytest.mark.parametrize("name", ["wav", "pcm", "flac", "mp3", "opus", "aac"])
def test_whole_file_decodes_to_the_same_audio_length(name):
    samples = tone()
    decoded, rate = decode(name, encode_whole(name, samples, RATE))
    assert rate == RATE
    assert len(samples) <= len(decoded) <= len(samples) + (AAC_PADDING if name == "aac" else 0)
    if name in ("wav", "pcm", "flac"):  # lossless at 16 bits
        np.testing.assert_allclose(decoded, samples, atol=1 / 16000)


@pytest.mark.parametrize("name", ["wav", "pcm", "flac", "mp3", "opus", "aac"])
def test_streamed_encoding_decodes_and_live_formats_send_before_the_end(name):
    samples = tone(2.0)
    encoder = StreamEncoder(name, RATE)
    parts = [encoder.encode(samples[i:i + 1920]) for i in range(0, len(samples), 1920)]
    data = b"".join(parts) + encoder.finish()
    decoded, rate = decode(name, data)
    assert rate == RATE
    extra = {"mp3": MP3_PADDING, "aac": AAC_PADDING}.get(name, 0)
    assert len(samples) <= len(decoded) <= len(samples) + extra
    sent_early = sum(len(p) for p in parts[: len(parts) // 2])
    if name != "flac":
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


def test_a_streamed_mp3_starts_with_audio_and_no_tag_frame():
    """A stream cannot have its Info frame filled in at the end, so it has none: its first frame is audio (a
    zeroed tag frame would decode to 576 samples of silence), and there is no ID3 tag before it."""
    encoder = StreamEncoder("mp3", RATE)
    samples = tone(2.0)
    data = b"".join(encoder.encode(samples[i:i + 1920]) for i in range(0, len(samples), 1920)) + encoder.finish()
    assert data[0] == 0xFF and data[1] & 0xE6 == 0xE2  # a frame sync and Layer III at byte 0
    assert b"Info" not in data[:_mp3_frame_length(data[:4])] and b"Xing" not in data[:_mp3_frame_length(data[:4])]
    assert len(samples) <= len(decode("mp3", data)[0]) <= len(samples) + MP3_PADDING


@pytest.mark.parametrize("name", ["wav", "mp3", "flac", "opus", "pcm", "aac"])
def test_whole_writes_exact_headers(name):
    samples = tone(1.0)
    data = StreamEncoder(name, RATE).whole(samples)
    assert len(samples) <= len(decode(name, data)[0]) <= len(samples) + (AAC_PADDING if name == "aac" else 0)
    if name == "wav":
        assert data[:4] == b"RIFF" and int.from_bytes(data[4:8], "little") == len(data) - 8
        at = data.index(b"data")
        assert int.from_bytes(data[at + 4:at + 8], "little") == len(data) - at - 8 == 2 * len(samples)
    if name == "mp3":  # an Info frame counting the frames that follow it
        frames = int.from_bytes(data[21:25], "big")
        assert data[13:17] == b"Info" and data[17:21] == b"\0\0\0\x0f"
        assert frames == (len(data) - _mp3_frame_length(data[:4])) // _mp3_frame_length(data[:4])
