"""Voice files no model could use: oversized reference codes, codes outside the codebook, NaN or infinite
embeddings, wrong shapes; refused by ``load_voice``, the header-only read and the library's import (the studio's),
before their tensors are read where the header shows it."""

from __future__ import annotations

import tracemalloc

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays
from safetensors.numpy import save_file

from engine.core.voice import CODEBOOK_SIZE, MAX_REF_FRAMES, check_voice_arrays, voice_arrays
from engine.core.voice_file import FORMAT_KEY, FORMAT_VERSION, MAX_FILE_BYTES, load_voice, read_voice_metadata
from engine.errors import VoiceError
from engine.voices import Voice
from engine.voices.library import VoiceLibrary
from engine.voices.library_errors import InvalidName, UnreadableVoice
from engine.voices.library_names import checked_name

RNG = np.random.default_rng(0)
EMBEDDING = RNG.standard_normal(64).astype(np.float32)


def raw_voice(path, tensors: dict, ref_text: str | None = "Hello there.", meta: str = "{}") -> None:
    """A clone's voice file written as any program could, past ``save_voice``'s checks."""
    metadata = {FORMAT_KEY: FORMAT_VERSION, "kind": "clone", "language": "auto", "meta": meta}
    if ref_text is not None:
        metadata["ref_text"] = ref_text
    if "speaker_embedding" in tensors:
        metadata["embedding_dim"] = str((*tensors["speaker_embedding"].shape, 0)[0])
    save_file(tensors, str(path), metadata=metadata)


def test_a_voice_with_100000_frames_of_codes_is_refused_before_its_tensors_are_read(tmp_path):
    path = tmp_path / "huge.voice"
    raw_voice(path, {"speaker_embedding": EMBEDDING, "ref_codes": np.zeros((100_000, 16), dtype=np.int64)})
    assert path.stat().st_size > 12_000_000
    tracemalloc.start()
    try:
        with pytest.raises(VoiceError, match=f"100000 frames; at most {MAX_REF_FRAMES} fit a prompt"):
            load_voice(path)
        assert tracemalloc.get_traced_memory()[1] < 1 << 20  # its 12.8 MB of codes were never read
    finally:
        tracemalloc.stop()
    with pytest.raises(VoiceError, match="100000 frames"):
        read_voice_metadata(path)
    library = VoiceLibrary(tmp_path / "library")
    with pytest.raises(UnreadableVoice, match="not a voice file Orator can read.*100000 frames"):
        library.import_file(path)
    assert library.names() == []


@pytest.mark.parametrize(("tensors", "message"), [
    ({"speaker_embedding": EMBEDDING, "ref_codes": np.full((10, 16), CODEBOOK_SIZE, dtype=np.int64)},
     "codes run from 2048 to 2048; codes are 0 to 2047"),
    ({"speaker_embedding": EMBEDDING, "ref_codes": np.full((10, 16), -1, dtype=np.int32)}, "run from -1"),
    ({"speaker_embedding": np.full(64, np.nan, dtype=np.float32)}, "speaker_embedding holds NaN"),
    ({"speaker_embedding": np.full(64, np.inf, dtype=np.float16)}, "speaker_embedding holds NaN, infinite"),
    ({"ref_audio": np.full(48000, np.nan, dtype=np.float32)}, "ref_audio holds NaN"),
    ({"speaker_embedding": np.full(64, 1e300, dtype=np.float64)}, "speaker_embedding holds NaN, infinite"),
    ({"ref_audio": np.zeros(61 * 24000, dtype=np.float32)}, "at most 1440000 can be used"),
    ({"speaker_embedding": np.zeros(10_000, dtype=np.float32)}, "at most 8192"),
    ({"speaker_embedding": EMBEDDING, "ref_codes": np.zeros((10, 15), dtype=np.int64)}, r"must be \[T, 16\]"),
])
def test_voices_no_model_can_use_are_refused(tmp_path, tensors, message):
    path = tmp_path / "bad.voice"
    raw_voice(path, tensors, ref_text="Hi." if "ref_codes" in tensors or "ref_audio" in tensors else None)
    with pytest.raises(VoiceError, match=message):
        load_voice(path)
    with pytest.raises(UnreadableVoice):
        VoiceLibrary(tmp_path / "library").import_file(path)


def test_a_file_past_the_size_limit_is_refused_unread(tmp_path):
    path = tmp_path / "padded.voice"
    raw_voice(path, {"speaker_embedding": EMBEDDING}, ref_text=None)
    with open(path, "ab") as f:
        f.truncate(MAX_FILE_BYTES + 1)
    with pytest.raises(VoiceError, match="a voice file holds at most 32 MiB"):
        load_voice(path)
    with pytest.raises(VoiceError, match="at most 32 MiB"):
        read_voice_metadata(path)


_dtypes = st.sampled_from([np.float16, np.float32, np.float64, np.int8, np.int16, np.int32, np.int64])
_shapes = st.lists(st.integers(0, 40), min_size=0, max_size=3).map(tuple)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(embedding=st.one_of(st.none(), _dtypes.flatmap(lambda d: arrays(d, _shapes))),
       codes=st.one_of(st.none(), _dtypes.flatmap(lambda d: arrays(d, st.tuples(st.integers(0, 40),
                                                                                st.sampled_from([15, 16, 17]))))),
       audio=st.one_of(st.none(), _dtypes.flatmap(lambda d: arrays(d, _shapes))))
def test_any_arrays_load_as_a_usable_voice_or_are_refused(tmp_path, embedding, codes, audio):
    tensors = {name: value for name, value in (("speaker_embedding", embedding), ("ref_codes", codes),
                                               ("ref_audio", audio)) if value is not None}
    path = tmp_path / "any.voice"
    raw_voice(path, tensors, ref_text="Hi." if codes is not None else None)
    try:
        voice = load_voice(path)
    except VoiceError as e:
        assert str(e)
        return
    check_voice_arrays(voice_arrays(voice), "loaded")  # whatever loads passes the engine's own check
    if voice.ref_codes is not None:
        assert 0 <= voice.ref_codes.min() and voice.ref_codes.max() < CODEBOOK_SIZE
        assert len(voice.ref_codes) <= MAX_REF_FRAMES


def test_a_meta_field_nested_100000_deep_is_an_unreadable_voice_listed_and_logged(tmp_path, caplog):
    library = VoiceLibrary(tmp_path / "library")
    raw_voice(library.folder / "Deep.voice", {"speaker_embedding": EMBEDDING}, ref_text=None,
              meta="[" * 100_000 + "]" * 100_000)
    for read in (load_voice, read_voice_metadata):
        with pytest.raises(VoiceError, match="unreadable meta data: the document is nested 100000 levels deep"):
            read(library.folder / "Deep.voice")
    with caplog.at_level("WARNING", logger="engine.voices.library"):
        [entry] = library.entries()
        library.entries()  # unchanged: logged once
    assert not entry.readable and "nested 100000 levels deep" in entry.error
    assert [r.getMessage() for r in caplog.records if "Deep.voice" in r.getMessage()] == [
        f"the voice file Deep.voice cannot be read: {entry.error}"]
    with pytest.raises(UnreadableVoice, match="nested 100000"):
        library.load("Deep")


@pytest.mark.parametrize("make", [lambda: Voice.preset(["x"]), lambda: Voice.preset("ryan", language=5),
                                  lambda: Voice.design({"a": 1}), lambda: Voice.preset("ryan", instruct=["slow"]),
                                  lambda: Voice.clone((np.ones(24000), 24000), ref_text=["words"])])
def test_voice_fields_that_are_not_text_are_refused(make):
    with pytest.raises(VoiceError, match="must be text, not"):
        make()


def test_a_name_that_is_not_text_or_huge_is_refused_without_echoing_it():
    with pytest.raises(InvalidName, match="must be text, not list"):
        checked_name(["x"])
    for huge in ("CON." + "x" * 19_000_000, "a/" + "x" * 19_000_000):
        with pytest.raises(InvalidName) as refused:
            checked_name(huge)
        assert len(str(refused.value)) < 200
