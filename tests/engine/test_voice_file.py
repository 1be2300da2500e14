"""Voice files: round trip of every kind, atomic writes, and clear errors for bad files."""

from __future__ import annotations

import json

import numpy as np
import pytest
from safetensors.numpy import save_file

from engine.errors import VoiceError
from engine.voice_file import FORMAT_KEY, FORMAT_VERSION, load_voice, save_voice
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
    voice.save(tmp_path / "a.voice")
    first = Voice.load(tmp_path / "a.voice")
    _assert_same_voice(first, voice)
    first.save(tmp_path / "b.voice")
    assert Voice.load(tmp_path / "b.voice").meta["created"] == first.meta["created"]


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


def test_missing_truncated_and_garbage_files(tmp_path, saved_clone):
    with pytest.raises(VoiceError, match="not found"):
        load_voice(tmp_path / "absent.voice")
    data = saved_clone.read_bytes()
    truncated = tmp_path / "truncated.voice"
    truncated.write_bytes(data[: len(data) // 2])
    with pytest.raises(VoiceError, match="truncated or corrupted"):
        load_voice(truncated)
    garbage = tmp_path / "garbage.voice"
    garbage.write_bytes(b"RIFF\x00\x00\x00\x00WAVEfmt " + bytes(200))
    with pytest.raises(VoiceError, match="not a readable voice file"):
        load_voice(garbage)


def _write_raw(path, tensors: dict, metadata: dict):
    save_file(tensors, str(path), metadata=metadata)
    return path


def _metadata(**changes):
    base = {FORMAT_KEY: FORMAT_VERSION, "kind": "clone", "language": "auto", "embedding_dim": "64",
            "created": "2026-01-01T00:00:00+00:00", "meta": "{}"}
    base.update(changes)
    return {k: v for k, v in base.items() if v is not None}


def test_foreign_and_other_version_files(tmp_path):
    other = _write_raw(tmp_path / "other.safetensors", {"weight": EMBEDDING}, {"format": "pt"})
    with pytest.raises(VoiceError, match="not an Orator voice file"):
        load_voice(other)
    newer = _write_raw(tmp_path / "v2.voice", {"speaker_embedding": EMBEDDING}, _metadata(**{FORMAT_KEY: "2"}))
    with pytest.raises(VoiceError, match="format version 2; this Orator reads version 1"):
        load_voice(newer)


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
def test_incomplete_or_inconsistent_files(tmp_path, tensors, changes, message):
    path = _write_raw(tmp_path / "bad.voice", tensors, _metadata(**changes))
    with pytest.raises(VoiceError, match=message):
        load_voice(path)


def test_float16_reference_audio_is_accepted(tmp_path):
    path = _write_raw(tmp_path / "half.voice", {"ref_audio": AUDIO.astype(np.float16)},
                      _metadata(meta=json.dumps({"source": "x"})))
    voice = load_voice(path)
    assert voice.ref_audio.dtype == np.float32 and not voice.is_encoded
    np.testing.assert_allclose(voice.ref_audio, AUDIO, atol=1e-3)
