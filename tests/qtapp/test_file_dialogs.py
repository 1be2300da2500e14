"""Where the file dialogs start: the folder last used, else the user's Documents folder, else home; never the
folder the program runs from (its source folder, for a user who started it with scripts/run.sh)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from PySide6.QtWidgets import QFileDialog


@pytest.fixture
def home(tmp_path, monkeypatch):
    """A home of this test's own (platformdirs finds Documents there), and a working folder that is neither."""
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / ".config"))
    monkeypatch.delenv("XDG_DOCUMENTS_DIR", raising=False)
    source = tmp_path / "orator-source"
    source.mkdir()
    monkeypatch.chdir(source)
    return home


@pytest.fixture
def asked(monkeypatch):
    """The folder each file dialog was opened in; every dialog is cancelled."""
    starts = []

    def record(parent, caption, folder="", *args, **kwargs):
        starts.append(Path(folder) if Path(folder).is_dir() else Path(folder).parent)
        return "", ""

    monkeypatch.setattr(QFileDialog, "getOpenFileName", record)
    monkeypatch.setattr(QFileDialog, "getSaveFileName", record)
    return starts


def menu_item(window, menu: str, item: str):
    entries = next(a.menu() for a in window.menuBar().actions() if a.text() == menu)
    return next(a for a in entries.actions() if a.text() == item)


def test_open_starts_in_documents_then_in_the_folder_last_used(qtbot, open_window, home, asked, tmp_path):
    window = open_window(loaded=True)
    open_item = menu_item(window, "&File", "&Open…")
    open_item.trigger()
    assert asked[-1] == home  # no Documents folder yet: home
    (home / "Documents").mkdir()
    open_item.trigger()
    assert asked[-1] == home / "Documents"
    books = tmp_path / "books"
    books.mkdir()
    (books / "tale.txt").write_text("Once upon a time.", encoding="utf-8")
    assert window.open_path(books / "tale.txt")
    open_item.trigger()
    assert asked[-1] == books.resolve()
    window.documents.new_document()
    menu_item(window, "&File", "Save &As…").trigger()
    assert asked[-1] == books.resolve()  # an untitled text is offered where the last document was
    assert all(Path(os.getcwd()) != folder for folder in asked)


def test_a_folder_that_is_gone_is_skipped(qtbot, open_window, home, asked, tmp_path):
    window = open_window(loaded=True)
    (home / "Documents").mkdir()
    window.settings.recent_files = [str(tmp_path / "gone" / "old.txt")]
    menu_item(window, "&File", "&Open…").trigger()
    assert asked[-1] == home / "Documents"


def test_voice_files_are_imported_from_the_folder_last_used(qtbot, open_window, home, asked, tmp_path):
    window = open_window(loaded=True)
    window.library_panel.import_voice()
    assert asked[-1] == home
    (tmp_path / "books").mkdir()
    (tmp_path / "books" / "tale.txt").write_text("Once.", encoding="utf-8")
    assert window.open_path(tmp_path / "books" / "tale.txt")
    window.library_panel.import_voice()
    assert asked[-1] == (tmp_path / "books").resolve()
