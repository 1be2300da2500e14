"""The voice library's errors: ``LibraryError`` (an ``OratorError``) and its subclasses, whose messages are fit to
show a user: they name voices, never a file's folder, and never list the library."""

from engine.errors import OratorError


class LibraryError(OratorError):
    """A library operation cannot be done; the message is fit to show the user."""


class InvalidName(LibraryError):
    """The name cannot be a voice's library name."""


class VoiceNotFound(LibraryError):
    """No voice of the library has that name."""


class VoiceExists(LibraryError):
    """A voice of that name (or one differing only in case or Unicode form) is already stored."""


class LibraryFull(LibraryError):
    """The library holds ``max_voices`` voices already."""


class UnreadableVoice(LibraryError):
    """The voice's file is there but cannot be read (truncated, corrupted, foreign or newer)."""
