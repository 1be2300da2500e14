"""Hostile reference audio: decompression bombs, lying headers, absurd rates, and what a refused read leaves.

Memory is bounded with tracemalloc (numpy's and libsndfile-through-numpy allocations are traced): deterministic,
whatever the machine's speed."""

from __future__ import annotations

import gc
import struct
import tracemalloc
from contextlib import contextmanager

import numpy as np
import pytest
import soundfile as sf
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engine.core.audio_files import MAX_REFERENCE_SECONDS, MAX_SOURCE_SECONDS, SAMPLE_RATE, load_reference, read_audio
from engine.errors import VoiceError

MiB = 1 << 20
BOUND = 24 * MiB  # a 60 s reference at 24 kHz is 5.5 MiB; twice that while joined, one block, and room


@contextmanager
def traced(collect: bool = True):
    """Yield a function giving (bytes held now, peak) above what was held at the start, with full collections
    off: what a refused read leaves must go by reference counting alone, as in a server that rarely collects."""
    if collect:
        gc.collect()
    gc.disable()
    tracemalloc.start()
    start = tracemalloc.get_traced_memory()[0]
    try:
        yield lambda: tuple(n - start for n in tracemalloc.get_traced_memory())
    finally:
        tracemalloc.stop()
        gc.enable()


def _constant_flac(path, seconds: float, rate: int, channels: int, value: float = 0.5) -> None:
    """A FLAC of constant subframes: a few bytes a block on disk, ``seconds * rate * channels`` samples decoded."""
    block = np.full((1 << 16, channels), value, dtype=np.float32)
    frames = int(seconds * rate)
    with sf.SoundFile(path, "w", rate, channels, subtype="PCM_16", format="FLAC") as f:
        for start in range(0, frames, len(block)):
            f.write(block[: min(len(block), frames - start)])


def _unknown_length(path) -> None:
    """Set a FLAC's STREAMINFO total-samples field to 0, "unknown": the header no longer says how long it is."""
    data = bytearray(path.read_bytes())
    assert data[:4] == b"fLaC"
    data[21] &= 0xF0
    data[22:26] = bytes(4)
    path.write_bytes(bytes(data))


def _wav(channels: int, rate: int, bits: int, fmt: int, data_size: int, payload: bytes) -> bytes:
    block_align = channels * bits // 8
    fmt_chunk = struct.pack("<HHIIHH", fmt, channels, rate, (rate * block_align) & 0xFFFFFFFF, block_align & 0xFFFF,
                            bits)
    body = b"WAVE" + b"fmt " + struct.pack("<I", 16) + fmt_chunk + b"data" + struct.pack("<I", data_size) + payload
    return b"RIFF" + struct.pack("<I", len(body) & 0xFFFFFFFF) + body


def test_an_eight_channel_flac_bomb_is_refused_from_its_header(tmp_path):
    bomb = tmp_path / "bomb.flac"
    _constant_flac(bomb, 120, 48000, 8)  # 184 MB of float32 once decoded
    assert bomb.stat().st_size < 100_000
    with traced() as memory:
        with pytest.raises(VoiceError, match=r"bomb\.flac \(48000 Hz, 8 ch\) lasts 1\d\d\.\d s; the limit is 60 s"):
            load_reference(bomb)
        assert memory()[1] < MiB  # nothing decoded


def test_a_bomb_whose_header_hides_its_length_is_stopped_at_the_limit_and_freed(tmp_path):
    bomb = tmp_path / "open.flac"
    _constant_flac(bomb, 120, 48000, 8)
    _unknown_length(bomb)
    with traced() as memory:
        with pytest.raises(VoiceError, match=r"lasts more than 60 s; the limit is 60 s") as refused:
            load_reference(bomb)
        held, peak = memory()
        assert peak < BOUND
        # the error is still held here (a server keeps it while it answers): it must hold no decoded audio
        assert refused.value is not None and held < MiB


def test_a_long_many_channel_reference_within_the_limits_is_read_block_by_block(tmp_path):
    path = tmp_path / "long.flac"
    _constant_flac(path, 59, 96000, 8, value=0.25)  # 181 MB of float32 samples if read whole
    with traced() as memory:
        audio, source = load_reference(path)
        peak = memory()[1]
    assert audio.dtype == np.float32 and abs(audio.size - 59 * SAMPLE_RATE) <= 1
    assert np.allclose(audio[SAMPLE_RATE:-SAMPLE_RATE], 0.25, atol=1e-3)
    assert "96000 Hz, 8 ch" in source and "59.00 s" in source
    assert peak < BOUND


def test_a_1_hz_wav_of_104_bytes_is_refused_for_its_rate(tmp_path):
    path = tmp_path / "slow.wav"
    path.write_bytes(_wav(1, 1, 16, 1, 60, (np.arange(30, dtype=np.int16) * 1000).tobytes()))
    assert path.stat().st_size == 104
    with pytest.raises(VoiceError, match=r"sample rate of 1 Hz; a recording between 8000 and 384000 Hz"):
        load_reference(path)
    with pytest.raises(VoiceError, match="sample rate of 4000 Hz"):
        load_reference((np.ones(8000, dtype=np.float32), 4000))


def test_an_array_too_long_or_too_wide_is_refused_before_conversion():
    long = np.ones((61 * 48000, 2), dtype=np.int16)
    with traced() as memory:
        with pytest.raises(VoiceError, match="lasts 61.0 s"):
            load_reference((long, 48000))
        assert memory()[1] < MiB  # refused from its shape: no float copy was made
    with pytest.raises(VoiceError, match="has no channel axis"):
        load_reference((np.ones((9, 9), dtype=np.float32), 16000))


def test_the_studio_import_reads_a_long_recording_under_its_own_bound(tmp_path):
    path = tmp_path / "talk.flac"
    _constant_flac(path, 90, 16000, 2)
    audio, _ = read_audio(path)  # longer than a reference: the studio trims it
    assert abs(audio.size - 90 * SAMPLE_RATE) <= 1
    with pytest.raises(VoiceError, match=f"the limit is {MAX_REFERENCE_SECONDS:g} s"):
        load_reference(path)
    longer = tmp_path / "lecture.flac"
    _constant_flac(longer, MAX_SOURCE_SECONDS + 1, 8000, 1)
    with pytest.raises(VoiceError, match=f"the limit is {MAX_SOURCE_SECONDS:g} s"):
        read_audio(longer)


def _check_bounded(path) -> None:
    with traced(collect=False) as memory:
        try:
            audio, _ = load_reference(path)
        except VoiceError as e:
            assert str(e) and "Traceback" not in str(e)
        else:
            assert audio.dtype == np.float32 and audio.ndim == 1
            assert audio.size <= MAX_REFERENCE_SECONDS * SAMPLE_RATE + 1 and np.all(np.isfinite(audio))
        held, peak = memory()
    assert peak < BOUND


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(channels=st.integers(0, 0xFFFF), rate=st.one_of(st.integers(0, 0xFFFFFFFF), st.sampled_from([8000, 24000])),
       bits=st.sampled_from([0, 1, 8, 16, 24, 32, 64, 0xFFFF]), fmt=st.sampled_from([0, 1, 3, 0xFFFE, 0x55]),
       data_size=st.one_of(st.integers(0, 0xFFFFFFFF), st.just(0xFFFFFFFF)),
       payload=st.binary(max_size=4096))
def test_hostile_wav_headers(tmp_path, channels, rate, bits, fmt, data_size, payload):
    path = tmp_path / "hostile.wav"
    path.write_bytes(_wav(channels, rate, bits, fmt, data_size, payload))
    _check_bounded(path)


@pytest.fixture(scope="module")
def base_flac(tmp_path_factory):
    path = tmp_path_factory.mktemp("flac") / "base.flac"
    t = np.arange(2 * 16000) / 16000
    sf.write(path, (0.5 * np.sin(2 * np.pi * 220 * t)).astype(np.float32), 16000, subtype="PCM_16")
    return path.read_bytes()


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(rate=st.integers(0, (1 << 20) - 1), channels=st.integers(0, 7), bits=st.integers(0, 31),
       total=st.one_of(st.integers(0, (1 << 36) - 1), st.just(0)))
def test_hostile_flac_stream_info(tmp_path, base_flac, rate, channels, bits, total):
    # STREAMINFO bytes 18..25: 20 bits of rate, 3 of channels - 1, 5 of bits - 1, 36 of total samples
    packed = (rate << 44) | (channels << 41) | (bits << 36) | total
    data = bytearray(base_flac)
    data[18:26] = packed.to_bytes(8, "big")
    path = tmp_path / "hostile.flac"
    path.write_bytes(bytes(data))
    _check_bounded(path)
