"""``python main.py export``, used as a person would: real processes against the tiny checkpoint for the happy path
and Ctrl-C, ``main.main`` in-process (same parser, same exit codes) for the refusals."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import mutagen
import pytest

import main
from engine.atomic_files import TEMP_PREFIX

MAIN = Path(__file__).resolve().parents[2] / "main.py"
PARAGRAPH = ("The rain had stopped by the time they reached the harbour, and the boats lay still on the grey "
             "water. Nobody spoke for a while. Then the old man pointed at the lighthouse and laughed.")
SENTENCES = 60  # enough that a Ctrl-C sent at the first progress line lands well before the end
BOOK = "\n\n".join(["Chapter 1", textwrap.fill(PARAGRAPH, 72), "Chapter 2", textwrap.fill(PARAGRAPH, 72)]) + "\n"


def export_process(*args: str, cwd: Path, **kwargs) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, str(MAIN), "export", *args], cwd=cwd, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, **kwargs)


def _interruptible() -> None:
    """In the child before it starts: SIGINT delivered and not ignored, whatever the test runner's process had
    inherited (a shell's background job ignores it, a thread library may block it), so Ctrl-C is what it is."""
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def common(tmp_path: Path, model: Path) -> list[str]:
    return ["--model", str(model), "--max-frames", "3", "--seed", "1", "--library", str(tmp_path / "voices"),
            "--cache-dir", str(tmp_path / "cache")]


def leftovers(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.rglob("*") if p.name.startswith(TEMP_PREFIX) or p.suffix == ".part")


def test_a_text_book_to_m4b_with_subtitles(tiny_model_dir, tmp_path):
    (tmp_path / "book.txt").write_text(BOOK, encoding="utf-8")
    process = export_process("book.txt", "--voice", "vivian", "--subtitles", "vtt",
                             *common(tmp_path, tiny_model_dir("custom_voice")), cwd=tmp_path)
    out, err = process.communicate(timeout=300)
    assert process.returncode == 0, err
    assert out.strip() == f"wrote {Path('book.m4b')}"
    progress = [line for line in err.splitlines() if line.startswith("book.txt:")]
    assert progress and "100%" in progress[-1] and all("left" in line for line in progress)
    # segments the guard cut (the tiny model never ends by itself) are told once, not one line each
    cuts = [line for line in err.splitlines() if "cut" in line]
    assert len(cuts) == 1 and re.fullmatch(r"orator export: book\.txt: \d+ of \d+ segments? (was|were) cut short: .*",
                                           cuts[0]), err
    assert [c.title for c in mutagen.File(tmp_path / "book.m4b").chapters] == ["Chapter 1", "Chapter 2"]
    vtt = (tmp_path / "book.vtt").read_text(encoding="utf-8")
    # a cue per heading; each paragraph is one segment (its three sentences merged), over three cues' worth of
    # text (engine.production.subtitles.split_cue), so three cues
    assert vtt.startswith("WEBVTT") and vtt.count(" --> ") == 2 + 2 * 3
    assert (tmp_path / "book.chapters.vtt").exists() and leftovers(tmp_path) == []


def test_ctrl_c_leaves_no_partial_file_and_the_same_command_resumes(tiny_model_dir, tmp_path):
    sentences = [f"Sentence number {i} of the long story goes here." for i in range(SENTENCES)]
    paragraphs = [" ".join(sentences[i:i + 4]) for i in range(0, SENTENCES, 4)]  # each sentence once: no reuse
    (tmp_path / "long.txt").write_text("\n\n".join(textwrap.fill(p, 72) for p in paragraphs), encoding="utf-8")
    # one segment a sentence (--segment-chars 0), so many segments and a cache entry each
    args = ["long.txt", "--voice", "vivian", "--format", "mp3", "-o", "out/", "--segment-chars", "0",
            *common(tmp_path, tiny_model_dir("custom_voice"))]
    process = export_process(*args, cwd=tmp_path, preexec_fn=_interruptible)
    deadline = time.monotonic() + 240
    for line in process.stderr:
        if "% · sentence" in line or time.monotonic() > deadline:  # the first progress line
            break
    assert process.poll() is None, "the export ended before it could be interrupted"
    process.send_signal(signal.SIGINT)  # once: a Ctrl-C must never be lost (PyAV drops one raised in its callbacks)
    out, err = process.communicate(timeout=120)
    assert process.returncode == 130, err
    assert "interrupted; no partial file was left" in err and "run the same command again" in err
    assert "Traceback" not in err
    assert list((tmp_path / "out").iterdir()) == [] and leftovers(tmp_path) == []
    done = len(list((tmp_path / "cache").glob("*/*.flac")))
    assert 1 <= done < SENTENCES

    rerun = export_process(*args, cwd=tmp_path)
    out, err = rerun.communicate(timeout=300)
    assert rerun.returncode == 0, err
    assert (tmp_path / "out" / "long.mp3").stat().st_size > 0
    assert len(list((tmp_path / "cache").glob("*/*.flac"))) == SENTENCES  # the rest, each sentence once


def run(capsys, *args: str) -> tuple[int, str, str]:
    code = main.main(["export", *args])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def one_error_line(err: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("orator export: error: "), err
    return lines[0]


@pytest.fixture
def book(tmp_path) -> Path:
    path = tmp_path / "book.txt"
    path.write_text(BOOK, encoding="utf-8")
    return path


@pytest.mark.parametrize("chapters, message", [
    ("9", "'9': the book has 2 chapters"), ("1-", "not a chapter number or range"), ("0", "from 1 up"),
    (",", "empty"), ("2-1", "from 1 up")])
def test_a_bad_chapter_list_is_one_clear_line_before_any_model_loads(capsys, book, tmp_path, chapters, message):
    code, _, err = run(capsys, str(book), "--voice", "vivian", "--chapters", chapters, "--model",
                       str(tmp_path / "no-model-needed-yet"))
    assert code == 2 and message in one_error_line(err) and "book.txt" in err


@pytest.mark.parametrize("content, message", [
    (None, "does not exist"), (b"", "is empty"), (b"  \n\n  ", "is empty"), (b"\x00\x01\x02binary\xff\xfe", "binary"),
    (b"# \n\n---\n", "no (?:text to speak|readable text)")])  # Markdown: read by engine.documents when it can
def test_bad_inputs_are_one_clear_line(capsys, tmp_path, content, message):
    path = tmp_path / ("notes.md" if content == b"# \n\n---\n" else "input.txt")
    if content is not None:
        path.write_bytes(content)
    code, _, err = run(capsys, str(path), "--voice", "vivian", "--model", str(tmp_path))
    assert code == 2 and re.search(message, one_error_line(err))


def test_an_output_that_cannot_be_written_exits_3_before_speaking(capsys, book, tmp_path):
    (tmp_path / "a-file").write_text("in the way")
    code, _, err = run(capsys, str(book), "--voice", "vivian", "-o", str(tmp_path / "a-file" / "book.m4b"),
                       "--model", str(tmp_path / "missing"))
    assert code == 3 and "a-file is a file, not a folder" in one_error_line(err)


@pytest.mark.parametrize("args, message", [
    (["-o", "book.mp3", "--format", "m4b"], "is a .mp3 file but --format is m4b"),
    (["-o", "book.ogg"], "the formats are m4b, m4a, mp3"),
    (["--cover", "missing.png"], "cannot read the cover image"),
    ([], "give the model to speak with"),
])
def test_option_mistakes_are_one_clear_line(capsys, book, monkeypatch, tmp_path, args, message):
    monkeypatch.chdir(tmp_path)
    code, _, err = run(capsys, str(book), "--voice", "vivian", *args)
    assert code == 2 and message in one_error_line(err)


def test_chapters_are_listed_without_a_model(capsys, book):
    code, out, _ = run(capsys, str(book), "--list-chapters")
    assert code == 0 and out.splitlines() == ["book.txt: book", "    1. Chapter 1", "    2. Chapter 2"]


def test_voices_are_checked_before_speaking(capsys, book, tiny_model_dir, tmp_path):
    model = tiny_model_dir("custom_voice")
    code, _, err = run(capsys, str(book), "--voice", "nobody", *common(tmp_path, model))
    assert code == 2 and "'nobody' is neither a voice of the library" in one_error_line(err.split("\n", 1)[1])
    marked = tmp_path / "marked.txt"
    marked.write_text("Hello.\n\n[voice: ghost] Boo.\n", encoding="utf-8")
    code, _, err = run(capsys, str(marked), "--voice", "vivian", *common(tmp_path, model))
    assert code == 2 and "'ghost'" in err and not list(tmp_path.glob("marked.*[!t]"))


def test_several_inputs_into_a_folder_and_text_that_is_not_utf8(capsys, tmp_path, tiny_model_dir):
    (tmp_path / "old.txt").write_bytes("Café au lait. Très bien.".encode("cp1252"))
    (tmp_path / "notes.md").write_text("# One\n\nA *first* note.\n\n# Two\n\nA second note.\n", encoding="utf-8")
    code, out, err = run(capsys, str(tmp_path / "old.txt"), str(tmp_path / "notes.md"), "--voice", "ryan",
                         "--format", "opus", "-o", str(tmp_path / "out") + os.sep,
                         *common(tmp_path, tiny_model_dir("custom_voice")))
    assert code == 0, err
    assert "old.txt: old.txt is not UTF-8; it was read as Windows-1252" in err
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["notes.opus", "old.opus"]
    assert "[1/2] old.txt:" in err and "[2/2] notes.md:" in err
    assert [line.split()[0] for line in out.splitlines()] == ["wrote", "wrote"]


def _epub(path: Path, chapters: list[tuple[str, str]], cover: bytes) -> Path:
    """A small EPUB 3 as a publisher makes one: a title, an author, a cover image and one XHTML file per chapter."""
    import zipfile

    items = "".join(f'<item id="c{i}" href="c{i}.xhtml" media-type="application/xhtml+xml"/>'
                    for i in range(len(chapters)))
    spine = "".join(f'<itemref idref="c{i}"/>' for i in range(len(chapters)))
    opf = ('<?xml version="1.0" encoding="utf-8"?><package xmlns="http://www.idpf.org/2007/opf" version="3.0" '
           'unique-identifier="id"><metadata xmlns:dc="http://purl.org/dc/elements/1.1/"><dc:identifier id="id">'
           'x1</dc:identifier><dc:title>The Voyage</dc:title><dc:creator>Ann Author</dc:creator><dc:language>en'
           f'</dc:language></metadata><manifest>{items}<item id="cover" href="cover.png" media-type="image/png" '
           f'properties="cover-image"/></manifest><spine>{spine}</spine></package>')
    with zipfile.ZipFile(path, "w") as z:
        z.writestr("mimetype", "application/epub+zip", compress_type=zipfile.ZIP_STORED)
        z.writestr("META-INF/container.xml", '<?xml version="1.0"?><container version="1.0" xmlns="urn:oasis:names:'
                   'tc:opendocument:xmlns:container"><rootfiles><rootfile full-path="OEBPS/content.opf" media-type='
                   '"application/oebps-package+xml"/></rootfiles></container>')
        z.writestr("OEBPS/content.opf", opf)
        z.writestr("OEBPS/cover.png", cover)
        for i, (title, body) in enumerate(chapters):
            z.writestr(f"OEBPS/c{i}.xhtml", '<?xml version="1.0" encoding="utf-8"?><html xmlns="http://www.w3.org/'
                       f'1999/xhtml"><head><title>{title}</title></head><body><h1>{title}</h1><p>{body}</p></body>'
                       '</html>')
    return path


def test_an_epub_with_chapters_becomes_an_m4b_with_the_same_chapters(capsys, tiny_model_dir, tmp_path):
    from engine.production.book_sources import structured_documents
    from tests.engine.production.test_encode import png

    if not structured_documents():
        pytest.skip("engine.documents here reads an EPUB as flat text, without its chapters (branch documents does)")

    chapters = [("Chapter 1: Arrival", "They came by sea. It was late."), ("Chapter 2: The Town", "Nobody was up."),
                ("Chapter 3: Leaving", "They left at dawn. Nobody saw them go.")]
    book = _epub(tmp_path / "voyage.epub", chapters, png())
    code, out, err = run(capsys, str(book), "--voice", "vivian", "--subtitles", "vtt",
                         *common(tmp_path, tiny_model_dir("custom_voice")))
    assert code == 0, err
    mp4 = mutagen.File(tmp_path / "voyage.m4b")
    assert [c.title for c in mp4.chapters] == [title for title, _ in chapters]
    assert mp4.tags["©nam"] == ["The Voyage"] and mp4.tags["©ART"] == ["Ann Author"]
    assert bytes(mp4.tags["covr"][0]) == png()  # the EPUB's own cover
    vtt = (tmp_path / "voyage.vtt").read_text(encoding="utf-8")
    heading_cues = [line.split(" --> ")[0] for line, following in zip(vtt.splitlines(), vtt.splitlines()[1:],
                                                                           strict=False)
                    if " --> " in line and following.startswith("Chapter ")]
    starts = [round(c.start, 3) for c in mp4.chapters]
    assert [f"{int(s // 3600):02d}:{int(s % 3600 // 60):02d}:{s % 60:06.3f}" for s in starts] == heading_cues


def test_without_the_studios_readers_an_epub_is_refused_and_markdown_still_read(capsys, monkeypatch, tmp_path):
    monkeypatch.setitem(sys.modules, "engine.documents", None)  # importing it now raises ImportError
    (tmp_path / "book.epub").write_bytes(b"PK\x03\x04 whatever")
    code, _, err = run(capsys, str(tmp_path / "book.epub"), "--list-chapters")
    assert code == 2 and "pip install 'orator[gui]'" in one_error_line(err)
    (tmp_path / "notes.md").write_text("# One\n\nText.\n\n# Two\n\nMore.\n", encoding="utf-8")
    code, out, _ = run(capsys, str(tmp_path / "notes.md"), "--list-chapters")
    assert code == 0 and out.splitlines()[1:] == ["    1. One", "    2. Two"]


def test_a_killed_export_run_again_gives_the_file_an_uninterrupted_one_gives(tiny_model_dir, tmp_path):
    sentences = [f"Line {i} of the story, told once." for i in range(24)]
    (tmp_path / "story.txt").write_text("\n\n".join(" ".join(sentences[i:i + 3]) for i in range(0, 24, 3)),
                                        encoding="utf-8")
    model = tiny_model_dir("custom_voice")

    def args(folder: str, cache: str) -> list[str]:
        return ["story.txt", "--voice", "vivian", "--format", "opus", "-o", f"{folder}/", "--model", str(model),
                "--max-frames", "3", "--seed", "9", "--library", str(tmp_path / "voices"), "--cache-dir", cache]

    whole = export_process(*args("whole", "cache-a"), cwd=tmp_path)
    assert whole.wait(timeout=300) == 0, whole.stderr.read()

    killed = export_process(*args("resumed", "cache-b"), cwd=tmp_path)
    for line in killed.stderr:
        if "% · sentence" in line:
            break
    killed.kill()  # SIGKILL: no clean-up runs
    killed.wait(timeout=60)
    assert not (tmp_path / "resumed" / "story.opus").exists()
    assert leftovers(tmp_path / "resumed")  # a kill runs no clean-up: its temporary file is still there

    again = export_process(*args("resumed", "cache-b"), cwd=tmp_path)
    assert again.wait(timeout=300) == 0, again.stderr.read()
    assert (tmp_path / "resumed" / "story.opus").read_bytes() == (tmp_path / "whole" / "story.opus").read_bytes()
    assert leftovers(tmp_path / "resumed") == []
