"""A lexicon: ordered pronunciation rules, and what a sentence becomes when they are applied to it.

Rules apply in order, each to the text the rules before it left, so a later rule can refine an earlier one. They
match the sentence in Unicode's composed form (NFC), as their patterns are kept, so "café" typed either way is found
in text written either way; a sentence no rule changes is said exactly as written. What a lexicon does to a sentence
is bounded whatever its rules: all its regular expressions' searches together get ``APPLY_BUDGET_S`` (a rule still
searching then is skipped for that sentence; a whole word is a literal search, linear in the sentence, so it is
never timed and a busy machine cannot change what it says), a rule that would make the sentence longer than
``max_spoken_chars`` is skipped for it, and a sentence the rules would leave with nothing to say is said as written.
``apply`` never raises on any text for a lexicon that was made; ``explain`` also says what it skipped.

``pronounce`` is how the engine uses a lexicon: on the segments of a plan, each keeping the span it has in the
original text (what highlighting, jumps and subtitles use) and gaining the text that is spoken.
"""

from __future__ import annotations

import dataclasses
import time
import unicodedata
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import regex

from engine.core.pronunciation.rule import Rule
from engine.core.text.segments import Segment
from engine.core.voice_names import name_key
from engine.errors import PronunciationError

MAX_RULES = 1000
APPLY_BUDGET_S = 0.25  # for all of one sentence's regex searches; a sentence takes well under a millisecond a rule
RULE_TIMEOUT_S = 0.05  # for one regex rule's search of one sentence


def max_spoken_chars(written_chars: int) -> int:
    """The longest a sentence of ``written_chars`` may become: three times as long, and 200 more characters."""
    return 3 * written_chars + 200


@dataclass(frozen=True, slots=True)
class Explained:
    spoken: str
    skipped: tuple[tuple[int, str], ...] = ()  # (rule index, why it was skipped for this text)


@dataclass(frozen=True, slots=True)
class Lexicon:
    rules: tuple[Rule, ...] = ()

    def __post_init__(self):
        rules = tuple(self.rules) if isinstance(self.rules, Iterable) and not isinstance(self.rules, str) else None
        if rules is None:
            raise PronunciationError(f"a lexicon's rules must be a list, not {type(self.rules).__name__}")
        if len(rules) > MAX_RULES:
            raise PronunciationError(f"a lexicon has at most {MAX_RULES} rules, not {len(rules)}")
        for index, rule in enumerate(rules):
            if not isinstance(rule, Rule):
                raise PronunciationError(f"rule {index + 1} is a {type(rule).__name__}, not a Rule", index=index)
        object.__setattr__(self, "rules", rules)

    @classmethod
    def from_specs(cls, specs: Sequence[dict]) -> Lexicon:
        """A lexicon from rules given as dicts of ``Rule``'s fields; an invalid rule's ``PronunciationError``
        says which rule it is (``index``, and "rule N" in its message)."""
        rules = []
        for index, spec in enumerate(specs):
            try:
                rules.append(Rule(**spec))
            except PronunciationError as e:
                raise PronunciationError(f"rule {index + 1}: {e}", e.field, index) from None
        return cls(tuple(rules))

    def explain(self, text: str, voice_name: str | None = None) -> Explained:
        """What ``text`` (a sentence) is spoken as in the voice named ``voice_name``, and the rules skipped."""
        key = None if voice_name is None else name_key(voice_name)
        limit = max_spoken_chars(len(text))
        deadline = time.monotonic() + APPLY_BUDGET_S
        composed = unicodedata.normalize("NFC", text)
        spoken, skipped = composed, []
        for index, rule in enumerate(self.rules):
            if not rule.applies_to(key):
                continue
            timeout = None
            if rule.regex:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    skipped.append((index, "there was no time left for it"))
                    continue
                timeout = min(remaining, RULE_TIMEOUT_S)
            try:
                changed = rule.substitute(spoken, timeout)
            except TimeoutError:
                skipped.append((index, "its search took too long"))
                continue
            except (regex.error, IndexError, RecursionError) as e:  # what a rule's check could not foresee
                skipped.append((index, f"it cannot be used here ({e})"))
                continue
            if len(changed) > limit:
                skipped.append((index, "it made the sentence too long"))
                continue
            spoken = changed
        if not spoken.strip() and text.strip():
            return Explained(text, (*skipped, (-1, "the rules left nothing to say, so it is said as written")))
        return Explained(text if spoken == composed else spoken, tuple(skipped))

    def apply(self, text: str, voice_name: str | None = None) -> str:
        return self.explain(text, voice_name).spoken

    def to_json(self) -> list[dict]:
        return [rule.to_json() for rule in self.rules]


def pronounce(segments: list[Segment], lexicon: Lexicon | None, voice_name: str | None) -> list[Segment]:
    """``segments`` with what each is spoken as (``Segment.spoken``) by ``lexicon`` in the voice ``voice_name``,
    applied to what the segment says already (``Segment.speech``: the reading policy's form,
    ``engine.core.text.reading_policy``, else its text); spans and written text unchanged. Without a lexicon, or with no
    rule, the segments are returned as given."""
    if lexicon is None:
        return segments
    if not isinstance(lexicon, Lexicon):
        raise TypeError(f"pronunciation must be an engine.pronunciation.Lexicon, not {type(lexicon).__name__}")
    if not lexicon.rules:
        return segments
    out = []
    for seg in segments:
        spoken = lexicon.apply(seg.speech, voice_name)
        out.append(seg if spoken == seg.speech else dataclasses.replace(seg, spoken=spoken))
    return out
