"""Markdown: no markup symbol is read, headings are structure, front matter gives title and author."""

from engine.documents import load_document


def test_markdown_markup_is_not_read(tmp_path):
    path = tmp_path / "notes.md"
    path.write_text("---\ntitle: \"The Notes\"\nauthor: Ann\n---\n# Top\n\nSome *emphasis*, __bold__, `code`, a "
                    "[link](http://e.example) and ![an image](i.png).\n\n## 2.1. Table\n\n| a | b |\n|---|---|\n"
                    "| 1 | 2 |\n\n```\nfenced = code\n```\n\n> quoted\n\n<p align=\"center\"><img src=\"x.png\"></p>\n")
    doc = load_document(path)
    assert (doc.title, doc.author) == ("The Notes", "Ann")
    assert doc.text.split("\n\n") == ["Top", "Some emphasis, bold, code, a link and .", "2.1 Table", "a: 1; b: 2",
                                      "fenced = code", "quoted"]
    assert [(h.title, h.level) for h in doc.headings] == [("Top", 1), ("2.1 Table", 2)]
    assert [c.title for c in doc.chapters] == ["Top", "2.1 Table"]


def test_plain_text_chapters_are_the_ones_export_finds(tmp_path):
    """One finder (engine/documents/text_chapters.py) for the studio and ``orator export``."""
    from engine.production.book_sources import load_book

    novel = tmp_path / "novel.txt"
    novel.write_text("The Title\n\nby Someone\n\n\nCHAPTER I.\nDown the Rabbit-Hole\n\nAlice was beginning to get\n"
                     "very tired.\n\nCHAPTER II\n\nThe Pool of Tears\n\n“Curiouser!” cried Alice.\n\n"
                     "Chapter 3 is where the caucus-race happens, a sentence and no heading at all, as it runs on "
                     "well past what a heading could hold, so it is read as the prose it is.\n\nEPILOGUE\n\nThe end.")
    doc = load_document(novel)
    titles = ["CHAPTER I. Down the Rabbit-Hole", "CHAPTER II. The Pool of Tears", "EPILOGUE"]
    assert [c.title for c in doc.chapters] == titles
    assert doc.text[doc.chapters[1].start:].startswith("CHAPTER II\n\nThe Pool of Tears")
    assert doc.text[doc.chapters[1].start:doc.chapters[1].end].endswith("read as the prose it is.")
    assert [c.title for c in load_book(novel).chapters] == ["novel", *titles]  # the front matter is a chapter there
