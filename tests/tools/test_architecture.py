"""docs/architecture.md lists every module of the tree with its docstring's first sentence (tools/architecture.py)."""

from __future__ import annotations

import pytest

from tools import architecture


def test_every_module_has_a_docstring():
    missing = architecture.missing_docstrings()
    assert not missing, f"modules without a module docstring (say what each is for): {missing}"


def test_the_committed_module_list_is_the_generated_one():
    page = architecture.PAGE.read_text(encoding="utf-8")
    assert architecture.render(page) == page, (
        "docs/architecture.md's module list differs from the tree's modules and docstrings: "
        "run python -m tools.architecture")


def test_every_module_has_one_line():
    block = architecture.module_list()
    for path in architecture.module_files():
        assert block.count(f"- `{path.as_posix()}`:") == 1, path


def test_the_first_sentence_ends_at_a_sentence_not_at_a_name_or_an_abbreviation():
    text = """Voices (e.g. ``engine.core.voice``): "Mr. Darcy, Esq." and (32, 64, ... 512) kept. Then more.

    Another paragraph."""
    assert architecture.first_sentence(text) == (
        'Voices (e.g. ``engine.core.voice``): "Mr. Darcy, Esq." and (32, 64, ... 512) kept.')
    assert architecture.first_sentence("No period at all\nacross two lines") == "No period at all across two lines"


def test_a_long_sentence_drops_its_asides_then_is_cut_at_a_clause():
    assert architecture.shorten("short.", limit=20) == "short."
    assert architecture.shorten("The codec (channels-last, as cuDNN wants) in one pass.", limit=30) == (
        "The codec in one pass.")
    cut = architecture.shorten("The one reader: text, its ``a, b`` names, its chapters, and the rest of it.", limit=50)
    assert cut == "The one reader: text, its ``a, b`` names…"
    assert len(cut) <= 50


def test_a_page_without_markers_is_refused():
    with pytest.raises(SystemExit, match="marker"):
        architecture.render("# no markers here\n")
