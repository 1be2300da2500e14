"""Voice files: round trip of every kind, atomic writes, clear errors for bad files, and the header-only read."""

from __future__ import annotations

import json
import os

import numpy as np
import pytest
from safetensors.numpy import save_file

from engine.core.voice_file import FORMAT_KEY, FORMAT_VERSION, load_voice, read_voice_metadata, save_voice
from engine.errors import VoiceError
from engine.voices import Voice

RNG = np.random.default_rng(0)
EMBEDDING = RNG.standard_normal(64).astype(np.float32)
CODES = RNG.integers(0, 2048, size=(37, 16)).astype(np.int64)
AUDIO = (0.1 * RNG.standard_normal(24000)).astype(np.float32)

VOICES = {
    "preset": Voice.preset("vivian", language="English", instruct="cheerful"),
    "design": Voice.design("a calm, low male voice with a slight rasp", language="auto"),
    "clone-xvector": Voice("clone", language="german", speaker_embedding=EMBEDDING, name="Jörg",
                           meta={"source": "jörg.wav (48000 Hz, 2 ch), 6.20 s", "model_size": "0b6"}),
    "clone-icl": Voice("clone", language="chinese", ref_text="你好，这是一段参考录音。", speaker_embedding=EMBEDDING,
                       ref_codes=CODES, name="li", meta={"source": "array (24000 Hz, 1 ch), 3.00 s"}),
    "clone-unencoded": Voice("clone", ref_text="Hello there.", ref_audio=AUDIO, name="raw"),
}
FIELDS = ("kind", "language", "speaker", "instruct", "ref_text", "name", "in_context", "is_encoded")


def _assert_same_voice(loaded: Voice, original: Voice):
    for field in FIELDS:
        assert getattr(loaded, field) == getattr(original, field), field
    for field, dtype in (("speaker_embedding", np.float32), ("ref_codes", np.int64), ("ref_audio", np.float32)):
        value = getattr(original, field)
        if value is None:
            assert getattr(loaded, field) is None, field
        else:
            assert getattr(loaded, field).dtype == dtype
            np.testing.assert_array_equal(getattr(loaded, field), value)
    assert {k: v for k, v in loaded.meta.items() if k != "created"} == original.meta
    assert loaded.meta["created"]


@pytest.mark.parametrize("key", list(VOICES))
def test_round_trip(tmp_path, key):
    path = tmp_path / f"{key}.voice"
    save_voice(VOICES[key], path)
    _assert_same_voice(load_voice(path), VOICES[key])


def test_voice_methods_delegate_and_keep_creation_time(tmp_path):
    voice = VOICES["clone-icl"]
    save_voice(voice, tmp_path / "a.voice")
    first = load_voice(tmp_path / "a.voice")
    _assert_same_voice(first, voice)
    save_voice(first, tmp_path / "b.voice")
    assert load_voice(tmp_path / "b.voice").meta["created"] == first.meta["created"]


def test_writes_are_atomic_and_overwrite(tmp_path):
    path = tmp_path / "v.voice"
    save_voice(VOICES["preset"], path)
    save_voice(VOICES["clone-xvector"], path)
    assert load_voice(path).kind == "clone"
    assert [p.name for p in tmp_path.iterdir()] == ["v.voice"]


def test_a_failed_write_leaves_the_old_file_and_no_temp_file(tmp_path):
    path = tmp_path / "v.voice"
    save_voice(VOICES["preset"], path)
    bad = Voice("clone", speaker_embedding=EMBEDDING, ref_codes=CODES[:, :8], ref_text="x")
    with pytest.raises(VoiceError, match=r"ref_codes must be \[T, 16\]"):
        save_voice(bad, path)
    assert load_voice(path).kind == "preset"
    assert [p.name for p in tmp_path.iterdir()] == ["v.voice"]


@pytest.fixture
def saved_clone(tmp_path):
    path = tmp_path / "clone.voice"
    save_voice(VOICES["clone-icl"], path)
    return path


@pytest.mark.parametrize("read", [load_voice, read_voice_metadata])
def test_missing_truncated_and_garbage_files(tmp_path, saved_clone, read):
    with pytest.raises(VoiceError, match="not found") as missing:
        read(tmp_path / "absent.voice")
    assert str(tmp_path) not in str(missing.value)
    data = saved_clone.read_bytes()
    truncated = tmp_path / "truncated.voice"
    truncated.write_bytes(data[: len(data) // 2])
    with pytest.raises(VoiceError, match="truncated or corrupted"):
        read(truncated)
    garbage = tmp_path / "garbage.voice"
    garbage.write_bytes(b"RIFF\x00\x00\x00\x00WAVEfmt " + bytes(200))
    with pytest.raises(VoiceError, match="not a readable voice file"):
        read(garbage)
    for cut in (0, 5, 8, 40):
        truncated.write_bytes(data[:cut])
        with pytest.raises(VoiceError, match="not a readable voice file"):
            read(truncated)


def _write_raw(path, tensors: dict, metadata: dict):
    save_file(tensors, str(path), metadata=metadata)
    return path


def _metadata(**changes):
    base = {FORMAT_KEY: FORMAT_VERSION, "kind": "clone", "language": "auto", "embedding_dim": "64",
            "created": "2026-01-01T00:00:00+00:00", "meta": "{}"}
    base.update(changes)
    return {k: v for k, v in base.items() if v is not None}


@pytest.mark.parametrize("read", [load_voice, read_voice_metadata])
def test_foreign_and_other_version_files(tmp_path, read):
    other = _write_raw(tmp_path / "other.safetensors", {"weight": EMBEDDING}, {"format": "pt"})
    with pytest.raises(VoiceError, match="not an Orator voice file"):
        read(other)
    newer = _write_raw(tmp_path / "v2.voice", {"speaker_embedding": EMBEDDING}, _metadata(**{FORMAT_KEY: "2"}))
    with pytest.raises(VoiceError, match="format version 2; this Orator reads version 1"):
        read(newer)


@pytest.mark.parametrize(
    ("tensors", "changes", "message"),
    [
        ({"speaker_embedding": EMBEDDING}, {"kind": None}, "no 'kind'"),
        ({"speaker_embedding": EMBEDDING}, {"language": None}, "no 'language'"),
        ({"speaker_embedding": EMBEDDING}, {"kind": "robot"}, "unknown voice kind"),
        ({}, {"kind": "preset"}, "needs 'speaker'"),
        ({}, {"kind": "design"}, "needs 'instruct'"),
        ({}, {}, "needs speaker_embedding or ref_audio"),
        ({"speaker_embedding": EMBEDDING}, {"ref_text": "hi"}, "needs ref_codes or ref_audio"),
        ({"speaker_embedding": EMBEDDING}, {"embedding_dim": "1024"}, "does not match"),
        ({"speaker_embedding": EMBEDDING, "ref_codes": CODES[:, :8]}, {"ref_text": "hi"}, r"\[T, 16\]"),
        ({"speaker_embedding": CODES[0]}, {"embedding_dim": "16"}, "dtype int64"),
        ({"speaker_embedding": EMBEDDING, "logits": EMBEDDING}, {}, "unknown tensors"),
        ({"speaker_embedding": EMBEDDING}, {"meta": "[1, 2"}, "unreadable meta"),
    ],
)
@pytest.mark.parametrize("read", [load_voice, read_voice_metadata])
def test_incomplete_or_inconsistent_files(tmp_path, tensors, changes, message, read):
    path = _write_raw(tmp_path / "bad.voice", tensors, _metadata(**changes))
    with pytest.raises(VoiceError, match=message):
        read(path)


def test_float16_reference_audio_is_accepted(tmp_path):
    path = _write_raw(tmp_path / "half.voice", {"ref_audio": AUDIO.astype(np.float16)},
                      _metadata(meta=json.dumps({"source": "x"})))
    voice = load_voice(path)
    assert voice.ref_audio.dtype == np.float32 and not voice.is_encoded
    np.testing.assert_allclose(voice.ref_audio, AUDIO, atol=1e-3)


@pytest.mark.parametrize("key", list(VOICES))
def test_the_header_says_what_the_file_holds(tmp_path, key):
    path = tmp_path / f"{key}.voice"
    save_voice(VOICES[key], path)
    info, voice = read_voice_metadata(path), load_voice(path)
    for name in ("kind", "language", "name", "speaker", "instruct", "ref_text", "in_context", "is_encoded"):
        assert getattr(info, name) == getattr(voice, name), name
    assert info.meta == voice.meta and info.created == voice.meta["created"]
    assert info.tensors == {n for n in ("speaker_embedding", "ref_codes", "ref_audio") if getattr(voice, n) is not None}


def test_reading_the_header_reads_no_tensor_data(tmp_path, monkeypatch):
    """A minute of reference audio is 5.8 MB; its header is a few hundred bytes, and that is all that is read."""
    path = tmp_path / "long.voice"
    save_voice(Voice("clone", ref_audio=np.zeros(60 * 24000, np.float32) + 0.1, ref_text="words"), path)
    read_sizes = []
    real_open = open

    class Spy:
        def __init__(self, f):
            self.f = f

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            self.f.close()

        def read(self, n=-1):
            read_sizes.append(n)
            return self.f.read(n)

        def fileno(self):
            return self.f.fileno()

    monkeypatch.setattr("builtins.open", lambda *a, **k: Spy(real_open(*a, **k)))
    info = read_voice_metadata(path)
    assert info.ref_text == "words" and not info.is_encoded
    assert 0 < sum(read_sizes) < 4096 and -1 not in read_sizes


def test_a_write_is_synced_before_and_after_its_rename(tmp_path, monkeypatch):
    """The temporary file's data reaches the disk before it replaces the old file, and the folder's new entry
    after: a power cut leaves the old voice or the new one, never an empty file under the voice's name."""
    import engine.atomic_files as atomic

    events = []
    real_fsync, real_replace = os.fsync, os.replace
    monkeypatch.setattr(atomic.os, "fsync", lambda fd: events.append(("fsync", os.path.isdir(f"/proc/self/fd/{fd}")))
                        or real_fsync(fd))
    monkeypatch.setattr(atomic.os, "replace", lambda a, b: events.append(("replace", None)) or real_replace(a, b))
    save_voice(VOICES["clone-icl"], tmp_path / "v.voice")
    assert events == [("fsync", False), ("replace", None), ("fsync", True)]
    assert [p.name for p in tmp_path.iterdir()] == ["v.voice"]
