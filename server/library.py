"""The voice library on disk, shared with the desktop studio: ``<folder>/<name>.voice`` files.

The folder and the naming rule are the studio's (``qtapp.settings`` / ``qtapp.library``): the default
folder is ``voices`` under the Orator data directory (``ORATOR_DATA_DIR`` or the platform's user
data folder), the file name is the voice's library name, and names may not contain path
separators, ``: * ? " < > |``, control characters or a leading dot, so no name can leave the folder.

Every speech request looks its voice up among the folder's names, so the listing is kept while the folder's
modification time stays what it was and the listing was taken more than ``SETTLED_NS`` after it: a file added
or removed since (by the server or by the studio) changes the folder's time, and one added in the same tick
of a coarse clock (FAT's is 2 s) as the listing is caught because such a fresh listing is not kept.
"""

from __future__ import annotations

import os
import re
import time
from pathlib import Path

from engine import Voice, VoiceError
from server.errors import APIError

VOICE_SUFFIX = ".voice"
MAX_NAME_CHARS = 80
DATA_DIR_ENV = "ORATOR_DATA_DIR"
_FORBIDDEN_NAME_CHARS = re.compile(r'[\\/:*?"<>|\x00-\x1f]')
SETTLED_NS = 2_000_000_000  # a folder modified less than this before a listing may change again unseen


def default_library_dir() -> Path:
    """The studio's library folder: ``$ORATOR_DATA_DIR/voices`` or the platform data folder's."""
    override = os.environ.get(DATA_DIR_ENV)
    if override:
        return Path(override) / "voices"
    try:
        from platformdirs import user_data_dir
    except ImportError:  # the same place platformdirs picks on Linux
        return Path(os.environ.get("XDG_DATA_HOME") or Path.home() / ".local" / "share") / "Orator" / "voices"
    return Path(user_data_dir("Orator", "Orator")) / "voices"


def checked_name(name: str | None) -> str:
    """The stripped voice name, or a 400 if it cannot be a library file name."""
    name = (name or "").strip()
    if not name:
        raise APIError(400, "a voice needs a name", param="name", code="invalid_name")
    if _FORBIDDEN_NAME_CHARS.search(name) or name.startswith("."):
        raise APIError(400, f"{name!r} cannot be a voice name (no / \\ : * ? \" < > |, control characters "
                            "or leading dot)", param="name", code="invalid_name")
    if len(name) > MAX_NAME_CHARS:
        raise APIError(400, f"a voice name has at most {MAX_NAME_CHARS} characters", param="name",
                       code="invalid_name")
    return name


class VoiceStore:
    def __init__(self, folder: str | os.PathLike):
        self.folder = Path(folder)
        self.folder.mkdir(parents=True, exist_ok=True)
        self._listing: tuple[int, list[str]] | None = None  # (the folder's mtime then, the names)

    def path_of(self, name: str) -> Path:
        return self.folder / f"{checked_name(name)}{VOICE_SUFFIX}"

    def names(self) -> list[str]:
        """The library's voice names, sorted case-insensitively (a new list each call)."""
        try:
            modified = self.folder.stat().st_mtime_ns
        except OSError:
            modified = None
        listing = self._listing  # one read: a request thread and the event loop may both list
        if listing is not None and modified is not None and listing[0] == modified:
            return list(listing[1])
        listed_at = time.time_ns()
        names = sorted((p.stem for p in self.folder.glob(f"*{VOICE_SUFFIX}") if not p.name.startswith(".")),
                       key=str.lower)
        settled = modified is not None and listed_at - modified > SETTLED_NS
        self._listing = (modified, names) if settled else None
        return list(names)

    def find(self, name: str) -> str | None:
        """The stored name matching ``name`` exactly, else case-insensitively, else None."""
        names = self.names()
        if name in names:
            return name
        return next((n for n in names if n.lower() == name.lower()), None)

    def load(self, name: str) -> Voice:
        stored = self.find(checked_name(name))
        if stored is None:
            raise APIError(404, f"there is no library voice called {name!r}", param="voice", code="voice_not_found")
        try:
            return Voice.load(self.path_of(stored))
        except VoiceError as e:
            raise APIError(500, f"the voice file of {stored!r} cannot be read: {e}", code="voice_file_error") from e

    def entries(self) -> list[tuple[str, Voice]]:
        """Every readable voice; unreadable files are left out."""
        out = []
        for name in self.names():
            try:
                out.append((name, Voice.load(self.path_of(name))))
            except VoiceError:
                continue
        return out

    def save(self, voice: Voice, name: str) -> str:
        name = checked_name(name)
        if self.find(name) is not None:
            raise APIError(409, f"a voice called {name!r} already exists; delete it first", param="name",
                           code="voice_exists")
        voice.with_(name=name).save(self.path_of(name))
        self._listing = None
        return name

    def delete(self, name: str) -> str:
        stored = self.find(checked_name(name))
        if stored is None:
            raise APIError(404, f"there is no library voice called {name!r}", param="name", code="voice_not_found")
        self.path_of(stored).unlink(missing_ok=True)
        self._listing = None
        return stored
