"""What a voice's library name may be: the file name is the voice's library name, so names follow rules that keep
every name a valid, distinct file name on every system.

``checked_name`` turns a wanted name into its stored form (Unicode NFC, surrounding whitespace stripped) or raises
``InvalidName``. Names are at most ``MAX_NAME_CHARS`` characters and ``MAX_NAME_BYTES`` bytes of UTF-8 (file names
hold 255 bytes; 80 CJK characters are 240); they may not contain path separators, ``: * ? " < > |``, control
characters (DEL and C1 included), invisible format characters (bidi overrides, zero-width joiners...: category
Cf), line or paragraph separators, a leading dot (hidden and temporary files) or a trailing dot, nor be a Windows
device name (``CON``, ``COM1``...). Two names that differ only in case, Unicode normal form or runs of spaces are
the same voice (``engine.core.voice_names.name_key``): the library refuses the second."""

import unicodedata

from engine.core.voice_names import MAX_NAME_CHARS
from engine.voices.library_errors import InvalidName

MAX_NAME_BYTES = 200  # of UTF-8; with the suffix and margin within the 255 bytes a file name may have

_FORBIDDEN_CHARS = frozenset('\\/:*?"<>|')
_FORBIDDEN_CATEGORIES = {"Cc": "a control character", "Cf": "an invisible formatting character",
                         "Cs": "a lone surrogate", "Zl": "a line separator", "Zp": "a paragraph separator"}
_WINDOWS_DEVICES = frozenset({"CON", "PRN", "AUX", "NUL", *(f"COM{i}" for i in range(1, 10)),
                              *(f"LPT{i}" for i in range(1, 10))})


def checked_name(name) -> str:
    """The stored form of a wanted voice name (NFC, stripped), or ``InvalidName`` saying what is wrong."""
    if name is not None and not isinstance(name, str):
        raise InvalidName(f"A voice name must be text, not {type(name).__name__}.")
    if not name or not (name := unicodedata.normalize("NFC", name).strip()):
        raise InvalidName("A voice needs a name.")
    if len(name) > MAX_NAME_CHARS:  # first: the messages below quote the name
        raise InvalidName(f"A voice name can have at most {MAX_NAME_CHARS} characters.")
    for char in name:
        category = unicodedata.category(char)
        if category in _FORBIDDEN_CATEGORIES:
            raise InvalidName(f"A voice name cannot contain {_FORBIDDEN_CATEGORIES[category]} "
                              f"(U+{ord(char):04X}).")
        if char in _FORBIDDEN_CHARS:
            raise InvalidName(f"A voice name cannot contain “{char}” (avoid / \\ : * ? \" < > |).")
    if name.startswith(".") or name.endswith("."):
        raise InvalidName("A voice name cannot start or end with a dot.")
    if name.split(".")[0].rstrip().upper() in _WINDOWS_DEVICES:
        raise InvalidName(f"“{name}” is reserved by Windows and cannot be a voice name.")
    if len(name.encode("utf-8")) > MAX_NAME_BYTES:
        raise InvalidName(f"This voice name is too long for a file name: at most {MAX_NAME_BYTES} bytes of UTF-8 "
                          f"(about {MAX_NAME_BYTES // 3} Chinese or {MAX_NAME_BYTES // 4} emoji characters).")
    return name
