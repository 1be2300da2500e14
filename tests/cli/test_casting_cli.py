"""``python main.py export --dialogue-voice NAME --cast CHARACTER=VOICE,...|FILE``: quoted speech in its own voice,
named speakers in theirs, cut at the quotations inside a paragraph: ``--list-segments`` (its voice field) and the
subtitles of a real export follow the spans; a bad cast is one clear line before any model loads."""

from __future__ import annotations

import json
import re
from pathlib import Path

import main

NOVEL = Path(__file__).resolve().parents[1] / "data" / "documents" / "pride-and-prejudice-ch1-12.txt"


def listed(capsys, *args: str) -> list[dict]:
    code = main.main(["export", *args, "--list-segments"])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    return [json.loads(line) for line in captured.out.splitlines()]


def test_listed_segments_carry_the_voice_of_their_span(capsys, tmp_path):
    chapter = listed(capsys, str(NOVEL), "--chapters", "3", "--dialogue-voice", "Ryan", "--cast",
                     "Elizabeth=Vivian, Mr. Bennet=Eric")
    said = [(s["voice"], s["text"]) for s in chapter]
    at = said.index(("Vivian", '"But you forget, mamma,"'))
    assert said[at:at + 3] == [("Vivian", '"But you forget, mamma,"'), (None, "said Elizabeth,"),
                               ("Vivian", '"that we shall meet him at the assemblies, and that Mrs. Long promised to '
                                          'introduce him."')]
    assert (None, "said her mother resentfully,") in said
    assert ("Ryan", '"since we are not to visit."') in said
    assert ("Eric", '"No more have I,"') in said
    # without a cast the same paragraph is one passage in the default voice
    plain = [(s["voice"], s["text"]) for s in listed(capsys, str(NOVEL), "--chapters", "3")]
    assert any(t.startswith('"But you forget, mamma," said Elizabeth, "that we shall') for _, t in plain)
    assert {v for v, _ in plain} == {None}

    cast_file = tmp_path / "cast.txt"
    cast_file.write_text("# who speaks in whose voice\nElizabeth = Vivian\n", encoding="utf-8")
    from_file = [(s["voice"], s["text"]) for s in listed(capsys, str(NOVEL), "--chapters", "3", "--cast",
                                                          str(cast_file))]
    assert ("Vivian", '"But you forget, mamma,"') in from_file
    # no dialogue voice: other quotations stay with the narration around them, uncut
    assert (None, '"We are not in a way to know _what_ Mr. Bingley likes," said her mother resentfully, "since we '
                  'are not to visit."') in from_file


def test_an_export_speaks_each_span_in_its_voice_and_its_subtitles_follow_the_spans(tiny_model_dir, tmp_path,
                                                                                      capsys):
    book = tmp_path / "scene.txt"
    book.write_text('Chapter 1\n\n"You came," said Jane, "at last." The fire was low.\n', encoding="utf-8")
    code = main.main(["export", str(book), "--voice", "vivian", "--dialogue-voice", "ryan", "--cast", "Jane=serena",
                      "--format", "wav", "--subtitles", "srt", "--model", str(tiny_model_dir()), "--max-frames", "4",
                      "--seed", "1", "--library", str(tmp_path / "voices"), "--no-cache",
                      "--output", str(tmp_path / "scene.wav")])
    err = capsys.readouterr().err
    assert code == 0, err
    cues = re.findall(r"\d+\n(\S+) --> (\S+)\n(.+)\n", (tmp_path / "scene.srt").read_text(encoding="utf-8"))
    assert [text for _, _, text in cues] == ["Chapter 1", '"You came,"', "said Jane,", '"at last."',
                                             "The fire was low."]
    # the quotation and the narration after it are a sentence's pause apart, not a paragraph's
    seconds = [sum(float(n) * f for n, f in zip(re.split("[:,]", t), (3600, 60, 1, 0.001), strict=True))
               for t in (cues[1][1], cues[2][0])]
    assert abs(seconds[1] - seconds[0] - 0.25) < 0.01


def test_a_voice_the_cast_names_must_exist(tiny_model_dir, tmp_path, capsys):
    book = tmp_path / "scene.txt"
    book.write_text('"Hi," said Jane.\n', encoding="utf-8")
    code = main.main(["export", str(book), "--voice", "vivian", "--cast", "Jane=nobody", "--model",
                      str(tiny_model_dir()), "--library", str(tmp_path / "voices"), "--no-cache",
                      "--output", str(tmp_path / "scene.wav")])
    err = capsys.readouterr().err
    assert code == 2
    assert re.search(r"error: the cast's voice 'nobody' is neither a voice of the library", err), err
    assert not (tmp_path / "scene.wav").exists()


def test_a_bad_cast_is_one_clear_line_before_any_model_loads(tmp_path, capsys):
    book = tmp_path / "scene.txt"
    book.write_text('"Hi," said Jane.\n', encoding="utf-8")
    for extra, says in ((["--cast", "Jane"], "cast file Jane: No such file or directory"),
                        (["--cast", "Jane=A,jane=B"], "cast: 'jane' is given twice"),
                        (["--dialogue-voice", "  "], "--dialogue-voice: give the name of a voice")):
        code = main.main(["export", str(book), "--voice", "vivian", "--model", str(tmp_path / "none"), *extra])
        err = capsys.readouterr().err
        assert code == 2
        assert err.strip().splitlines() == [f"orator export: error: {says}"], err


def test_the_plan_gives_each_span_the_voice_it_is_cast_in(tiny_engine, tmp_path):
    from engine.production.book_export import BookExporter
    from engine.production.book_structure import book_from_text
    from engine.production.casting import Cast, cast_book
    from engine.production.export_plan import ExportOptions, Pause, Speech
    from engine.voices import Voice

    engine = tiny_engine()
    book = cast_book(book_from_text('"You came," said Jane, "at last." The fire was low.\n\nIt burned.', "T"),
                     Cast("ryan", (("Jane", "serena"),)))
    voices = {None: Voice.preset("vivian"), "ryan": Voice.preset("ryan"), "serena": Voice.preset("serena")}
    plan = BookExporter(lambda voice: engine).plan(book, tmp_path / "t.wav", ExportOptions(format="wav"), voices)[0]
    said = [(item.voice.speaker, item.text) if isinstance(item, Speech) else item.seconds
            for item in plan.items if isinstance(item, Speech | Pause)]
    assert said == [("serena", '"You came,"'), 0.25, ("vivian", "said Jane,"), 0.25, ("serena", '"at last."'),
                    0.25, ("vivian", "The fire was low."), 0.6, ("vivian", "It burned.")]
