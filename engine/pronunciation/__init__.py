"""Pronunciation rules applied to what is spoken, never to the text a reader sees
(``engine.core.pronunciation.lexicon``).

``Rule`` (a whole word or a regular expression, case, voice), ``Lexicon`` (ordered rules; ``apply``), the shipped
rules (``default_lexicon``) and the lexicon file (``load_lexicon`` / ``save_lexicon``, ``default_lexicon_path``).
"""

from engine.core.pronunciation.defaults import default_lexicon
from engine.core.pronunciation.lexicon import Explained, Lexicon, max_spoken_chars, pronounce
from engine.core.pronunciation.rule import Rule
from engine.pronunciation.store import (
    LexiconFileError,
    default_lexicon_path,
    lexicon_from_text,
    lexicon_or_default,
    lexicon_to_text,
    load_lexicon,
    save_lexicon,
)

__all__ = ["Explained", "Lexicon", "LexiconFileError", "Rule", "default_lexicon", "default_lexicon_path",
           "lexicon_from_text", "lexicon_or_default", "lexicon_to_text", "load_lexicon", "max_spoken_chars",
           "pronounce", "save_lexicon"]
