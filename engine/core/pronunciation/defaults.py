"""The rules a new reader starts with: common abbreviations the model would otherwise spell out or stumble on.

They are ordinary rules (whole words, any case, every voice): the studio lists them for the user to edit, disable
or delete, and a lexicon file, once saved, holds exactly the rules it lists.
"""

from __future__ import annotations

from engine.core.pronunciation.lexicon import Lexicon
from engine.core.pronunciation.rule import Rule

DEFAULT_REPLACEMENTS = (
    ("e.g.", "for example"),
    ("i.e.", "that is"),
    ("etc.", "et cetera"),
    ("vs.", "versus"),
    ("cf.", "compare"),
    ("et al.", "and others"),
    ("approx.", "approximately"),
    ("viz.", "namely"),
)


def default_lexicon() -> Lexicon:
    return Lexicon(tuple(Rule(pattern, replacement) for pattern, replacement in DEFAULT_REPLACEMENTS))
