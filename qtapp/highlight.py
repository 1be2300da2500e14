"""What a reading session will say, sentence by sentence, and where each sentence is in the editor.

A ``ReadingPlan`` cuts the text being read (from the cursor, or a selection) into passages with one
voice each (``qtapp.voice_marks``), and each passage into sentences with ``engine.text
.split_segments``: exactly the segments the engine speaks for that passage, so a segment index
reported by the worker maps to a character span in the editor. Sentences are numbered across the
whole plan; that global number is what the player is given and reports back. Qt-free.
"""

from __future__ import annotations

from dataclasses import dataclass

from engine.text import split_segments
from qtapp.voice_marks import split_passages


@dataclass(frozen=True)
class PlannedPassage:
    start: int  # character offset in the document
    end: int
    voice: str | None  # library voice name, None for the default voice
    text: str  # document[start:end], the text sent to the worker
    first_sentence: int  # global index of this passage's first sentence


@dataclass(frozen=True)
class Sentence:
    start: int  # character offsets in the document
    end: int
    passage: int  # index into ReadingPlan.passages
    segment: int  # index of the segment within the passage's text


class ReadingPlan:
    def __init__(self, document: str, start: int = 0, end: int | None = None):
        self.passages: list[PlannedPassage] = []
        self.sentences: list[Sentence] = []
        for passage in split_passages(document, start, end):
            text = document[passage.start:passage.end]
            segments = split_segments(text)
            if not segments:
                continue
            index = len(self.passages)
            self.passages.append(PlannedPassage(passage.start, passage.end, passage.voice, text,
                                                len(self.sentences)))
            self.sentences.extend(Sentence(passage.start + s.start, passage.start + s.end, index, i)
                                  for i, s in enumerate(segments))

    def __len__(self) -> int:
        return len(self.sentences)

    def global_index(self, passage: int, segment: int) -> int:
        return self.passages[passage].first_sentence + segment

    def sentence_at(self, position: int) -> int:
        """Index of the sentence containing ``position``, else the next one after it, else the last."""
        for i, sentence in enumerate(self.sentences):
            if position < sentence.end:
                return i
        return len(self.sentences) - 1
