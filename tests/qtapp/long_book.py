"""A generated book of any length for the studio's long-document test and benchmark
(``tests/qtapp/test_long_documents.py``, ``bench/studio_long_document.py``)."""

from __future__ import annotations

import random

BOOK_CHARS = 20_000_000
TYPED = "Some words typed into a long book. "


def book_text(chars: int) -> str:
    """Paragraphs of sentences, some with a curly apostrophe (two bytes a character in memory, as real books)."""
    rng = random.Random(0)
    words = "the quick brown fox jumps over a lazy dog while seven old men read their books aloud".split()

    def sentence() -> str:
        text = " ".join(rng.choice(words) for _ in range(rng.randint(4, 22)))
        return text.capitalize() + rng.choice([".", ".", "!", "?", "’s end."])

    paragraphs = [" ".join(sentence() for _ in range(rng.randint(1, 7))) for _ in range(400)]
    out, size = [], 0
    while size < chars:
        out.append(rng.choice(paragraphs))
        size += len(out[-1]) + 2
    return "\n\n".join(out)


def place_cursor(window, position: int) -> None:
    cursor = window.editor.textCursor()
    cursor.setPosition(position)
    window.editor.setTextCursor(cursor)
