"""Subtitle files read for a voiceover: SubRip (.srt) and WebVTT (.vtt) into ``SubtitleCue``s, robustly and within
limits.

What real files hold is taken: a byte-order mark, CRLF or CR line ends, UTF-16 with its mark, Windows-1252 where
the bytes are not UTF-8, SubRip without cue numbers or with a period before the milliseconds, WebVTT's hourless
``mm:ss.ttt``, cue settings after the timing, NOTE/STYLE/REGION blocks, styling tags (``<i>``, ``<font>``,
``<c.x>``, ``{\\an8}``) and entities. A cue's voice comes from a voice mark at its start (``[voice: NAME]``,
``engine.core.text.voice_marks``) or WebVTT's ``<v Speaker>``; neither is spoken. A timing line that cannot be read
loses that one cue, with a warning naming its line (``Subtitles.warnings``).

What cannot be a voiceover is refused with ``SubtitleError`` before anything is spoken or written: a file over
``MAX_FILE_BYTES``, binary data, no cues, more than ``MAX_CUES`` cues, ``MAX_CUE_CHARS`` characters in one or
``MAX_TOTAL_CHARS`` in all, a time past ``MAX_TIME_S`` or negative, a cue that ends before it starts, or cues whose
starts go backwards (subtitles out of order: their voiceover would be too). Overlapping cues are fine: the
timeline pushes the later.
"""

from __future__ import annotations

import html
import re
from dataclasses import dataclass, field
from pathlib import Path

from engine.bounded_files import FileReadError, read_bytes
from engine.core.text.voice_marks import parse_mark
from engine.errors import TextError

MAX_FILE_BYTES = 4 << 20  # a feature film's subtitles are about 100 KB
MAX_CUES = 10_000
MAX_CUE_CHARS = 2_000
# all the cues' text together: speech runs about 15 characters a second, so this is about two hours and a quarter
# of speech (a two-hour film's subtitles hold 60,000 to 100,000); the lines are held in memory until the track is
# made, and more text than the time limit can place only runs past it
MAX_TOTAL_CHARS = 120_000
# a feature film; the track is held in memory as float32, about 0.7 GB for two hours at 24 kHz (twice at 48 kHz),
# and loudness makes one copy
MAX_TIME_S = 2 * 3600.0
_MAX_PAYLOAD_CHARS = 8 * MAX_CUE_CHARS  # a cue's text with its tags
_MAX_MARK_CHARS = 256  # a voice mark is looked for this far into a cue: the mark's pattern backtracks on more
MAX_WARNINGS = 20  # the rest are counted, not listed
_ARROW = re.compile(r"-->")
_TIME = r"(-)?\s*(?:(\d{1,3}):)?(\d{1,2}):(\d{1,2})[,.](\d{3})"
_TIMING = re.compile(rf"^\s*{_TIME}\s*-->\s*{_TIME}(?:\s.*)?$")
_VOICE_TAG = re.compile(r"^\s*<v(?:\.[^\s>]*)?\s+([^>]*)>", re.IGNORECASE)
_TAG = re.compile(r"<[^<>\n]{0,200}>|\{\\[^{}\n]{0,200}\}")  # HTML-like and ASS override tags


class SubtitleError(TextError):
    """A subtitle file that cannot be voiced; the message says why and where."""


@dataclass(frozen=True)
class SubtitleCue:
    number: int  # 1-based, in file order among the timed blocks (a SubRip file's own numbering, where it is right)
    start_s: float
    end_s: float
    text: str  # what is spoken: tags, entities and the voice mark gone, lines joined
    voice: str | None = None  # from a voice mark or <v Speaker>; None: the default voice

    @property
    def duration_s(self) -> float:
        return self.end_s - self.start_s


@dataclass
class Subtitles:
    kind: str  # "srt" or "vtt"
    cues: list[SubtitleCue]
    warnings: list[str] = field(default_factory=list)
    text: str = ""  # the file's text, decoded, with its line ends made \n (what a project keeps)


def read_subtitles(path: str | Path) -> Subtitles:
    """The cues of an .srt or .vtt file (see the module doc); ``SubtitleError`` for one that cannot be voiced."""
    path = Path(path)
    kind = path.suffix.lower().lstrip(".")
    if kind not in ("srt", "vtt"):
        raise SubtitleError(f"{path.name}: a voiceover is made from an .srt or .vtt subtitle file")
    try:
        data = read_bytes(path, MAX_FILE_BYTES, "the subtitle file")
    except FileReadError as e:
        raise SubtitleError(str(e)) from None
    return parse_subtitles(data, kind, path.name)


def parse_subtitles(data: bytes | str, kind: str, name: str = "the subtitles") -> Subtitles:
    if len(data) > MAX_FILE_BYTES:
        raise SubtitleError(f"{name} is larger than {MAX_FILE_BYTES >> 20} MiB: not a subtitle file")
    text = data if isinstance(data, str) else _decode(data, name)
    text = text.lstrip("\ufeff").replace("\r\n", "\n").replace("\r", "\n")
    if kind == "vtt":
        first = text.lstrip(" \t\n").split("\n", 1)[0]
        if not re.match(r"WEBVTT(?:[ \t].*)?$", first):
            raise SubtitleError(f"{name}: a WebVTT file starts with the line WEBVTT")
    subtitles = Subtitles(kind, [], text=text)
    skipped = timed = total = 0
    for line_number, block in _blocks(text):
        lines = block.split("\n")
        timing_at = next((i for i, line in enumerate(lines[:3]) if _ARROW.search(line)), None)
        if timing_at is None:
            continue  # WEBVTT header, NOTE, STYLE, REGION, or text without a timing: nothing to time
        timed += 1
        if timed > MAX_CUES:
            raise SubtitleError(f"{name} has more than {MAX_CUES} cues")
        timing = _TIMING.match(lines[timing_at])
        if timing is None:
            skipped += 1
            if len(subtitles.warnings) < MAX_WARNINGS:
                subtitles.warnings.append(f"cue {timed} (line {line_number + timing_at}): cannot read the timing "
                                          f"{lines[timing_at].strip()[:80]!r}; that cue is left out")
            continue
        start, end = _seconds(timing.groups()[:5]), _seconds(timing.groups()[5:])
        number = timed
        where = f"{name}, line {line_number + timing_at} (cue {number})"
        _check_times(start, end, where, subtitles.cues[-1] if subtitles.cues else None)
        payload = "\n".join(lines[timing_at + 1:])
        if len(payload) > _MAX_PAYLOAD_CHARS:  # tags included: bounds the work of cleaning it
            raise SubtitleError(f"{where} has {len(payload)} characters; a cue takes at most {MAX_CUE_CHARS}")
        spoken, voice = clean_text(payload)
        if len(spoken) > MAX_CUE_CHARS:
            raise SubtitleError(f"{where} has {len(spoken)} characters; a cue takes at most {MAX_CUE_CHARS}")
        if spoken:
            total += len(spoken)
            if total > MAX_TOTAL_CHARS:
                raise SubtitleError(f"{where}: the cues up to here hold more than {MAX_TOTAL_CHARS:,} characters, "
                                    f"more than a voiceover of {MAX_TIME_S / 3600:g} hours can speak")
            subtitles.cues.append(SubtitleCue(number, start, end, spoken, voice))
    if skipped > MAX_WARNINGS:
        subtitles.warnings.append(f"{skipped - MAX_WARNINGS} more cues with unreadable timings were left out")
    if not subtitles.cues:
        raise SubtitleError(f"{name} holds no cue with text and a readable timing ('00:00:01,000 --> "
                            "00:00:02,500' then its text)")
    if skipped > len(subtitles.cues):
        raise SubtitleError(f"{name}: {skipped} of {skipped + len(subtitles.cues)} timings cannot be read; "
                            "is it a subtitle file?")
    return subtitles


def clean_text(payload: str) -> tuple[str, str | None]:
    """(what a cue's text says, its voice): the voice mark or ``<v Speaker>`` taken off, tags and entities gone,
    lines joined with spaces."""
    voice = None
    payload = payload.lstrip()
    name, length = parse_mark(payload[:_MAX_MARK_CHARS])
    if name is not None:
        payload = payload[length:]
        voice = name
    tag = _VOICE_TAG.match(payload)
    if tag is not None:
        voice = voice or " ".join(tag.group(1).split()) or None
    text = html.unescape(_TAG.sub("", payload))
    text = "".join(" " if ord(c) < 32 or 0x7F <= ord(c) < 0xA0 else c for c in text)
    return " ".join(text.split()), voice


# ---- internals ------------------------------------------------------------------------------------------------
def _decode(data: bytes, name: str) -> str:
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        try:
            return data.decode("utf-16")
        except UnicodeDecodeError:
            raise SubtitleError(f"{name} is marked UTF-16 but is not") from None
    if b"\x00" in data:
        raise SubtitleError(f"{name} is binary data, not a subtitle file")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError:
        text = data.decode("cp1252", errors="replace")  # older subtitle files are often Windows-1252
    controls = sum(1 for c in text if ord(c) < 32 and c not in "\t\n\r")
    if controls > len(text) // 100:
        raise SubtitleError(f"{name} is binary data, not a subtitle file")
    return text


def _blocks(text: str):
    """(1-based line number of its first line, text) of each block of non-blank lines."""
    first, lines = 0, []
    for number, line in enumerate(text.split("\n"), 1):
        if line.strip():
            if not lines:
                first = number
            lines.append(line)
        elif lines:
            yield first, "\n".join(lines)
            lines = []
    if lines:
        yield first, "\n".join(lines)


def _seconds(groups) -> float:
    negative, hours, minutes, seconds, millis = groups
    if int(minutes) >= 60 or int(seconds) >= 60:
        return float("nan")
    value = int(hours or 0) * 3600 + int(minutes) * 60 + int(seconds) + int(millis) / 1000
    return -value if negative else value


def _check_times(start: float, end: float, where: str, previous: SubtitleCue | None) -> None:
    for value in (start, end):
        if value != value:  # NaN: minutes or seconds of 60 or more
            raise SubtitleError(f"{where}: minutes and seconds run to 59")
        if value < 0:
            raise SubtitleError(f"{where}: a time is negative")
        if value > MAX_TIME_S:
            raise SubtitleError(f"{where}: {value / 3600:.1f} hours is past the {MAX_TIME_S / 3600:g}-hour limit "
                                "of a voiceover")
    if end < start:
        raise SubtitleError(f"{where} ends before it starts")
    if previous is not None and start < previous.start_s:
        raise SubtitleError(f"{where} starts before cue {previous.number}: the cues are out of order")
