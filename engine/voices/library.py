"""The voice library: a folder of voice files (``NAME.voice``), shared by the desktop studio and the server.

The file name is the voice's library name: ``engine.voices.library_names.checked_name`` holds the rules a name
follows; two names that differ only in case, Unicode normal form or runs of spaces are the same voice
(``name_key``): the second is refused. The folder's files (voices, temporary files, the lock) are told apart by
``engine.voices.library_folder``.

A listing (``entries``) reads each file's header only (``engine.core.voice_file.read_voice_metadata``), never its
tensors, and keeps each entry while the file's (mtime, size, inode) stays the same. A file that cannot be read
is listed as unreadable with its error, keeps its name taken, can be deleted, and raises ``UnreadableVoice``
when loaded. The folder's name list is kept while the folder's modification time stays what it was and the list
was taken more than ``SETTLED_NS`` after it: an added or removed file (by this process or another: the studio and
the server share the folder) changes the folder's time, and one added in the same tick of a coarse clock (FAT's
is 2 s) as the listing is caught because such a fresh listing is not kept.

Changes (save, add, rename, delete) are serialized across threads and, through an exclusive lock on the folder's
``.orator-library.lock`` file (POSIX ``flock``), across processes: the replicas of a server on Ray Serve and the
studio may share one folder, and a name checked free must still be free when it is written.
Writes are atomic and durable (``engine.atomic_files``); temporary files an interrupted write left behind
(``.orator-*.tmp``, and the ``.NAME.voice.*.tmp`` and ``.tmp*`` of earlier versions) are removed when a library
is opened once they are ``STALE_TEMP_S`` old. A library holds at most ``max_voices`` voices (``LibraryFull``
beyond).

Errors are ``LibraryError`` (an ``OratorError``) subclasses (``engine.voices.library_errors``) whose messages are
fit to show a user: they name voices, never a file's folder, and never list the library.
"""

from __future__ import annotations

import logging
import os
import threading
import time
import unicodedata
from collections import OrderedDict
from contextlib import contextmanager
from pathlib import Path

from engine.atomic_files import atomic_write, sync_folder
from engine.core.voice import Voice
from engine.core.voice_file import load_voice, read_voice_metadata, save_voice
from engine.core.voice_names import MAX_NAME_CHARS, name_key
from engine.errors import VoiceError
from engine.voices.library_entry import VoiceEntry
from engine.voices.library_errors import (
    InvalidName,
    LibraryError,
    LibraryFull,
    UnreadableVoice,
    VoiceExists,
    VoiceNotFound,
)
from engine.voices.library_folder import VOICE_SUFFIX, file_stamp, folder_lock, is_temp_name, scan_voice_files
from engine.voices.library_names import checked_name

log = logging.getLogger(__name__)
DEFAULT_MAX_VOICES = 1000
STALE_TEMP_S = 15 * 60  # a temporary file this old belongs to no write still running
SETTLED_NS = 2_000_000_000  # a folder modified less than this before a listing may change again unseen
VOICE_CACHE_BYTES = 256 * 1024 * 1024  # loaded voices kept for reuse, by the size of their arrays
DATA_DIR_ENV = "ORATOR_DATA_DIR"


def data_dir() -> Path:
    """Orator's data folder: ``$ORATOR_DATA_DIR``, else the platform's user data folder."""
    override = os.environ.get(DATA_DIR_ENV)
    if override:
        return Path(override)
    try:
        from platformdirs import user_data_dir
    except ImportError:  # the server may run without platformdirs: the same place it picks on Linux
        return Path(os.environ.get("XDG_DATA_HOME") or Path.home() / ".local" / "share") / "Orator"
    return Path(user_data_dir("Orator", "Orator"))


def default_library_dir() -> Path:
    return data_dir() / "voices"


class VoiceLibrary:
    """Voices stored as ``<folder>/<name>.voice``; safe to use from several threads at once."""

    def __init__(self, folder: str | os.PathLike, max_voices: int = DEFAULT_MAX_VOICES,
                 stale_temp_s: float = STALE_TEMP_S):
        if max_voices < 1:
            raise ValueError("max_voices must be at least 1")
        self.folder = Path(folder)
        self.folder.mkdir(parents=True, exist_ok=True)
        self.max_voices = max_voices
        self._lock = threading.RLock()  # one change at a time: its checks and its write go together
        self._depth = 0  # holds of ``_lock`` by the thread holding it: the folder's lock is taken once
        self._listing: tuple[int, list[str]] | None = None  # (the folder's mtime then, the names)
        self._entries: dict[str, tuple[tuple, VoiceEntry]] = {}
        self._voices: OrderedDict[str, tuple[tuple, Voice, int]] = OrderedDict()
        self._voices_lock = threading.Lock()
        self.clean_temp_files(stale_temp_s)

    # ---- reading ---------------------------------------------------------------------------------
    def names(self) -> list[str]:
        """Every stored name, readable or not, sorted case-insensitively (a new list each call)."""
        try:
            modified = self.folder.stat().st_mtime_ns
        except OSError:
            modified = None
        listing = self._listing  # one read: another thread may replace it meanwhile
        if listing is not None and modified is not None and listing[0] == modified:
            return list(listing[1])
        listed_at = time.time_ns()
        names = sorted(scan_voice_files(self.folder), key=lambda n: (name_key(n), n))
        settled = modified is not None and listed_at - modified > SETTLED_NS
        self._listing = (modified, names) if settled else None
        return list(names)

    def __contains__(self, name) -> bool:
        return self.find(name) is not None

    def find(self, name) -> str | None:
        """The stored name matching ``name`` exactly, else in NFC, else case-insensitively; else None.

        Only the folder's own names can match, so no ``name`` reaches a file outside it."""
        if not isinstance(name, str) or not name.strip():
            return None
        names = self.names()
        if name in names:
            return name
        wanted = unicodedata.normalize("NFC", name).strip()
        if wanted in names:
            return wanted
        key = name_key(wanted)
        return next((n for n in names if name_key(n) == key), None)

    def entries(self) -> list[VoiceEntry]:
        """Every voice file, sorted by name, from its header only; unreadable ones with their error."""
        out, seen = [], set()
        for name in self.names():
            path = self._path(name)
            try:
                stamp = file_stamp(path)
            except FileNotFoundError:  # removed since the folder was listed
                continue
            except OSError as e:
                out.append(VoiceEntry(name, path, None, f"{path.name} cannot be read: {e.strerror}"))
                continue
            seen.add(name)
            cached = self._entries.get(name)
            if cached is not None and cached[0] == stamp:
                out.append(cached[1])
                continue
            try:
                entry = VoiceEntry(name, path, read_voice_metadata(path))
            except VoiceError as e:  # listed as unreadable, and logged once while the file stays as it is
                log.warning("the voice file %s cannot be read: %s", path.name, e)
                entry = VoiceEntry(name, path, None, str(e))
            self._entries[name] = (stamp, entry)
            out.append(entry)
        for gone in set(self._entries) - seen:
            self._entries.pop(gone, None)
        return out

    def entry(self, name: str) -> VoiceEntry:
        stored = self._stored(name)
        return next((e for e in self.entries() if e.name == stored), None) or self._not_found(name)

    def load(self, name: str) -> Voice:
        """The stored voice, its ``name`` the library name; ``VoiceNotFound`` or ``UnreadableVoice``."""
        stored = self._stored(name)
        path = self._path(stored)
        try:
            stamp = file_stamp(path)
        except FileNotFoundError:
            self._not_found(name)
        except OSError as e:
            raise UnreadableVoice(f"The voice file of “{stored}” cannot be read: {e.strerror}.") from None
        with self._voices_lock:
            cached = self._voices.get(stored)
            if cached is not None and cached[0] == stamp:
                self._voices.move_to_end(stored)
                return cached[1]
        try:
            voice = load_voice(path)
        except VoiceError as e:
            raise UnreadableVoice(f"The voice file of “{stored}” cannot be read: {e}") from None
        voice = voice if voice.name == stored else voice.with_(name=stored)
        self._keep_loaded(stored, stamp, voice)
        return voice

    # ---- changing ----------------------------------------------------------------------------------
    def save(self, voice: Voice, name: str, replace: bool = False) -> str:
        """Store ``voice`` as ``name``; ``VoiceExists`` if that name is taken, unless ``replace``."""
        with self._changing():
            name = checked_name(name)
            existing = self.find(name)
            if existing is not None and not replace:
                raise VoiceExists(f"A voice called “{existing}” already exists.")
            if existing is None:
                self._check_room()
            self._write(voice.with_(name=name), name, existing)
            return name

    def add(self, voice: Voice, name: str) -> str:
        """Store ``voice`` under ``name``, made unique (``Name (2)``...); returns the name used."""
        with self._changing():
            return self.save(voice, self.unique_name(name))

    def unique_name(self, wanted: str) -> str:
        """``wanted`` in its stored form if no voice has it, else the first free ``wanted (n)``."""
        base = checked_name(wanted)
        name, n = base, 2
        while self.find(name) is not None:
            suffix = f" ({n})"
            stem = base
            while True:  # shorten the base until the numbered name fits the length limits
                try:
                    name = checked_name(stem + suffix)
                    break
                except InvalidName:
                    stem = stem[:-1].rstrip()
                    if not stem:
                        raise
            n += 1
        return name

    def rename(self, old: str, new: str) -> str:
        """Give the voice ``old`` the name ``new`` (a change of case alone included); returns the new name."""
        with self._changing():
            stored = self._stored(old)
            new = checked_name(new)
            if new == stored:
                return new
            clash = self.find(new)
            if clash is not None and clash != stored:
                raise VoiceExists(f"A voice called “{clash}” already exists.")
            self._write(self.load(stored).with_(name=new), new, stored)
            return new

    def delete(self, name: str) -> str:
        """Remove the voice (an unreadable file too); returns the name it had."""
        with self._changing():
            stored = self._stored(name)
            try:
                self._path(stored).unlink()
            except FileNotFoundError:
                self._not_found(name)
            except OSError as e:
                raise LibraryError(f"The voice “{stored}” could not be deleted: {e.strerror}.") from None
            self._changed(stored)
            sync_folder(self.folder)
            return stored

    def import_file(self, source: str | os.PathLike) -> str:
        """Copy a voice file into the library under its own name (made unique); returns the name used."""
        source = Path(source)
        try:
            voice = load_voice(source)
        except VoiceError as e:
            raise UnreadableVoice(f"“{source.name}” is not a voice file Orator can read: {e}") from None
        try:
            wanted = checked_name(voice.name)
        except InvalidName:
            wanted = source.stem
        return self.add(voice, wanted)

    def export_file(self, name: str, destination: str | os.PathLike) -> None:
        """Copy the voice's file to ``destination`` (atomically)."""
        source = self._path(self._stored(name))
        try:
            data = source.read_bytes()
            atomic_write(destination, lambda tmp: tmp.write_bytes(data))
        except FileNotFoundError:
            self._not_found(name)
        except OSError as e:
            raise LibraryError(f"The voice “{name}” could not be exported: {e.strerror}.") from None

    def clean_temp_files(self, older_than_s: float = STALE_TEMP_S) -> list[str]:
        """Remove the temporary files of interrupted writes older than ``older_than_s``; their names."""
        removed, cutoff = [], time.time() - older_than_s
        try:
            candidates = [e for e in os.scandir(self.folder) if is_temp_name(e.name)]
        except OSError:
            return removed
        for entry in candidates:
            try:
                if entry.is_file(follow_symlinks=False) and entry.stat(follow_symlinks=False).st_mtime <= cutoff:
                    os.unlink(entry.path)
                    removed.append(entry.name)
            except OSError:  # removed meanwhile, or not ours to remove
                continue
        return removed

    # ---- internals ---------------------------------------------------------------------------------
    @contextmanager
    def _changing(self):
        """Hold the change lock of this library (re-entrant) and, around the outermost hold, of the folder."""
        with self._lock:
            self._depth += 1
            try:
                if self._depth > 1:
                    yield
                    return
                with folder_lock(self.folder):
                    yield
            finally:
                self._depth -= 1

    def _path(self, stored: str) -> Path:
        return self.folder / f"{stored}{VOICE_SUFFIX}"

    def _stored(self, name: str) -> str:
        stored = self.find(name)
        return stored if stored is not None else self._not_found(name)

    @staticmethod
    def _not_found(name):
        shown = name if isinstance(name, str) and len(name) <= MAX_NAME_CHARS else "that name"
        raise VoiceNotFound(f"There is no voice called “{shown}”.")

    def _check_room(self) -> None:
        count = len(self.names())
        if count >= self.max_voices:
            raise LibraryFull(f"The voice library is full: it holds {count} voices, at most {self.max_voices} "
                              "are allowed. Delete some first.")

    def _write(self, voice: Voice, name: str, existing: str | None) -> None:
        """Write ``voice`` as ``name``; the file of ``existing`` (the same voice) is replaced or renamed."""
        target = self._path(name)
        try:
            if existing is None or existing == name:
                save_voice(voice, target)
            else:  # over the old file, then a rename: a change of case alone works on any file system
                save_voice(voice, self._path(existing))
                os.replace(self._path(existing), target)
                sync_folder(self.folder)
        except VoiceError as e:
            raise LibraryError(f"The voice “{name}” cannot be saved: {e}") from None
        except OSError as e:
            raise LibraryError(f"The voice “{name}” could not be saved: {e.strerror or type(e).__name__}.") from None
        finally:
            self._changed(name, existing)

    def _changed(self, *names: str | None) -> None:
        self._listing = None
        with self._voices_lock:
            for name in names:
                self._entries.pop(name, None)
                self._voices.pop(name, None)

    def _keep_loaded(self, name: str, stamp: tuple, voice: Voice) -> None:
        size = sum(a.nbytes for a in (voice.speaker_embedding, voice.ref_codes, voice.ref_audio) if a is not None)
        if size > VOICE_CACHE_BYTES:
            return
        with self._voices_lock:
            self._voices[name] = (stamp, voice, size)
            self._voices.move_to_end(name)
            total = sum(item[2] for item in self._voices.values())
            while total > VOICE_CACHE_BYTES:
                total -= self._voices.popitem(last=False)[1][2]
