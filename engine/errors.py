"""Typed errors the engine raises for bad input, so callers (CLI, GUI, server) can show clear messages."""


class OratorError(Exception):
    """Base class of every error the engine raises on purpose."""


class CheckpointError(OratorError):
    """A model directory or hub id is missing, incomplete, corrupted or of the wrong shape."""


class VoiceError(OratorError):
    """A voice cannot be used: unknown speaker, wrong model type, bad reference audio or voice file."""


class TextError(OratorError):
    """The text to speak is empty or unusable."""


class UnsupportedError(OratorError):
    """A feature this model or this installation does not support (e.g. instruct on 0.6B CustomVoice)."""


class SamplingError(OratorError, ValueError):
    """Sampling settings out of their range (a ``ValueError`` too, as bad arguments are)."""

    def __init__(self, field: str, message: str):
        super().__init__(f"{field} {message}")
        self.field = field


class PronunciationError(OratorError, ValueError):
    """A pronunciation rule, a lexicon or a lexicon file that cannot be used. ``index`` is the rule's place in its
    lexicon (0-based) and ``field`` the rule's field at fault ("pattern", "replacement", "voice"), where known."""

    def __init__(self, message: str, field: str | None = None, index: int | None = None):
        super().__init__(message)
        self.field, self.index = field, index
