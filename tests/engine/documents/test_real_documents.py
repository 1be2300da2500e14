"""Real public documents (tests/data/documents/README.md): only the book's words, in reading order, with
tables, headings and chapters; no markup, no segment of dots or numbers, no word split or run together."""

import re
from functools import cache

import pytest

from engine.core.text.segments import split_segments
from engine.documents import load_document
from tests.engine.documents.helpers import DATA

FILES = sorted(p.name for p in DATA.iterdir()
               if p.suffix in (".html", ".epub", ".pdf", ".docx", ".md") and p.name != "README.md")
PDFS = [name for name in FILES if name.endswith(".pdf")]
# tags, comments, declarations and entities; "<name@example.org>" and "<file>" placeholders are the books' own
TAG_NAMES = "html|head|body|p|div|span|a|br|img|table|tr|td|th|h[1-6]|li|ul|ol|script|style|meta|link|title|pre|sup"
MARKUP = re.compile(rf"</?(?:{TAG_NAMES})\b[^>]*>|<!--|<\?|<!\[|DOCTYPE|xml version|\bhtml PUBLIC\b|"
                    r"&(?:nbsp|amp|quot|apos|#\d+|#x[0-9a-f]+);", re.IGNORECASE)
NUMBERS_ONLY = re.compile(r"(?=.*\d)[\d\s.,:;§()\[\]-]+")  # "6.1.", "12", ". . . 17", "[3]"
LETTERS = re.compile(r"[^\W\d_]+")


@cache
def document(name):
    return load_document(DATA / name)


@cache
def segments(name):
    return [s.text for s in split_segments(document(name).text)]


def test_every_format_has_a_real_fixture():
    assert {p.rsplit(".", 1)[1] for p in FILES} == {"html", "epub", "pdf", "docx", "md"}


@pytest.mark.parametrize("name", FILES)
def test_no_markup_is_read(name):
    assert not MARKUP.findall(document(name).text)
    assert document(name).warnings == []


@pytest.mark.parametrize("name", FILES)
def test_no_segment_is_only_dots_digits_or_section_numbers(name):
    lines = set(document(name).text.replace("\n\n", "\n").split("\n"))
    assert [s for s in segments(name) if NUMBERS_ONLY.fullmatch(s) and s in lines] == []
    wordless = [s for s in segments(name) if not LETTERS.search(s)]
    assert len(wordless) <= max(2, len(segments(name)) // 200), wordless  # ":-)", "< 0" are the book's own


@pytest.mark.parametrize("name", FILES)
def test_no_words_run_together_or_split(name):
    text = document(name).text
    words = LETTERS.findall(text)
    assert sum(len(w) > 25 for w in words) <= len(words) // 2000  # a CamelCase wiki page name may be that long
    assert "\x02" not in text and "\ufffe" not in text
    if name in PDFS:
        # "manip- ulation"; a suspended hyphen ("one- and two-page") is English
        assert re.findall(r"\b[a-z]{2,}- (?!and |or |to )[a-z]{2,}\b", text) == []


@pytest.mark.parametrize("name", FILES)
def test_chapters_and_headings_are_spans_of_the_text(name):
    doc = document(name)
    assert doc.chapters and doc.headings
    for chapter in doc.chapters:
        assert 0 <= chapter.start <= chapter.end <= len(doc.text) and chapter.title
    for heading in doc.headings:
        assert " ".join(doc.text[heading.start:heading.end].split()) == heading.title
    starts = [c.start for c in doc.chapters]
    assert starts == sorted(starts)


def in_order(text, *parts):
    positions = [text.find(p) for p in parts]
    assert -1 not in positions, [p for p, i in zip(parts, positions, strict=True) if i < 0]
    assert positions == sorted(positions)


def test_docbook_html_page():
    doc = document("debian-reference-ch08.en.html")
    assert doc.title == "Chapter 8. I18N and L10N"
    assert doc.text.startswith("Chapter 8: I18N and L10N\n\nMultilingualization (M17N)")
    # its h1 > h2 > h3 headings nest: chapter, sections, subsections
    assert [(c.title, c.level) for c in doc.chapters][:4] == [
        ("Chapter 8: I18N and L10N", 1), ("8.1 The locale", 2), ("8.1.1 Rationale for UTF-8 locale", 3),
        ("8.1.2 The reconfiguration of the locale", 3)]
    assert [c.title for c in doc.chapters if c.level == 2] == [
        "8.1 The locale", "8.2 The keyboard input", "8.3 The display output",
        "8.4 East Asian Ambiguous Character Width Characters"]
    assert len(doc.chapters) == 14
    assert "Prev" not in doc.text.split() and "Table of Contents" not in doc.text
    # a data table's rows, each cell said with its column's header
    in_order(doc.text, "Table 8.1. List of IBus and its engine packages\n\npackage: ibus; popcon: V:161, I:204; "
             "size: 1637; supported locale: input method framework using dbus\n\n", "8.3 The display output")


def test_publican_xhtml_with_declaration_and_doctype():
    doc = document("debian-handbook-sect.apt-get.html")
    assert doc.text.startswith("6.2 aptitude, apt-get, and apt Commands\n\nAPT is a vast project")
    assert "Download the ebook" not in doc.text and "Prev" not in doc.text.split()
    in_order(doc.text, "6.2.1 Initialization", "6.2.2 Installing and Removing", "6.2.3 System Upgrade")


def test_texinfo_page_reads_neither_its_generator_comment_nor_its_navigation():
    doc = document("m4-Arguments.html")
    assert doc.text.startswith("5.2 Arguments to macros\n\nMacros can have arguments.")
    assert "Texinfo" not in doc.text and "Next:" not in doc.text and "Free Documentation License" not in doc.text


def test_sphinx_page_reads_no_permalink_signs_or_sidebar():
    doc = document("developers-reference-scope.html")
    assert "¶" not in doc.text and "Quick search" not in doc.text and "Navigation" not in doc.text
    assert doc.text.startswith("1 Scope of This Document\n\nThe purpose of this document")


def test_epub_with_fragment_hrefs_reads_in_spine_order_with_its_chapter_titles():
    doc = document("live-manual.en.epub")
    assert (doc.title, doc.author) == ("Live Systems Manual", "Live Systems Project <debian-live@lists.debian.org>")
    titles = [c.title for c in doc.chapters]
    assert len(titles) > 150
    in_order(" | ".join(titles), "1 About this manual", "1.1 For the impatient", "1.2 Terms", "3 Installation")
    impatient = next(c for c in doc.chapters if c.title == "1.1 For the impatient")
    assert doc.text[impatient.start:].startswith("1.1 For the impatient\n\nWhile we believe")
    in_order(doc.text, "This manual serves as a single access point", "1.1 For the impatient",
             "3 Installation", "4 The basics")


def test_epub3_navigation_document():
    doc = document("developers-reference.epub")
    levels = {c.title: c.level for c in doc.chapters}
    assert levels["Scope of This Document"] == 1 and levels["Getting started"] == 2
    in_order(doc.text, "1 Scope of This Document", "2 Applying to Become a Member", "2.1 Getting started")


def test_pdf_that_pypdf_ran_together_reads_with_its_spaces():
    doc = document("debian-reference-pages-1-4-25-34.pdf")
    assert "is intended to provide a broad overview of the Debian system" in doc.text
    assert "isintendedto" not in doc.text
    assert [c.title for c in doc.chapters][:3] == ["GNU/Linux tutorials", "Console basics", "The shell prompt"]
    assert doc.text[doc.chapters[0].start:].startswith("Chapter 1: GNU/Linux tutorials")


def test_pdf_contents_headers_footnotes_and_paragraphs():
    doc = document("maint-guide-pages-1-16.pdf")
    assert ". . ." not in doc.text and "Contents" not in doc.text.split("\n\n")
    assert "Debian New Maintainers’ Guide 1 / 57" not in doc.text and "/ 57" not in doc.text
    paragraphs = doc.text.split("\n\n")
    wizard = next(p for p in paragraphs if p.startswith("One of the things that makes Debian"))
    assert wizard.endswith("but you certainly don’t need to be a wizard.")  # one paragraph, marker gone
    assert "The document assumes you are using a jessie or newer system." in doc.text  # the footnote, read after
    # marks in the body's type or smaller, after a word or a space, go with their notes' numbers; no other digit does
    assert "by other developers. You can contribute" in doc.text
    assert "(for instance, the filename ends in .Z or .zip)," in doc.text
    assert "\n\nThere are also some more specialized but similar packages" in doc.text
    assert "fhs-3.0.html" in doc.text and "version 0.9.12." in doc.text and "5.9.5 ”Adopting a package”" in doc.text
    in_order(doc.text, "Chapter 1: Getting started The Right Way", "1.1 Social dynamics of Debian",
             "Chapter 2: First steps", "2.2 Choose your program")


def test_pdf_index_page_and_section_running_headers_are_not_read():
    doc = document("debian-faq-pages-1-4-11-16-73.pdf")
    assert "CHAPTER 2. GETTING AND INSTALLING" not in doc.text
    assert "apt-doc, 36" not in doc.text  # the index
    assert "Permission is granted to make and distribute verbatim copies" in doc.text
    in_order(doc.text, "2.1 What is the latest version of Debian?", "2.5 Why does the official stable released "
             "CD-ROM contain symlinks for")


def test_docx_tables_and_headings():
    doc = document("debian-reference-ch02.docx")
    assert (doc.title, doc.author) == ("Debian Reference, Chapter 2. Debian package management", "Osamu Aoki")
    assert ("\n\npackage: dpkg; popcon: V:919, I:999; size: 5989; description: low level package management system "
            "for Debian (file based)\n\n") in doc.text
    in_order(doc.text, "Table 2.1. List of Debian package management tools", "package: dpkg; popcon:",
             "2.1 Debian package management prerequisites", "2.1.1 Package configuration")
    assert [(h.title, h.level) for h in doc.headings][:3] == [
        ("Chapter 2: Debian package management", 1), ("2.1 Debian package management prerequisites", 2),
        ("2.1.1 Package configuration", 3)]


def test_markdown_readme():
    doc = document("zstd-README.md")
    assert "Compressor name: zstd 1.5.1 -1; Ratio: 2.887; Compression: 530 MB/s; Decompress.: 1700 MB/s" in doc.text
    assert "\n\nCompressor name; Ratio" not in doc.text  # the header row is read in every row, not alone
    assert "**" not in doc.text and "](" not in doc.text and "`" not in doc.text and "travisDevBadge" not in doc.text
    assert [c.title for c in doc.chapters][:2] == ["Benchmarks", "The case for Small Data compression"]


def test_pdf_exponents_in_smaller_type_keep_their_digits():
    """pdfTeX sets exponents in smaller raised type: they were taken for footnote marks and deleted
    ("p = 2 − 2 − 1" for 2^448 − 2^224 − 1)."""
    doc = document("nettle-pages-2-92-93.pdf")
    assert "Curve25519 is an elliptic curve of Montgomery type, y2 = x3+486662x2+x (mod p), with p = 2255−19." \
        in doc.text
    assert "y2 = x3 + 156326x2 + x (mod p), with p = 2448 − 2224 − 1." in doc.text
    assert "This manual is placed in the public domain." in doc.text
    assert "Niels Möller" in doc.text and "¨" not in doc.text  # TeX's accent glyph joined to its letter


def test_texinfo_html_chapters_follow_its_headings():
    doc = document("gettext-manual-ch2.html")
    assert doc.title == "GNU gettext utilities: 2. The User's View"
    assert [(c.title, c.level) for c in doc.chapters][:3] == [
        ("2 The User's View", 1), ("2.1 Operating System Installation", 2),
        ("2.2 Setting the Locale Used by GUI Programs", 2)]
    assert "GNU gettext utilities" not in [c.title for c in doc.chapters]
    assert [(h.title, h.level) for h in doc.headings if h.title.startswith("2.3.")][:2] == [
        ("2.3.1 Locale Names", 3), ("2.3.2 Locale Environment Variables", 3)]


def test_pdf_definition_list_items_are_one_paragraph_each():
    """The Debian FAQ's list of releases: each term runs into its definition, whose next lines hang indented
    under it; an item was cut after its first line (and after a line PDFium ended with a stray accent)."""
    paragraphs = document("debian-faq-pages-1-4-11-16-73.pdf").text.split("\n\n")
    stable = next(p for p in paragraphs if p.startswith("release 11, a.k.a. the"))
    assert stable.endswith("it changes if major security or usability fixes are incorporated.")
    testing = next(p for p in paragraphs if p.startswith("the testing’ distribution, currently called bookworm"))
    assert testing.endswith("This distribution is updated more often than stable’, but not more often than unstable’.")
    assert not any(p.startswith(("if major security", "the next stable", "fit for release")) for p in paragraphs)
