"""One pronunciation rule: what to find in a sentence and what to say instead, checked when it is made.

A rule is a whole word (``pattern`` found as written, not inside a longer word) or a regular expression (the
``regex`` package's syntax; its replacement may use groups: ``\\1``, ``\\g<name>``), case-sensitive or not, for
every voice or for one voice (``voice``: a name, compared as the voice library compares names). User patterns
are hostile input: a pattern whose compiled form would be huge is refused here (``MAX_REPEAT_PRODUCT``), and
every search runs under a timeout (``Rule.substitute``), so no pattern can hang or exhaust a reader.
"""

from __future__ import annotations

import unicodedata
from dataclasses import dataclass, field

import regex

from engine.core.voice_names import MAX_NAME_CHARS, name_key
from engine.errors import PronunciationError

MAX_PATTERN_CHARS = 200
MAX_REPLACEMENT_CHARS = 200
# The regex package expands counted repeats when it compiles ("(?:a{1000}){1000}" is a million-item program, and
# three nested {60000} exhaust the memory), so the bounds of a pattern's counted repeats, multiplied, are capped.
MAX_REPEAT_BOUND = 1000
MAX_REPEAT_PRODUCT = 10_000
# (counted wherever they appear, escaped braces too: erring on the side of refusing)
_COUNTED_REPEAT = regex.compile(r"\{\s*(\d*)\s*(?:,\s*(\d*)\s*)?\}")
# Control characters (tab and newline too) and lone surrogates have no place in a rule: a pattern says \t or \n
_BAD_CATEGORIES = {"Cc": "a control character", "Cs": "a lone surrogate"}


@dataclass(frozen=True, slots=True)
class Rule:
    pattern: str
    replacement: str
    regex: bool = False  # False: ``pattern`` is a whole word (or words) found as written
    case_sensitive: bool = False
    voice: str | None = None  # None: every voice; else only the voice of this name
    enabled: bool = True
    _compiled: regex.Pattern = field(init=False, repr=False, compare=False)
    _voice_key: str | None = field(init=False, repr=False, compare=False)

    def __post_init__(self):
        """``PronunciationError`` (with its ``field``) unless the rule can be used as it is."""
        for name, value in (("regex", self.regex), ("case_sensitive", self.case_sensitive),
                            ("enabled", self.enabled)):
            if not isinstance(value, bool):
                raise PronunciationError(f"“{name}” must be true or false, not {value!r}", name)
        object.__setattr__(self, "pattern", _checked_text(self.pattern, "pattern", MAX_PATTERN_CHARS))
        object.__setattr__(self, "replacement", _checked_text(self.replacement, "replacement",
                                                              MAX_REPLACEMENT_CHARS, allow_empty=True))
        object.__setattr__(self, "voice", _checked_voice(self.voice))
        object.__setattr__(self, "_voice_key", None if self.voice is None else name_key(self.voice))
        object.__setattr__(self, "_compiled", _compile(self.pattern, self.regex, self.case_sensitive))
        if self.regex:
            _check_template(self._compiled, self.pattern, self.replacement)

    def applies_to(self, voice_key: str | None) -> bool:
        """Whether the rule is on for the voice whose ``name_key`` is ``voice_key`` (None: a voice without a name)."""
        return self.enabled and (self._voice_key is None or self._voice_key == voice_key)

    def substitute(self, text: str, timeout: float | None) -> str:
        """``text`` with every match replaced; ``TimeoutError`` when the search takes longer than ``timeout`` s
        (None: no limit, for a whole word, whose search is linear in the text)."""
        if self.regex:
            return self._compiled.sub(self.replacement, text, timeout=timeout)
        replacement = self.replacement  # a whole word's replacement is said as written: no group references
        return self._compiled.sub(lambda _: replacement, text, timeout=timeout)

    def to_json(self) -> dict:
        return {"pattern": self.pattern, "replacement": self.replacement, "regex": self.regex,
                "case_sensitive": self.case_sensitive, "voice": self.voice, "enabled": self.enabled}


def _checked_text(value, what: str, limit: int, allow_empty: bool = False) -> str:
    if not isinstance(value, str):
        raise PronunciationError(f"the {what} must be text, not {type(value).__name__}", what)
    value = unicodedata.normalize("NFC", value)
    if not allow_empty and not value.strip():
        raise PronunciationError(f"the {what} is empty", what)
    if len(value) > limit:
        raise PronunciationError(f"the {what} has {len(value)} characters; at most {limit} are allowed", what)
    for char in value:
        category = unicodedata.category(char)
        if category in _BAD_CATEGORIES:
            raise PronunciationError(f"the {what} contains {_BAD_CATEGORIES[category]} (U+{ord(char):04X})", what)
    return value


def _checked_voice(voice) -> str | None:
    if voice is None:
        return None
    if not isinstance(voice, str):
        raise PronunciationError(f"the voice must be a name or none, not {type(voice).__name__}", "voice")
    voice = _checked_text(voice, "voice", MAX_NAME_CHARS, allow_empty=True).strip()
    return voice or None  # a blank voice is every voice


def _compile(pattern: str, is_regex: bool, case_sensitive: bool) -> regex.Pattern:
    flags = 0 if case_sensitive else regex.IGNORECASE
    if not is_regex:
        # A word is whole when no letter, digit or mark touches its ends: "e.g." matches in "(e.g., this)" and
        # "cat" does not match in "concatenate" or "cat\u0301" (the regex package's \w is Unicode's).
        head = r"(?<!\w)" if regex.match(r"\w", pattern[0]) else ""
        tail = r"(?!\w)" if regex.match(r"\w", pattern[-1]) else ""
        return regex.compile(head + regex.escape(pattern) + tail, flags)
    product = 1
    for low, high in _COUNTED_REPEAT.findall(pattern):
        bound = max(int(low or 0), int(high or 0))
        if bound > MAX_REPEAT_BOUND:
            raise PronunciationError(f"the pattern repeats something {bound} times; at most {MAX_REPEAT_BOUND} "
                                     "are allowed", "pattern")
        product *= max(bound, 1)
        if product > MAX_REPEAT_PRODUCT:
            raise PronunciationError(f"the pattern's counted repeats multiply to more than {MAX_REPEAT_PRODUCT}: "
                                     "make them smaller", "pattern")
    try:
        compiled = regex.compile(pattern, flags)
    except (regex.error, OverflowError, RecursionError, ValueError) as e:
        raise PronunciationError(f"the pattern is not a valid regular expression: {e}", "pattern") from None
    if compiled.fullmatch("", timeout=0.1) is not None:
        raise PronunciationError("the pattern matches empty text, so it would match between every two "
                                 "characters", "pattern")
    return compiled


def _check_template(compiled: regex.Pattern, pattern: str, replacement: str) -> None:
    """Refuse a replacement that names a group the pattern lacks or has a bad escape: expanded once against a
    match of the pattern with an empty alternative added (same groups, always matches; the newline ends a verbose
    pattern's trailing comment, and is a literal character otherwise)."""
    try:
        match = regex.compile(pattern + "\n|", compiled.flags).match("", timeout=0.1)
        if match is not None:
            match.expand(replacement)
    except (regex.error, IndexError) as e:
        raise PronunciationError(f"the replacement cannot be used with this pattern: {e}", "replacement") from None
    except TimeoutError:  # never for an empty text in practice; the search at use is guarded as well
        pass
