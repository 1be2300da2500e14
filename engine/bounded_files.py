"""Reading a small file whole, with a bound: the one reader for the files a user names that Orator reads into
memory at once (an API key file, pronunciation rules, subtitles, a voiceover project's manifest, JSON documents).

At most ``max_bytes + 1`` bytes are read, so a file that is too large (a device, a log grown to gigabytes, a file
named by mistake) costs no more than its bound before it is refused. ``FileReadError`` carries a sentence a user
understands, naming what the file was meant to be; each caller re-raises it as its own error type.
"""

from __future__ import annotations

import os
from pathlib import Path


class FileReadError(ValueError):
    """A file that cannot be read, is larger than its bound, or (for text) is not UTF-8; the text says which."""


def _size_words(max_bytes: int) -> str:
    return f"{max_bytes >> 20} MiB" if max_bytes >= 1 << 20 else f"{max_bytes} bytes"


def read_bytes(path: str | os.PathLike, max_bytes: int, what: str) -> bytes:
    """The bytes of ``path``, refused with ``FileReadError`` when it cannot be read or is larger than ``max_bytes``;
    ``what`` names the file in the message ("the API key file")."""
    path = Path(path)
    try:
        with open(path, "rb") as f:
            data = f.read(max_bytes + 1)
    except OSError as e:
        raise FileReadError(f"cannot read {what} {path}: {e.strerror or e}") from None
    if len(data) > max_bytes:
        raise FileReadError(f"{what} {path} is larger than {_size_words(max_bytes)}")
    return data


def read_text(path: str | os.PathLike, max_bytes: int, what: str) -> str:
    """``read_bytes`` decoded as UTF-8 (a byte-order mark dropped); ``FileReadError`` for any other encoding."""
    data = read_bytes(path, max_bytes, what)
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise FileReadError(f"{what} {path} is not UTF-8 text") from None
