"""Reading aloud with a cast (``qtapp.reading_plan.cast_sentences`` over ``engine.production.casting.stream``): each
quotation its own sentence in its voice, cut out of its line, its span the document's, so the highlight follows the
voices; no character read twice or lost; and the studio's setting of it used by Play."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine import Voice
from engine.production.casting import Cast
from qtapp.reading import IDLE
from qtapp.reading_plan import ReadingPlan, StrText, line_pieces
from qtapp.settings import Settings
from tests.qtapp.test_main_window import highlighted, play_until, wait_ready

NOVEL = Path(__file__).resolve().parents[1] / "data" / "documents" / "pride-and-prejudice-ch1-12.txt"
CAST = Cast("Dialogue", (("Elizabeth", "Liz"), ("Mr. Bennet", "Dad")))


def planned(text: str, cast: Cast | None = CAST, piece: int | None = None) -> list:
    pieces = StrText(text).pieces() if piece is None else _cut(text, piece)
    plan = ReadingPlan(pieces, cast=cast)
    plan.index_at(len(text))
    while plan.get(len(plan.sentences)) is not None:
        pass
    return plan.sentences


def words(text: str) -> str:
    return " ".join(text.split())


def _cut(text: str, size: int):
    for offset, line in line_pieces(0, text):
        for at in range(0, len(line), size):
            yield offset + at, line[at:at + size]


def test_a_novels_quotations_are_read_in_their_voices_with_their_own_spans():
    text = NOVEL.read_text(encoding="utf-8")
    sentences = planned(text)
    for s in sentences:
        assert words(s.segment.text) == words(text[s.start:s.end])  # the highlight is the text read
    said = [(s.voice, words(s.segment.text)) for s in sentences]
    at = said.index(("Liz", '"But you forget, mamma,"'))
    assert said[at + 1] == (None, "said Elizabeth,")
    assert said[at + 2][0] == "Liz" and said[at + 2][1].startswith('"that we shall meet him at the assemblies,')
    assert ("Dad", '"No more have I,"') in said
    assert (None, "Mr. Bennet replied that he had not.") in said
    assert sum(t.count('"') for v, t in said if v is not None) == text.count('"')


TEXT = st.lists(st.sampled_from(list("ab .,!?\n'\"“”‘’") + ["\n\n", "said Jane", " Elizabeth said", "[voice: Bob] "]),
                max_size=120).map("".join)


@settings(max_examples=150, deadline=None)
@given(TEXT, st.sampled_from([None, 7, 64]))
def test_a_cast_reading_says_every_character_once_in_document_order(text, piece):
    plain = planned(text, cast=None)
    cast = planned(text, piece=piece)
    # the same characters in the same order; where a quotation is cut out of its line, the line end between is a cut
    assert "".join("".join(s.segment.text for s in cast).split()) == "".join(
        "".join(s.segment.text for s in plain).split())
    assert all(a.end <= b.start for a, b in zip(cast, cast[1:], strict=False))
    for s in cast:
        assert words(s.segment.text) == words(text[s.start:s.end])


@pytest.fixture
def reading_window(qtbot, fake_sd, fake_engine_class):
    from qtapp.main_window import MainWindow

    stored = Settings.load()
    stored.segment_chars, stored.dialogue_voice, stored.cast = 0, "Dialogue", "Jane=Jane"
    stored.save()
    window = MainWindow(Settings.load(), engine_factory=fake_engine_class, sd_module=fake_sd)
    qtbot.addWidget(window)
    window.show()
    return window


def test_play_reads_each_quotation_in_its_voice_and_highlights_its_span(qtbot, fake_sd, reading_window):
    window = reading_window
    wait_ready(qtbot, window)
    window.library_panel.add_voice(Voice.preset("vivian"), "Narrator")  # the first voice: the default
    window.library_panel.add_voice(Voice.preset("aiden"), "Dialogue")
    window.library_panel.add_voice(Voice.preset("ryan"), "Jane")
    window.editor.setPlainText('"You came," said Jane, "at last." The fire was low.\n\n"Sit," said Tom.\n')
    window.read_aloud.play()
    heard = []

    def record():
        if highlighted(window) and (not heard or heard[-1] != highlighted(window)):
            heard.append(highlighted(window))
        return window.reader.state == IDLE

    play_until(qtbot, window, fake_sd, record)
    assert heard == ['"You came,"', "said Jane,", '"at last."', "The fire was low.", '"Sit,"', "said Tom."]
    spoken = [(text.strip(), voice.speaker) for text, voice in window.worker.engine_for(Voice.preset("ryan")).spoken]
    assert spoken == [('"You came,"', "ryan"), ("said Jane,", "vivian"), ('"at last."', "ryan"),
                      ("The fire was low.", "vivian"), ('"Sit,"', "aiden"), ("said Tom.", "vivian")]
