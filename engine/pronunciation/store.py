"""The lexicon file: a JSON document in the data folder (``pronunciation.json``), shared by the studio, the
command line and the server.

``{"format": "orator-pronunciation", "version": 1, "rules": [{"pattern", "replacement", "regex",
"case_sensitive", "voice", "enabled"}, ...]}``; written atomically (``engine.atomic_files``), so a crash leaves the old
file or the new one. Reading is strict: a file that is not such a document, is newer than this program, or holds
an invalid rule raises ``LexiconFileError`` naming the file and the rule, and the caller decides what to do (the
studio says so and goes on with the shipped rules; the command line and the server stop).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from engine import json_limits
from engine.atomic_files import atomic_write_text
from engine.bounded_files import FileReadError, read_text
from engine.core.pronunciation.defaults import default_lexicon
from engine.core.pronunciation.lexicon import Lexicon
from engine.errors import PronunciationError
from engine.voices.library import data_dir

FILE_NAME = "pronunciation.json"
FORMAT = "orator-pronunciation"
VERSION = 1
MAX_FILE_BYTES = 2 << 20  # a thousand rules of the longest kind fit in well under a megabyte
_RULE_KEYS = frozenset({"pattern", "replacement", "regex", "case_sensitive", "voice", "enabled"})


class LexiconFileError(PronunciationError):
    """A lexicon file that cannot be read: missing, unreadable, not a lexicon, too new, or with an invalid rule."""


def default_lexicon_path() -> Path:
    """The studio's lexicon file, in the data folder (``ORATOR_DATA_DIR`` moves it too)."""
    return data_dir() / FILE_NAME


def lexicon_to_text(lexicon: Lexicon) -> str:
    document = {"format": FORMAT, "version": VERSION, "rules": lexicon.to_json()}
    return json.dumps(document, ensure_ascii=False, indent=2) + "\n"


def lexicon_from_text(text: str, source: str = "the lexicon") -> Lexicon:
    """The lexicon a file's text holds, or ``LexiconFileError`` saying what is wrong with ``source``."""
    try:
        document = json_limits.loads(text, max_bytes=MAX_FILE_BYTES)
    except ValueError as e:
        raise LexiconFileError(f"{source} is not valid JSON: {e}") from None
    if not isinstance(document, dict) or document.get("format") != FORMAT:
        raise LexiconFileError(f"{source} is not an Orator pronunciation file")
    version = document.get("version")
    if not isinstance(version, int) or isinstance(version, bool) or version < 1:
        raise LexiconFileError(f"{source} has no valid version")
    if version > VERSION:
        raise LexiconFileError(f"{source} was written by a newer Orator (version {version}; this one reads "
                               f"{VERSION})")
    rules = document.get("rules")
    if not isinstance(rules, list):
        raise LexiconFileError(f"{source} has no list of rules")
    for index, rule in enumerate(rules):
        if not isinstance(rule, dict):
            raise LexiconFileError(f"rule {index + 1} of {source} is not an object", index=index)
        unknown = sorted(set(rule) - _RULE_KEYS)
        if unknown:
            raise LexiconFileError(f"rule {index + 1} of {source} has unknown fields: {', '.join(unknown)}",
                                   index=index)
        if not {"pattern", "replacement"} <= set(rule):
            raise LexiconFileError(f"rule {index + 1} of {source} needs a pattern and a replacement", index=index)
    try:
        return Lexicon.from_specs(rules)
    except PronunciationError as e:
        raise LexiconFileError(f"{source}: {e}", e.field, e.index) from None


def load_lexicon(path: str | os.PathLike) -> Lexicon:
    path = Path(path)
    try:
        text = read_text(path, MAX_FILE_BYTES, "the pronunciation file")
    except FileReadError as e:
        raise LexiconFileError(str(e)) from None
    return lexicon_from_text(text, f"the pronunciation file {path}")


def save_lexicon(lexicon: Lexicon, path: str | os.PathLike) -> None:
    atomic_write_text(path, lexicon_to_text(lexicon))


def lexicon_or_default(path: str | os.PathLike | None = None) -> Lexicon:
    """What the command line and the server read with: the file at ``path`` (which must be readable), else the
    studio's file where there is one, else the shipped rules. ``LexiconFileError`` when the file chosen cannot be
    read."""
    if path is not None:
        return load_lexicon(path)
    studio = default_lexicon_path()
    return load_lexicon(studio) if studio.exists() else default_lexicon()
