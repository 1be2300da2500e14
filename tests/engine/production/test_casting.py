"""Casting (``engine.production.casting``): quotations found in curly, straight, nested and paragraph-spanning forms,
with apostrophes left alone; speakers named beside them; spans that cover every paragraph exactly once, in time and
memory linear in its length; and the dialogue of a real novel (Pride and Prejudice, chapters 1-12) given to the dialogue
voice and its named speakers' voices."""

from __future__ import annotations

import sys
import tracemalloc
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engine.errors import UnsupportedError
from engine.production.book_sources import load_book
from engine.production.book_structure import Book, Chapter, Passage, Pauses
from engine.production.casting import Cast, cast_argument, cast_book, paragraph_spans, parse_cast
from engine.production.casting import quotes as quotes_module
from engine.production.casting.quotes import DOUBLE, SINGLE, find_quotes, quote_style, speaker

NOVEL = Path(__file__).resolve().parents[2] / "data" / "documents" / "pride-and-prejudice-ch1-12.txt"
DIALOGUE = Cast("Dialogue")


def quoted(text: str, style: str | None = None) -> list[str]:
    style = style or quote_style([text])
    return [text[q.start:q.end] for q in find_quotes(text, style)]


def voiced(paragraphs: list[str], cast: Cast = DIALOGUE) -> list[list[tuple[str | None, str]]]:
    return [[(s.voice, text[s.start:s.end]) for s in spans]
            for text, spans in zip(paragraphs, paragraph_spans(paragraphs, cast), strict=True)]


# ---- finding quotations -------------------------------------------------------------------------------------
def test_straight_and_curly_double_quotes_with_nested_single_quotes():
    text = '"Well," he said, "she told me \'no\' twice." Then “Don’t,” she said.'
    assert quoted(text) == ['"Well,"', '"she told me \'no\' twice."', "“Don’t,”"]


def test_single_quotes_with_apostrophes_and_possessives_in_a_british_text():
    text = "‘I went to the Bennets’ house,’ she said, ‘and didn’t stay. ’Tis late.’ The Lucases’ carriage waited."
    assert quote_style([text]) == SINGLE
    assert quoted(text) == ["‘I went to the Bennets’ house,’", "‘and didn’t stay. ’Tis late.’"]
    straight = "'We don't know the Bennets' friends,' said Jane. 'Tis a pity, thought she."
    assert quoted(straight, SINGLE) == ["'We don't know the Bennets' friends,'"]


def test_apostrophes_are_never_quotes_in_a_double_quoted_text():
    text = "The Bennets' house isn't far; 'tis o'clock. \"Come,\" said Jane."
    assert quote_style([text]) == DOUBLE
    assert quoted(text) == ['"Come,"']


def test_a_quote_never_closed_runs_to_the_end_of_its_paragraph_and_a_stray_close_is_text():
    found = find_quotes('He said: "Wait for me and', DOUBLE)
    assert [(q.start, q.end, q.open_end) for q in found] == [(9, 25, True)]
    assert quoted("Nothing” here is quoted.", DOUBLE) == []
    # a second opening mark inside an open quotation: the first was never closed
    assert quoted("“One. “Two,” said Jane.", DOUBLE) == ["“One. ", "“Two,”"]


def test_a_speech_over_paragraphs_repeats_its_opening_mark_and_keeps_its_speaker():
    paragraphs = ['"It began in the spring. We were young.',
                  '"Then it ended," said Elizabeth.',
                  "The room was quiet."]
    spans = paragraph_spans(paragraphs, Cast("Dialogue", (("Elizabeth", "Liz"),)))
    assert [(s.voice, s.speaker) for s in spans[0]] == [("Liz", "Elizabeth")]  # named only in the second
    assert [(s.voice, paragraphs[1][s.start:s.end]) for s in spans[1]] == [
        ("Liz", '"Then it ended,"'), (None, " said Elizabeth.")]
    assert [s.voice for s in spans[2]] == [None]


@pytest.mark.parametrize(("text", "name"), [
    ('"Yes," said Elizabeth.', "Elizabeth"),
    ('"Yes," said Mr. Bennet; "and no."', "Mr. Bennet"),
    ('"Yes," Elizabeth said quietly.', "Elizabeth"),
    ('"Yes," Mrs. Bennet coolly replied.', "Mrs. Bennet"),
    ('Elizabeth said to her sister, "Yes."', "Elizabeth"),
    ('"Yes," said she.', None),
    ('"Yes," said his lady to him.', None),
    ('"Yes." She smiled and said nothing.', None),
])
def test_the_speaker_named_beside_a_quotation(text, name):
    found = find_quotes(text, DOUBLE)
    quote = next(q for q in found if "Yes" in text[q.start:q.end])
    at = found.index(quote)
    before = found[at - 1].end if at else 0
    after = found[at + 1].start if at + 1 < len(found) else len(text)
    assert speaker(text, quote, before, after) == name


def test_characters_match_by_their_words_and_the_longest_wins():
    cast = Cast("Dialogue", (("Bennet", "B"), ("Mr. Bennet", "Dad"), ("Darcy", "D")))
    assert cast.voice_of("Mr. Bennet") == "Dad"
    assert cast.voice_of("Mrs. Bennet") == "B"
    assert cast.voice_of("Mr. Darcy") == "D"
    assert cast.voice_of("Jane") == "Dialogue" and cast.voice_of(None) == "Dialogue"
    assert Cast(None, (("Jane", "J"),)).voice_of("Lydia") is None


# ---- the book -------------------------------------------------------------------------------------------------
def test_a_cast_book_splits_paragraphs_into_joined_passages_and_keeps_voice_marks():
    book = Book("T", [Chapter("One", (Passage("One", "heading"),
                                      Passage('"Hi," said Jane, "you came."'),
                                      Passage('"Marked," said Jane.', voice="Ryan")))])
    cast = cast_book(book, Cast("Dialogue", (("Jane", "Serena"),)))
    assert [(p.text, p.voice, p.joined) for p in cast.chapters[0].passages] == [
        ("One", None, False), ('"Hi,"', "Serena", False), ("said Jane,", None, True),
        ('"you came."', "Serena", True), ('"Marked," said Jane.', "Ryan", False)]
    assert cast.voices == {"Serena", "Ryan"}
    pauses = Pauses()
    passages = cast.chapters[0].passages
    assert pauses.between(passages[1], passages[2]) == pauses.sentence
    assert pauses.between(passages[3], passages[4]) == pauses.paragraph
    assert cast_book(book, Cast()) is book
    twice = cast_book(cast, Cast("Dialogue", (("Jane", "Serena"),)))
    assert twice.chapters == cast.chapters  # casting a cast book changes nothing


def test_pride_and_prejudice_dialogue_goes_to_the_dialogue_voice_and_named_speakers_to_theirs():
    book = cast_book(load_book(NOVEL), Cast("Dialogue", (("Elizabeth", "Liz"), ("Mr. Bennet", "Dad"),
                                                         ("Mrs. Bennet", "Mum"), ("Darcy", "Darcy"))))
    said = [(p.voice, p.text) for c in book.chapters for p in c.passages]
    texts = [t for _, t in said]

    def voice_of(text: str) -> str | None:
        return said[texts.index(text)][0]

    # chapter 1: Mrs. Bennet is "his lady", never named: the dialogue voice; the narration between stays
    assert voice_of('"My dear Mr. Bennet,"') == "Dialogue"
    assert voice_of("said his lady to him one day,") is None
    assert voice_of('"have you heard that Netherfield Park is let at last?"') == "Dialogue"
    assert voice_of("Mr. Bennet replied that he had not.") is None
    assert voice_of('"Bingley."') == "Dialogue"
    # chapter 2: named speakers, both halves of a quotation split by its attribution
    assert voice_of('"But you forget, mamma,"') == "Liz"
    assert voice_of("said Elizabeth,") is None
    assert voice_of('"that we shall meet him at the assemblies, and that Mrs. Long promised to introduce him."') \
        == "Liz"
    assert voice_of('"No more have I,"') == "Dad"
    assert voice_of('"Nonsense, nonsense!"') == "Mum"  # "Mrs. Bennet said only," before it
    darcy = [t for v, t in said if v == "Darcy"]
    assert darcy and all(t.startswith('"') for t in darcy)
    assert '"I have been used to consider poetry as the _food_ of love,"' in darcy
    assert voice_of('"The country,"') == voice_of('"can in general supply but a few subjects for such a study. In a '
                                                  'country neighbourhood you move in a very confined and unvarying '
                                                  'society."') == "Darcy"
    # every quotation of the book is spoken by a dialogue voice, and no narration is: each quotation mark is in
    # a dialogue passage, and each starts at one but where a line break cut a speech in two ("it;" / "and when")
    assert sum(t.count('"') for v, t in said if v is not None) == NOVEL.read_text(encoding="utf-8").count('"')
    assert voice_of("and when I am in town it is pretty much the same. They have each their advantages, and I can "
                    'be equally happy in either."') == "Dialogue"
    assert sum(not t.startswith('"') for v, t in said if v is not None) == 2


# ---- hostile text -----------------------------------------------------------------------------------------------
TEXT = st.lists(st.sampled_from(list("ab Z.,!?\n'\"“”‘’«»-—") + ["said Jane", "Mr. ", " Elizabeth said"]),
                max_size=200).map("".join)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(TEXT, min_size=1, max_size=5), st.sampled_from([None, DOUBLE, SINGLE]))
def test_spans_cover_every_paragraph_exactly_once(paragraphs, style):
    cast = Cast("D", (("Jane", "J"), ("Elizabeth", "E")))
    for text, spans in zip(paragraphs, paragraph_spans(paragraphs, cast, style), strict=True):
        assert spans[0].start == 0 and spans[-1].end == len(text)
        assert all(a.end == b.start and a.start < a.end for a, b in zip(spans, spans[1:], strict=False))
        assert "".join(text[s.start:s.end] for s in spans) == text


@settings(max_examples=100, deadline=None)
@given(st.lists(TEXT.filter(lambda t: any(c.isalnum() for c in t)), min_size=1, max_size=6))
def test_a_cast_book_says_every_character_of_its_paragraphs_once(paragraphs):
    book = Book("T", [Chapter("One", tuple(Passage(t) for t in paragraphs))])
    cast = cast_book(book, Cast("D", (("Jane", "J"),)))
    assert "".join("".join(p.text.split()) for p in cast.chapters[0].passages) == "".join("".join(paragraphs).split())


def traced_lines(function, *args) -> int:
    """Lines of ``engine.production.casting`` run by ``function(*args)``: a count of the work done, whatever the
    machine."""
    count = 0
    files = {quotes_module.__file__, sys.modules["engine.production.casting"].__file__}

    def tracer(frame, event, arg):
        nonlocal count
        if frame.f_code.co_filename not in files:
            return None
        if event == "line":
            count += 1
        return tracer

    sys.settrace(tracer)
    try:
        function(*args)
    finally:
        sys.settrace(None)
    return count


@pytest.mark.parametrize("unit", ['"', "“", '"a," said Jane ', "Mr. Darcy said, \"", "Jane's' "])
def test_hostile_text_costs_work_and_memory_linear_in_its_length(unit):
    """Unclosed quotations, runs of openers, a speaker beside each quotation, possessives: ten times the text is
    at most ten times the work (lines run, counted) and memory linear in it; 100,000 quotations are cut whole."""
    cast = Cast("D", (("Jane", "J"), ("Darcy", "D")))
    work = [traced_lines(paragraph_spans, [unit * count], cast) for count in (2_000, 20_000)]
    assert work[1] <= 10.5 * work[0]
    tracemalloc.start()
    try:
        paragraph_spans([unit * 20_000], cast)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak <= 400 * len(unit) * 20_000 + (1 << 20)
    large = unit * 100_000
    spans = paragraph_spans([large], cast)[0]
    assert "".join(large[s.start:s.end] for s in spans) == large


# ---- the cast itself ---------------------------------------------------------------------------------------------
def test_a_cast_is_read_from_pairs_or_a_file(tmp_path):
    assert parse_cast("Elizabeth=Vivian, Mr. Darcy = Ryan;Jane=Serena") == (
        ("Elizabeth", "Vivian"), ("Mr. Darcy", "Ryan"), ("Jane", "Serena"))
    (tmp_path / "cast.txt").write_text("# the Bennets\nElizabeth = Vivian\n\nMr. Bennet = Eric  # father\n",
                                       encoding="utf-8")
    assert cast_argument(str(tmp_path / "cast.txt")) == (("Elizabeth", "Vivian"), ("Mr. Bennet", "Eric"))


@pytest.mark.parametrize(("spec", "says"), [
    ("Elizabeth", "write CHARACTER=VOICE"), ("=Vivian", "1 to 100"), ("Jane=", "1 to 100"),
    ("Jane=A, jane=B", "given twice"), (" , ", "empty"), ("A=" + "x" * 101, "1 to 100"),
    (",".join(f"C{i}=V" for i in range(201)), "at most 200"),
])
def test_a_bad_cast_is_one_clear_error(spec, says):
    with pytest.raises(UnsupportedError, match=says):
        parse_cast(spec)


def test_a_bad_cast_file_is_one_clear_error(tmp_path):
    for name, data, says in (("huge.txt", b"A=B\n" * 20_000, "larger than 64 KiB"),
                             ("binary.txt", b"\xff\xfe\x00\x01", "not UTF-8"),
                             ("nul.txt", b"A=B\x00", "not a text file")):
        (tmp_path / name).write_bytes(data)
        with pytest.raises(UnsupportedError, match=says):
            cast_argument(str(tmp_path / name))
    with pytest.raises(UnsupportedError, match="No such file"):
        cast_argument(str(tmp_path / "missing.txt"))


def test_a_paragraph_cut_by_a_line_break_inside_a_quotation_goes_on_with_it():
    paragraphs = ['"When I am in the country," he replied, "I never wish to leave it;',
                  'and when I am in town it is the same." He smiled.', "And then he left."]
    spans = voiced(paragraphs)
    assert spans[1] == [("Dialogue", 'and when I am in town it is the same."'), (None, " He smiled.")]
    assert spans[2] == [(None, "And then he left.")]
