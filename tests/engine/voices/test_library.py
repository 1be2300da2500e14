"""The voice library (engine/voices/library*.py): name rules against hostile names, the caps on name length and on the
number of voices, unreadable files, header-only and cached listings, stale temporary files, and a library that
stays whole when the process writing it is killed."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import textwrap
import threading
import time
import unicodedata
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import engine.voices.library as library
from engine.voices import Voice, save_voice
from engine.voices.library import VoiceLibrary
from engine.voices.library_errors import (
    InvalidName,
    LibraryError,
    LibraryFull,
    UnreadableVoice,
    VoiceExists,
    VoiceNotFound,
)
from engine.voices.library_folder import LOCK_FILE
from engine.voices.library_names import MAX_NAME_BYTES, checked_name

PRESET = Voice.preset("vivian", "english")
CLONE = Voice("clone", ref_text="Some words.", ref_audio=np.full(24000, 0.1, np.float32),
              speaker_embedding=np.ones(64, np.float32), ref_codes=np.ones((12, 16), np.int64))


@pytest.fixture
def lib(tmp_path):
    return VoiceLibrary(tmp_path / "voices")


def temp_files(folder: Path) -> list[str]:
    """The folder's hidden files but the lock file, which stays (removing it would race with a process waiting)."""
    return sorted(p.name for p in folder.iterdir() if p.name.startswith(".") and p.name != LOCK_FILE)


# ---- names ---------------------------------------------------------------------------------------------
def test_save_list_load_rename_delete(lib):
    assert lib.save(PRESET, "Narrator") == "Narrator"
    assert lib.save(CLONE, "  Tone ") == "Tone"
    assert lib.names() == ["Narrator", "Tone"]
    tone = lib.load("tone")
    assert tone.name == "Tone" and tone.ref_text == "Some words." and tone.is_encoded
    np.testing.assert_array_equal(tone.ref_codes, CLONE.ref_codes)
    assert lib.rename("tone", "TONE") == "TONE"  # a change of case alone
    assert lib.names() == ["Narrator", "TONE"] and lib.load("TONE").name == "TONE"
    assert lib.delete("narrator") == "Narrator"
    assert lib.names() == ["TONE"]
    with pytest.raises(VoiceNotFound, match="no voice called"):
        lib.load("Narrator")
    with pytest.raises(VoiceNotFound):
        lib.delete("Narrator")


@pytest.mark.parametrize("first, second", [
    ("Café", "Cafe\u0301"),  # NFC and NFD
    ("Straße", "STRASSE"),  # case folding, not just lower()
    ("Bob Smith", "bob\u00a0 smith"),  # runs of spaces of any kind
    ("Zoë", "ZOE\u0308"),
])
def test_names_that_look_alike_are_one_voice(lib, first, second):
    lib.save(PRESET, first)
    with pytest.raises(VoiceExists):
        lib.save(PRESET, second)
    assert lib.find(second) == first and lib.load(second).name == first
    assert lib.add(PRESET, second) == f"{unicodedata.normalize('NFC', second)} (2)"


@pytest.mark.parametrize("bad, message", [
    ("", "needs a name"), ("   ", "needs a name"), (None, "needs a name"),
    ("a/b", "cannot contain “/”"), ("..\\up", "cannot contain"), (".hidden", "dot"), ("ends.", "dot"),
    ("evil\u202egnp.exe", "invisible formatting character .U\\+202E"), ("zero\u200bwidth", "U\\+200B"),
    ("two\u2028lines", "line separator"), ("para\u2029graph", "paragraph separator"),
    ("del\x7f", "control character"), ("c1\x85c1", "control character"), ("tab\there", "control character"),
    ("nul\x00", "control character"), ("lone\ud800", "surrogate"), ("CON", "reserved"), ("com1.voice", "reserved"),
    ("x" * 81, "at most 80 characters"),
    ("语" * 80, "at most 200 bytes"),  # 240 bytes: its temporary file's name was over 255 bytes
    ("😀" * 51, "at most 200 bytes"),  # 204 bytes
])
def test_names_that_cannot_be_file_names_are_refused_with_a_reason(lib, bad, message):
    with pytest.raises(InvalidName, match=message):
        lib.save(PRESET, bad)
    assert lib.names() == [] and temp_files(lib.folder) == []


def test_the_byte_limit_leaves_room_for_long_names_in_any_script(lib):
    for name in ("语" * 66, "😀" * 50, "ä" * 80, "x" * 80):
        assert len(name.encode()) <= MAX_NAME_BYTES
        assert lib.save(CLONE, name) == name
        assert lib.load(name).name == name
    assert len(lib.names()) == 4
    long = lib.add(PRESET, "x" * 80)  # numbered, and shortened to fit
    assert long == "x" * 76 + " (2)" and lib.load(long).kind == "preset"


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(name=st.text(min_size=0, max_size=100))
def test_any_name_is_refused_clearly_or_stored_under_its_nfc_form(tmp_path, name):
    """Whatever the text: ``InvalidName``, or a file that exists, is listed under the NFC name and loads back.
    Never an OSError from the file system."""
    lib = VoiceLibrary(tmp_path / "hostile")
    try:
        stored = lib.save(PRESET, name, replace=True)
    except InvalidName:
        with pytest.raises(InvalidName):
            checked_name(name)
        return
    expected = unicodedata.normalize("NFC", name).strip()
    assert stored == expected
    assert (lib.folder / f"{stored}.voice").is_file()
    assert stored in lib.names() and lib.find(name) == stored
    assert lib.load(stored).name == stored
    assert lib.delete(stored) == stored and stored not in lib.names()


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(name=st.text(st.characters(codec="utf-8"), min_size=1, max_size=40))
def test_a_name_and_its_nfd_twin_collide(tmp_path, name):
    lib = VoiceLibrary(tmp_path / "twins")
    try:
        stored = lib.save(PRESET, unicodedata.normalize("NFC", name), replace=True)
    except InvalidName:
        return
    try:
        with pytest.raises(VoiceExists):
            lib.save(PRESET, unicodedata.normalize("NFD", name))
    finally:
        lib.delete(stored)


# ---- the cap -------------------------------------------------------------------------------------------
def test_the_library_holds_at_most_max_voices(tmp_path):
    lib = VoiceLibrary(tmp_path / "small", max_voices=3)
    for name in ("a", "b", "c"):
        lib.save(PRESET, name)
    with pytest.raises(LibraryFull, match="at most 3"):
        lib.save(PRESET, "d")
    with pytest.raises(LibraryFull):
        lib.add(PRESET, "a")
    assert lib.save(CLONE, "a", replace=True) == "a"  # replacing takes no room
    assert lib.rename("b", "B2") == "B2"
    lib.delete("c")
    assert lib.save(PRESET, "d") == "d"
    assert lib.names() == ["a", "B2", "d"]


# ---- unreadable files ----------------------------------------------------------------------------------
def test_an_unreadable_file_is_listed_keeps_its_name_and_can_be_deleted(lib):
    lib.save(PRESET, "Good")
    (lib.folder / "Broken.voice").write_bytes(b"garbage")
    entries = {e.name: e for e in lib.entries()}
    assert entries["Good"].readable and entries["Good"].kind == "preset"
    broken = entries["Broken"]
    assert not broken.readable and broken.kind is None and "not a readable voice file" in broken.error
    assert str(lib.folder) not in broken.error
    with pytest.raises(VoiceExists):
        lib.save(PRESET, "broken")
    with pytest.raises(UnreadableVoice, match="cannot be read") as error:
        lib.load("broken")
    assert str(lib.folder) not in str(error.value)
    with pytest.raises(UnreadableVoice):
        lib.rename("Broken", "Fixed")
    assert lib.delete("broken") == "Broken"
    assert lib.names() == ["Good"]


def test_a_truncated_clone_is_seen_as_unreadable_from_its_header(lib):
    lib.save(CLONE, "Cut")
    path = lib.folder / "Cut.voice"
    path.write_bytes(path.read_bytes()[:-100])
    assert not lib.entries()[0].readable
    with pytest.raises(UnreadableVoice):
        lib.load("Cut")


# ---- listing: headers only, cached -----------------------------------------------------------------------
def test_a_listing_reads_headers_only_and_each_file_once_until_it_changes(lib, monkeypatch):
    lib.save(Voice("clone", ref_audio=np.full(60 * 24000, 0.1, np.float32)), "Long")
    lib.save(PRESET, "Short")
    monkeypatch.setattr(library, "load_voice", lambda path: pytest.fail("a listing loaded a whole voice"))
    headers = []
    real = library.read_voice_metadata
    monkeypatch.setattr(library, "read_voice_metadata", lambda path: headers.append(path.name) or real(path))
    assert [(e.name, e.kind, e.encoded) for e in lib.entries()] == [("Long", "clone", False), ("Short", "preset", True)]
    assert [e.name for e in lib.entries()] == ["Long", "Short"]
    assert sorted(headers) == ["Long.voice", "Short.voice"]
    save_voice(Voice.design("a new voice"), lib.folder / "Short.voice")  # replaced by someone else
    assert lib.entries()[1].kind == "design"
    assert sorted(headers) == ["Long.voice", "Short.voice", "Short.voice"]


def test_a_loaded_voice_is_reused_until_its_file_changes(lib, monkeypatch):
    lib.save(CLONE, "Tone")
    loads = []
    real = library.load_voice
    monkeypatch.setattr(library, "load_voice", lambda path: loads.append(1) or real(path))
    first = lib.load("Tone")
    assert lib.load("tone") is first and len(loads) == 1
    save_voice(CLONE.with_(ref_text="Other words."), lib.folder / "Tone.voice")
    assert lib.load("Tone").ref_text == "Other words." and len(loads) == 2


def settle(folder: Path) -> None:
    """Date the folder's last change an hour back, as an existing library's would be."""
    stamp = folder.stat().st_mtime_ns - 3600 * 10**9
    os.utime(folder, ns=(stamp, stamp))


def scans_of(monkeypatch) -> list[int]:
    calls = []
    real = library.scan_voice_files
    monkeypatch.setattr(library, "scan_voice_files", lambda folder: calls.append(1) or real(folder))
    return calls


def test_a_settled_folder_is_listed_once_and_the_list_handed_out_is_a_copy(lib, monkeypatch):
    (lib.folder / "Anna.voice").write_bytes(b"")
    settle(lib.folder)
    scans = scans_of(monkeypatch)
    first = lib.names()
    first.append("tampered")
    assert lib.names() == ["Anna"] and lib.find("anna") == "Anna"
    assert len(scans) == 1


def test_a_file_added_or_removed_by_someone_else_is_seen(lib):
    (lib.folder / "Anna.voice").write_bytes(b"")
    settle(lib.folder)
    assert lib.names() == ["Anna"]
    (lib.folder / "bert.voice").write_bytes(b"")  # the studio saves a voice: the folder's time moves on
    assert lib.names() == ["Anna", "bert"]
    settle(lib.folder)
    lib.names()
    (lib.folder / "Anna.voice").unlink()
    assert lib.names() == ["bert"]


def test_a_listing_taken_right_after_a_change_is_not_kept(lib, monkeypatch):
    """On a clock of coarse ticks a second change can keep the folder's time: a listing taken within
    ``SETTLED_NS`` of the last change is read again next time."""
    (lib.folder / "Anna.voice").write_bytes(b"")
    scans = scans_of(monkeypatch)
    assert lib.names() == ["Anna"]
    stamp = lib.folder.stat().st_mtime_ns
    (lib.folder / "bert.voice").write_bytes(b"")
    os.utime(lib.folder, ns=(stamp, stamp))  # the same tick: the folder's time did not move
    assert lib.names() == ["Anna", "bert"]
    assert len(scans) == 2
    monkeypatch.setattr(library, "SETTLED_NS", -1)  # now every listing counts as settled
    lib.names()
    lib.names()
    assert len(scans) == 3


def test_saving_and_deleting_are_seen_at_once_even_within_one_tick(lib):
    settle(lib.folder)
    stamp = lib.folder.stat().st_mtime_ns
    assert lib.names() == []
    lib.save(PRESET, "Mine")
    os.utime(lib.folder, ns=(stamp, stamp))
    assert lib.names() == ["Mine"]
    settle(lib.folder)
    lib.names()
    stamp = lib.folder.stat().st_mtime_ns
    lib.delete("mine")
    os.utime(lib.folder, ns=(stamp, stamp))
    assert lib.names() == []


def test_two_libraries_on_one_folder_see_each_others_changes_at_once(tmp_path):
    """The replicas of a server on Ray Serve, each with its library over one shared folder."""
    first, second = VoiceLibrary(tmp_path / "voices"), VoiceLibrary(tmp_path / "voices")
    settle(first.folder)
    assert second.names() == []
    first.save(PRESET, "Shared")
    assert second.load("shared").speaker == "vivian"
    second.save(PRESET.with_(speaker="ryan"), "Shared", replace=True)
    assert first.load("Shared").speaker == "ryan"
    first.delete("Shared")
    with pytest.raises(VoiceNotFound):
        second.load("Shared")


def test_writers_through_separate_libraries_take_a_name_once_and_keep_the_limit(tmp_path):
    """Each library's thread lock guards only its own users; the folder's lock file guards them all (an open file
    description each, as in separate processes)."""
    folder = tmp_path / "voices"
    libraries = [VoiceLibrary(folder, max_voices=3) for _ in range(8)]
    start = threading.Barrier(len(libraries))

    def save(lib_and_name):
        lib, name = lib_and_name
        start.wait()
        try:
            return lib.save(PRESET, name)
        except (VoiceExists, LibraryFull) as e:
            return type(e)

    with ThreadPoolExecutor(len(libraries)) as pool:
        same = list(pool.map(save, [(lib, "Twin") for lib in libraries]))
    assert same.count("Twin") == 1 and same.count(VoiceExists) == len(libraries) - 1
    with ThreadPoolExecutor(len(libraries)) as pool:
        distinct = list(pool.map(save, [(lib, f"Voice {i}") for i, lib in enumerate(libraries)]))
    assert distinct.count(LibraryFull) == len(libraries) - 2 and len(VoiceLibrary(folder).names()) == 3
    assert all(VoiceLibrary(folder).load(name).speaker == "vivian" for name in VoiceLibrary(folder).names())


# ---- temporary files and crashes -----------------------------------------------------------------------
def test_stale_temporary_files_are_removed_when_the_library_opens(tmp_path):
    folder = tmp_path / "voices"
    folder.mkdir()
    old = time.time() - 3600
    for name in (".orator-x1y2.tmp", ".Anna.voice.ab12cd.tmp", ".Bert.voice.zz9.tmp.voice", ".tmpG9o03d",
                 ".orator-fresh.tmp", ".keep-me"):
        (folder / name).write_bytes(b"partial")
        if "fresh" not in name:
            os.utime(folder / name, (old, old))
    VoiceLibrary(folder)
    assert temp_files(folder) == [".keep-me", ".orator-fresh.tmp"]  # a write may still be running: kept
    VoiceLibrary(folder, stale_temp_s=0)
    assert temp_files(folder) == [".keep-me"]


_SAVER = textwrap.dedent("""
    import sys, types
    package = types.ModuleType("engine")  # engine/__init__ imports torch; the library needs none of it
    package.__path__ = [sys.argv[1]]
    sys.modules["engine"] = package
    import numpy as np
    from engine.voices.library import LibraryError, VoiceLibrary
    from engine.voices import Voice

    lib = VoiceLibrary(sys.argv[2], stale_temp_s=1e9)
    voice = Voice("clone", ref_text="words", ref_audio=np.full(40 * 24000, 0.25, np.float32),
                  speaker_embedding=np.ones(1024, np.float32), ref_codes=np.ones((500, 16), np.int64))
    i = 0
    while True:
        name = f"Voice {i % 5}"
        try:
            lib.save(voice.with_(meta={"i": i}), name, replace=True)
            if i % 3 == 0:
                lib.rename(name, f"Renamed {i % 7}")
            if i % 4 == 0:
                lib.delete(lib.names()[0])
        except LibraryError:
            pass
        if i == 1:  # a voice is stored (the first was renamed, then deleted): a kill from now leaves one
            print("ready", flush=True)
        i += 1
""")


def test_a_library_whose_writer_is_killed_mid_save_is_whole_on_reopen(tmp_path):
    """A child process saves, renames and deletes 4 MB clones in a loop and is killed (SIGKILL) at a random
    moment once it has stored a voice, five times over: every listed voice then loads, and reopening removes every
    temporary file."""
    folder = tmp_path / "voices"
    engine_dir = str(Path(library.__file__).parents[1])  # the engine package: this checkout's library, not torch
    rng = random.Random(7)
    for _ in range(5):
        child = subprocess.Popen([sys.executable, "-c", _SAVER, engine_dir, str(folder)], stdout=subprocess.PIPE,
                                 text=True)
        try:
            assert child.stdout.readline().strip() == "ready"
            time.sleep(rng.uniform(0.05, 0.6))
        finally:
            child.send_signal(signal.SIGKILL)
            child.wait(timeout=30)
        reopened = VoiceLibrary(folder, stale_temp_s=0)
        entries = reopened.entries()
        assert entries and all(e.readable for e in entries), [(e.name, e.error) for e in entries]
        for entry in entries:
            voice = reopened.load(entry.name)
            assert voice.ref_audio.shape == (40 * 24000,) and voice.ref_codes.shape == (500, 16)
        assert temp_files(folder) == []


def test_disk_errors_are_library_errors_without_paths(lib, monkeypatch):
    import engine.atomic_files as atomic

    def full(*args, **kwargs):
        raise OSError(28, "No space left on device", str(lib.folder / ".orator-abc.tmp"))

    monkeypatch.setattr(atomic.os, "replace", full)
    with pytest.raises(LibraryError, match="No space left on device") as error:
        lib.save(CLONE, "Big")
    assert str(lib.folder) not in str(error.value) and ".tmp" not in str(error.value)
    assert lib.names() == [] and temp_files(lib.folder) == []
