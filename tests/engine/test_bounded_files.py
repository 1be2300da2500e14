"""The bounded whole-file reader that every small user-named file goes through."""

import os

import pytest

from engine.bounded_files import FileReadError, read_bytes, read_text


def test_a_file_within_its_bound_is_read_whole(tmp_path):
    path = tmp_path / "rules.json"
    path.write_bytes(b"x" * 100)
    assert read_bytes(path, 100, "the rules file") == b"x" * 100


def test_a_file_over_its_bound_is_refused(tmp_path):
    path = tmp_path / "big.txt"
    path.write_bytes(b"y" * 10_000)
    with pytest.raises(FileReadError, match=r"the key file .*big.txt is larger than 1000 bytes"):
        read_bytes(path, 1000, "the key file")


def test_megabyte_bounds_are_said_in_mebibytes(tmp_path):
    path = tmp_path / "huge.srt"
    with open(path, "wb") as f:
        f.truncate((2 << 20) + 1)
    with pytest.raises(FileReadError, match="larger than 2 MiB"):
        read_bytes(path, 2 << 20, "the subtitle file")


def test_a_missing_file_and_a_folder_say_why(tmp_path):
    with pytest.raises(FileReadError, match=r"cannot read the manifest .*nothing.json: No such file"):
        read_bytes(tmp_path / "nothing.json", 10, "the manifest")
    with pytest.raises(FileReadError, match="cannot read the manifest"):
        read_bytes(tmp_path, 10, "the manifest")


@pytest.mark.skipif(not os.path.exists("/dev/zero"), reason="needs /dev/zero")
def test_an_endless_device_costs_only_its_bound():
    with pytest.raises(FileReadError, match="larger than 64 bytes"):
        read_bytes("/dev/zero", 64, "the API key file")


def test_text_is_utf8_with_its_byte_order_mark_dropped(tmp_path):
    path = tmp_path / "t.txt"
    path.write_bytes("\ufeffключ".encode())
    assert read_text(path, 100, "the key file") == "ключ"
    path.write_bytes(b"\xff\xfe\x00k")
    with pytest.raises(FileReadError, match="is not UTF-8 text"):
        read_text(path, 100, "the key file")
