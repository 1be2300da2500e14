"""``python main.py export INPUT... --list-segments``: what an export would speak, one JSON object a line, with no
model; the text as the reading policy hands it to speech (``--read-urls``, ``--read-code``), chapters chosen as
export chooses them."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

import main
from engine.documents import load_document

ROOT = Path(__file__).resolve().parents[2]
DOCUMENTS = ROOT / "tests" / "data" / "documents"
HANDBOOK = DOCUMENTS / "debian-handbook-sect.apt-get.html"
NOVEL = DOCUMENTS / "pride-and-prejudice-ch1-12.txt"


def segments(capsys, *args: str) -> list[dict]:
    code = main.main(["export", *args, "--list-segments"])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    lines = captured.out.splitlines()
    objects = [json.loads(line) for line in lines]
    for obj in objects:
        assert set(obj) == {"chapter", "title", "voice", "text"}
        assert isinstance(obj["chapter"], int) and obj["chapter"] >= 1
        assert isinstance(obj["title"], str) and isinstance(obj["text"], str) and obj["text"].strip()
        assert obj["voice"] is None or isinstance(obj["voice"], str)
    return objects


def test_a_real_manual_is_listed_with_urls_shortened_and_code_skipped(capsys):
    """Debian's handbook page on apt: its "$ sudo apt …" and "# apt install …" examples are announced, its
    proxy URL is said as its site; with --read-urls --read-code both are read as written."""
    listed = [s["text"] for s in segments(capsys, str(HANDBOOK))]
    assert len(listed) > 50
    assert "Code example." in listed
    assert not any(t.startswith(("$ ", "# ")) or "://" in t for t in listed)
    assert any('Acquire::http::proxy "yourproxy"' in t for t in listed)
    assert any("you can use the APT configuration parameter Acquire::PDiffs and set it to false." in t
               for t in listed)  # the prose around the examples is said whole

    everything = [s["text"] for s in segments(capsys, str(HANDBOOK), "--read-urls", "--read-code")]
    assert "Code example." not in everything
    assert any('$ sudo apt -o "Acquire::PDiffs=false" update' in t for t in everything)
    assert any('"http://yourproxy:3128"' in t for t in everything)


def test_chapters_and_voices_are_those_export_speaks(capsys, tmp_path):
    # numbered as --list-chapters numbers them: the title page before "Chapter 1" is chapter 1
    chosen = segments(capsys, str(NOVEL), "--chapters", "3-4")
    assert {(s["chapter"], s["title"]) for s in chosen} == {(3, "Chapter 2"), (4, "Chapter 3")}
    assert chosen[1]["text"].startswith("Mr. Bennet was among the earliest of those who waited on Mr. Bingley.")
    assert all(len(s["text"]) <= 300 for s in chosen)

    marked = tmp_path / "play.txt"
    marked.write_text("Chapter 1\n\nThe narrator begins.\n\n[voice: Ryan] I answer him.\n\nThe narrator ends.\n")
    assert [(s["voice"], s["text"]) for s in segments(capsys, str(marked))] == [
        (None, "Chapter 1"), (None, "The narrator begins."), ("Ryan", "I answer him."), (None, "The narrator ends.")]


def test_listing_needs_no_model_and_runs_as_a_command(tmp_path):
    done = subprocess.run([sys.executable, str(ROOT / "main.py"), "export", str(HANDBOOK), "--list-segments"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    # the page's heading and its eight sections, numbered as --list-chapters numbers them
    assert sorted({json.loads(line)["chapter"] for line in lines}) == list(range(1, 10)) and len(lines) > 50
    assert list(tmp_path.iterdir()) == []  # nothing written


def test_a_bad_chapter_list_is_still_one_clear_line(capsys):
    code = main.main(["export", str(NOVEL), "--list-segments", "--chapters", "40"])
    err = capsys.readouterr().err
    assert code == 2 and "the book has 13 chapters" in err and len(err.strip().splitlines()) == 1


def test_footnotes_are_said_after_their_paragraph_or_skipped(capsys):
    """Debian's New Maintainers' Guide as PDF: its notes, printed at the pages' feet, are said right after the
    paragraph that holds their marks, with a lead that tells them from the text; ``--footnotes skip`` leaves them
    out and nothing else."""
    guide = str(DOCUMENTS / "maint-guide-pages-1-16.pdf")
    listed = [s["text"] for s in segments(capsys, guide)]
    for note, paragraph_end in (
            ("Footnote: The document assumes you are using a jessie or newer system.",
             "will be dropped in the following releases since contents are getting outdated."),
            ("Footnote: You can learn about the basic handling of a Debian system from the Debian Reference "
             "(www.debian.org) .", "but you certainly don’t need to be a wizard."),
            ("Footnote: This program is already packaged.", "I’ll use a program called gentoo, a GTK+ file manager.")):
        assert listed[listed.index(note) - 1].endswith(paragraph_end)
    listed = [s["text"] for s in segments(capsys, guide, "--read-urls")]  # the notes' words as written
    skipped = [s["text"] for s in segments(capsys, guide, "--read-urls", "--footnotes", "skip")]
    kept = iter(listed)
    assert all(any(t == k for k in kept) for t in skipped)  # what is left is said as before, in order
    removed = [t for t in listed if t not in skipped]
    doc = load_document(guide)
    notes = " ".join(doc.text[start:end] for start, end, kind in doc.kinds if kind == "footnote")
    assert re.findall(r"\w+", " ".join(removed).replace("Footnote: ", "")) == re.findall(r"\w+", notes)


def test_a_paper_is_listed_without_its_running_headers_and_with_whole_references(capsys):
    paper = str(DOCUMENTS / "acmart-sample-sigconf-pages-2-3-5-6.pdf")
    listed = [s["text"] for s in segments(capsys, paper)]
    assert not any("Trovato et al." in t or "Woodstock, NY" in t for t in listed)
    assert any(t.startswith("[17] David Harel. 1979. First-Order Dynamic Logic. Lecture Notes in Computer Science, "
                            "Vol. 68. Springer-Verlag") for t in listed)


def test_a_bad_footnote_choice_is_refused_by_the_parser(capsys):
    with pytest.raises(SystemExit) as exit_info:
        main.main(["export", str(NOVEL), "--list-segments", "--footnotes", "sometimes"])
    assert exit_info.value.code == 2 and "--footnotes" in capsys.readouterr().err


def test_a_bibles_verse_numbers_are_said_and_each_verse_starts_a_segment(capsys):
    """The KJV as Debian's `bible` prints it ("  1 The vision of Obadiah. ..."): verse numbers are kept, since a
    reader never drops a digit of the text and a listener follows a printed Bible by them (docs/reading.md); the
    chapter finder's books are the chapters the segments are listed under."""
    listed = segments(capsys, str(DOCUMENTS / "kjv-obadiah-jonah-micah.txt"), "--chapters", "4")
    assert {s["title"] for s in listed} == {"Jonah 1"}
    texts = [s["text"] for s in listed]
    assert texts[0] == "Jonah 1"
    assert texts[1].startswith("1 Now the word of the LORD came unto Jonah the son of Amittai, saying,")
    # Jonah 1 has 17 verses, each said with its number, in order (a verse ending without a stop, "saying,", runs
    # on into the next in one segment, as any sentence does)
    assert [int(n) for n in re.findall(r"(?:^| )(\d{1,2}) [A-Z]", " ".join(texts[1:]))] == list(range(1, 18))
