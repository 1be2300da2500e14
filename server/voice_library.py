"""The server's voice library: ``engine.voices.library.VoiceLibrary`` (the studio's folder and rules) with its errors
as the API errors a client sees.

The default folder is ``voices`` under the Orator data directory (``ORATOR_DATA_DIR`` or the platform's user
data folder), shared with the desktop studio. Statuses: a name that cannot be stored is 400 ``invalid_name``,
an unknown voice 404 ``voice_not_found``, a name already taken 409 ``voice_exists``, a full library (the
server's ``max_voices``) 507 ``library_full`` (Insufficient Storage: the request is fine, the server cannot
store more, and unlike a 409 it is not about the name), and a voice file that cannot be read 500
``voice_file_error`` (the fault is in the server's files; the message says to delete or replace it).

Every method does file work: the endpoints call them in a worker thread, never on the event loop.
"""

from __future__ import annotations

import os

from engine import Voice
from engine.voices import library as lib
from engine.voices.library import DEFAULT_MAX_VOICES, VoiceLibrary, default_library_dir
from engine.voices.library_entry import VoiceEntry
from engine.voices.library_errors import LibraryError
from server.errors import APIError

__all__ = ["VoiceStore", "api_error", "checked_name", "default_library_dir"]

_STATUSES = {  # the most specific class first
    lib.InvalidName: (400, "invalid_name"),
    lib.VoiceNotFound: (404, "voice_not_found"),
    lib.VoiceExists: (409, "voice_exists"),
    lib.LibraryFull: (507, "library_full"),
    lib.UnreadableVoice: (500, "voice_file_error"),
    LibraryError: (500, "library_error"),
}


def api_error(e: LibraryError, param: str | None = None) -> APIError:
    status, code = next(v for k, v in _STATUSES.items() if isinstance(e, k))
    message = str(e)
    if isinstance(e, lib.UnreadableVoice):
        message += " Delete the voice or replace its file."
    return APIError(status, message, param=param, code=code)


def checked_name(name: str | None) -> str:
    """The stored form of a new voice's name, or a 400."""
    try:
        return lib.checked_name(name)
    except LibraryError as e:
        raise api_error(e, param="name") from None


class VoiceStore:
    def __init__(self, folder: str | os.PathLike, max_voices: int = DEFAULT_MAX_VOICES):
        self.library = VoiceLibrary(folder, max_voices=max_voices)
        self.folder = self.library.folder

    def names(self) -> list[str]:
        return self.library.names()

    def find(self, name: str) -> str | None:
        """The stored name matching ``name`` (exactly, else in NFC, else case-insensitively), else None."""
        return self.library.find(name)

    def entries(self) -> list[VoiceEntry]:
        """Every voice file from its header, unreadable ones with their error."""
        return self.library.entries()

    def load(self, name: str) -> Voice:
        try:
            return self.library.load(name)
        except LibraryError as e:
            raise api_error(e, param="voice") from None

    def save(self, voice: Voice, name: str) -> str:
        try:
            return self.library.save(voice, name)
        except LibraryError as e:
            raise api_error(e, param="name") from None

    def delete(self, name: str) -> str:
        try:
            return self.library.delete(name)
        except LibraryError as e:
            raise api_error(e, param="name") from None
