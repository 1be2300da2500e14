"""The one JSON reader for every JSON document Orator reads: settings, pronunciation rules, voice files' headers and
``meta``, model configurations, the export queue, request bodies.

Python's ``json`` recurses once per level of nesting, so a document nested a hundred thousand levels deep (200 KB of
``[``) raises ``RecursionError``, which no ``except ValueError`` catches: a crash at start, a traceback, a 500. Here
a document is refused before it is parsed when it is larger than ``max_bytes`` or nested deeper than ``max_depth``
(``MAX_DEPTH`` by default: no document Orator writes nests more than a few levels), with ``JSONLimitError``, a
``json.JSONDecodeError``, so every caller's handling of a malformed document handles it too. The depth is measured
without recursion, outside strings, in time linear in the document.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

MAX_DEPTH = 64
MAX_BYTES = 16 << 20  # the default bound of one document
_STRING = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)  # a JSON string, escapes included
_NOT_BRACKET = re.compile(r"[^\[\]{}]+")
_CHUNK = 1 << 20  # brackets counted at a time


class JSONLimitError(json.JSONDecodeError):
    """A JSON document larger or deeper than its reader accepts; its text is the reason alone."""

    def __init__(self, msg: str):
        ValueError.__init__(self, msg)
        self.msg, self.doc, self.pos, self.lineno, self.colno = msg, "", 0, 1, 1

    def __reduce__(self):
        return self.__class__, (self.msg,)


def loads(document: str | bytes | bytearray, *, max_bytes: int = MAX_BYTES, max_depth: int = MAX_DEPTH, **kwargs):
    """``json.loads(document, **kwargs)`` within ``max_bytes`` (characters of a ``str``) and ``max_depth`` levels of
    nesting; ``JSONLimitError`` beyond them, ``json.JSONDecodeError`` (or ``UnicodeDecodeError`` for bytes) when
    it is not JSON."""
    if isinstance(document, (bytes, bytearray)):
        if len(document) > max_bytes:
            raise JSONLimitError(f"the document has {len(document)} bytes, more than {max_bytes}")
        document = bytes(document).decode(json.detect_encoding(bytes(document)), "surrogatepass")
    elif len(document) > max_bytes:
        raise JSONLimitError(f"the document has {len(document)} characters, more than {max_bytes}")
    depth = nesting_depth(document)
    if depth > max_depth:
        raise JSONLimitError(f"the document is nested {depth} levels deep; at most {max_depth} are read")
    try:
        return json.loads(document, **kwargs)
    except RecursionError:  # within the depth limit, yet the caller's own stack was deep already
        raise JSONLimitError("the document is nested too deeply to read here") from None


def load_file(path: str | os.PathLike, *, max_bytes: int = MAX_BYTES, max_depth: int = MAX_DEPTH, **kwargs):
    """``loads`` of a UTF-8 file, of which at most ``max_bytes + 1`` bytes are read; ``OSError`` when it cannot be
    read."""
    with open(Path(path), "rb") as f:
        data = f.read(max_bytes + 1)
    return loads(data, max_bytes=max_bytes, max_depth=max_depth, **kwargs)


def nesting_depth(document: str) -> int:
    """The deepest nesting of ``[`` and ``{`` in ``document`` outside its strings (for valid JSON, its depth)."""
    import numpy as np  # here: the command line's argument parsers read configs without loading numpy

    brackets = _NOT_BRACKET.sub("", _STRING.sub("", document)).encode("ascii")
    deepest = level = 0
    for start in range(0, len(brackets), _CHUNK):
        chunk = np.frombuffer(brackets, dtype=np.uint8, count=min(_CHUNK, len(brackets) - start), offset=start)
        steps = np.where((chunk == ord("[")) | (chunk == ord("{")), 1, -1).astype(np.int32)
        levels = level + np.cumsum(steps, dtype=np.int64)
        deepest, level = max(deepest, int(levels.max())), int(levels[-1])
    return deepest
