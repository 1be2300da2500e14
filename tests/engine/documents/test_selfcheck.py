"""The self-test's document step: every reader opens its tiny file, and a broken reader is named."""

import pytest

from engine.documents import DocumentError, pdf_worker
from engine.documents.selfcheck import check_readers


def test_every_reader_reads_its_file(tmp_path):
    assert check_readers(tmp_path) == ["txt", "md", "html", "epub", "pdf", "docx"]


def test_a_broken_reader_is_named(tmp_path, monkeypatch):
    monkeypatch.setattr(pdf_worker, "worker_command", lambda: [str(tmp_path / "no-such-reader")])
    with pytest.raises(DocumentError, match="the pdf reader failed"):
        check_readers(tmp_path)
