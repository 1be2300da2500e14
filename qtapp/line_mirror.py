"""A copy of the editor's text as a list of lines, kept current edit by edit, with its word count.

``LineMirror`` follows a QTextDocument's ``contentsChange``: each change re-reads only the blocks it
touched (found by position, their number before the change told by the change in block count), so a
keystroke in a 20 MB book costs microseconds. The word count is the sum of the lines' counts, kept the
same way. Autosave takes ``snapshot()`` (a copy of the list, not of the text) and writes it on another
thread; nothing on the GUI thread ever joins or scans the whole text. Lines are block texts as
``toPlainText`` gives them (``plain``), so ``"\\n".join(lines)`` is that text.
"""

from __future__ import annotations

import logging
import re

from PySide6.QtCore import QObject
from PySide6.QtGui import QTextDocument

log = logging.getLogger("orator.studio")

PLAIN_TEXT = str.maketrans({"\u2029": "\n", "\u2028": "\n", "\ufdd0": "\n", "\ufdd1": "\n", "\u00a0": " "})
_NOT_PLAIN = re.compile("[\u2029\u2028\ufdd0\ufdd1\u00a0]")


def plain(block_text: str) -> str:
    """A block's text as ``QTextDocument.toPlainText`` gives it (separators as "\\n", no-break spaces as spaces);
    checked first, since translating every block of a book costs far more than searching it."""
    return block_text.translate(PLAIN_TEXT) if _NOT_PLAIN.search(block_text) else block_text


def count_words(text: str) -> int:
    return len(text.split())


class LineMirror(QObject):
    def __init__(self, document: QTextDocument, parent: QObject | None = None):
        super().__init__(parent)
        self.document = document
        self.lines: list[str] = []
        self._counts: list[int] = []  # words per line
        self.words = 0
        self.resync()
        document.contentsChange.connect(self._on_change)

    @property
    def characters(self) -> int:
        return self.document.characterCount() - 1

    def snapshot(self) -> list[str]:
        """The lines as they are now (a shallow copy: cheap, and safe to hand to another thread)."""
        return list(self.lines)

    def resync(self) -> None:
        """Read every block again (construction, or a change that did not add up)."""
        block = self.document.begin()
        self.lines = []
        while block.isValid():
            self.lines.append(plain(block.text()))
            block = block.next()
        self._counts = [count_words(line) for line in self.lines]
        self.words = sum(self._counts)

    def _on_change(self, position: int, removed: int, added: int) -> None:
        document = self.document
        last_position = max(0, self.characters)
        first_block = document.findBlock(min(position, last_position))
        first = first_block.blockNumber()
        last = document.findBlock(min(position + added, last_position)).blockNumber()
        replaced_end = last + 1 - (document.blockCount() - len(self.lines))  # end of the old lines it replaces
        if first < 0 or last < first or not first <= replaced_end <= len(self.lines):
            log.warning("text change (%d, -%d, +%d) did not match the mirror; reading it again",
                        position, removed, added)
            self.resync()
            return
        lines, block = [], first_block
        for _ in range(first, last + 1):
            lines.append(plain(block.text()))
            block = block.next()
        counts = [count_words(line) for line in lines]
        self.words += sum(counts) - sum(self._counts[first:replaced_end])
        self.lines[first:replaced_end] = lines
        self._counts[first:replaced_end] = counts
