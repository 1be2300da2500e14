"""Per-paragraph voice marks: a paragraph that starts with ``[voice: NAME]`` is spoken by that voice.

``split_passages`` cuts a text into passages that each have one voice: a marked paragraph is a
passage of its own (the mark itself is not spoken); consecutive unmarked paragraphs form one
passage with ``voice=None`` (the default voice). Offsets are character positions in the text.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

VOICE_MARK = re.compile(r"[ \t]*\[voice:\s*([^\]\n]*?)\s*\][ \t]*", re.IGNORECASE)


@dataclass(frozen=True)
class Passage:
    start: int  # first spoken character (after any mark)
    end: int  # one past the last character
    voice: str | None  # library voice name from the mark, None for the default voice


def parse_mark(line: str) -> tuple[str | None, int]:
    """Return (voice name or None, length of the mark) for a line that may start with a mark."""
    match = VOICE_MARK.match(line)
    if not match or not match.group(1):
        return None, 0
    return match.group(1), match.end()


def split_passages(text: str, start: int = 0, end: int | None = None) -> list[Passage]:
    """Passages of ``text[start:end]`` with their voices; empty or blank passages are dropped."""
    end = len(text) if end is None else end
    passages: list[Passage] = []
    run_start: int | None = None  # start of the current run of unmarked paragraphs

    def close_run(run_end: int) -> None:
        nonlocal run_start
        if run_start is not None and text[run_start:run_end].strip():
            passages.append(Passage(run_start, run_end, None))
        run_start = None

    position = start
    while position < end:
        line_end = text.find("\n", position, end)
        line_end = end if line_end < 0 else line_end
        # a mark only counts at the start of a paragraph (or where reading started)
        at_paragraph_start = position == 0 or text[position - 1] == "\n" or position == start
        voice, mark_len = parse_mark(text[position:line_end]) if at_paragraph_start else (None, 0)
        if voice is not None:
            close_run(position)
            if text[position + mark_len:line_end].strip():
                passages.append(Passage(position + mark_len, line_end, voice))
        elif run_start is None:
            run_start = position
        position = line_end + 1
    close_run(end)
    return passages
