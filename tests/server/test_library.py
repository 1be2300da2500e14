"""The voice library's folder listing (server/library.py): kept while the folder is unchanged and settled, read
again after any change, by the server or by anyone else (the studio), and never kept when taken so soon after a
change that another one could share its timestamp."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from engine import Voice
from server import library
from server.library import VoiceStore


@pytest.fixture
def store(tmp_path):
    return VoiceStore(tmp_path / "voices")


def settle(folder: Path) -> None:
    """Date the folder's last change an hour back, as an existing library's would be."""
    stamp = folder.stat().st_mtime_ns - 3600 * 10**9
    os.utime(folder, ns=(stamp, stamp))


def globs_of(store, monkeypatch) -> list[int]:
    calls = []
    real = type(store.folder).glob
    monkeypatch.setattr(type(store.folder), "glob", lambda self, pattern: calls.append(1) or real(self, pattern))
    return calls


def test_a_settled_folder_is_listed_once_and_the_list_handed_out_is_a_copy(store, monkeypatch):
    (store.folder / "Anna.voice").write_bytes(b"")
    settle(store.folder)
    globs = globs_of(store, monkeypatch)
    first = store.names()
    first.append("tampered")
    assert store.names() == ["Anna"] and store.find("anna") == "Anna"
    assert len(globs) == 1


def test_a_file_added_or_removed_by_someone_else_is_seen(store):
    (store.folder / "Anna.voice").write_bytes(b"")
    settle(store.folder)
    assert store.names() == ["Anna"]
    (store.folder / "bert.voice").write_bytes(b"")  # the studio saves a voice: the folder's time moves on
    assert store.names() == ["Anna", "bert"]
    settle(store.folder)
    store.names()
    (store.folder / "Anna.voice").unlink()
    assert store.names() == ["bert"]


def test_a_listing_taken_right_after_a_change_is_not_kept(store, monkeypatch):
    """On a clock of coarse ticks a second change can keep the folder's time: a listing taken within
    ``SETTLED_NS`` of the last change is read again next time."""
    (store.folder / "Anna.voice").write_bytes(b"")
    globs = globs_of(store, monkeypatch)
    assert store.names() == ["Anna"]
    stamp = store.folder.stat().st_mtime_ns
    (store.folder / "bert.voice").write_bytes(b"")
    os.utime(store.folder, ns=(stamp, stamp))  # the same tick: the folder's time did not move
    assert store.names() == ["Anna", "bert"]
    assert len(globs) == 2
    monkeypatch.setattr(library, "SETTLED_NS", -1)  # now every listing counts as settled
    store.names()
    store.names()
    assert len(globs) == 3


def test_saving_and_deleting_through_the_store_are_seen_at_once_even_within_one_tick(store):
    settle(store.folder)
    stamp = store.folder.stat().st_mtime_ns
    assert store.names() == []
    store.save(Voice.preset("vivian"), "Mine")
    os.utime(store.folder, ns=(stamp, stamp))
    assert store.names() == ["Mine"]
    settle(store.folder)
    store.names()
    stamp = store.folder.stat().st_mtime_ns
    store.delete("mine")
    os.utime(store.folder, ns=(stamp, stamp))
    assert store.names() == []
