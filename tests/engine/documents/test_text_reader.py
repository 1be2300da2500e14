"""Markdown: no markup symbol is read, headings are structure, front matter gives title and author."""

from engine.documents import load_document


def test_markdown_markup_is_not_read(tmp_path):
    path = tmp_path / "notes.md"
    path.write_text("---\ntitle: \"The Notes\"\nauthor: Ann\n---\n# Top\n\nSome *emphasis*, __bold__, `code`, a "
                    "[link](http://e.example) and ![an image](i.png).\n\n## 2.1. Table\n\n| a | b |\n|---|---|\n"
                    "| 1 | 2 |\n\n```\nfenced = code\n```\n\n> quoted\n\n<p align=\"center\"><img src=\"x.png\"></p>\n")
    doc = load_document(path)
    assert (doc.title, doc.author) == ("The Notes", "Ann")
    assert doc.text.split("\n\n") == ["Top", "Some emphasis, bold, code, a link and .", "2.1 Table", "a, b", "1, 2",
                                      "fenced = code", "quoted"]
    assert [(h.title, h.level) for h in doc.headings] == [("Top", 1), ("2.1 Table", 2)]
    assert [c.title for c in doc.chapters] == ["Top", "2.1 Table"]
