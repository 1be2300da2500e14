"""``python main.py export --loudness``: one gain for the whole book, measured in a first pass, the same in every
chapter file, reaching the target under the ceiling as an independent meter (pyloudnorm, soxr-oversampled true
peak) hears it; and the level as spoken when it is not asked for."""

from __future__ import annotations

import math
import re

import numpy as np
import pyloudnorm
import soundfile as sf
import soxr

import main

PARAGRAPH = ("The rain had stopped by the time they reached the harbour. Nobody spoke for a while. Then the old man "
             "pointed at the lighthouse and laughed.")
BOOK = "\n\n".join(["Chapter 1", PARAGRAPH, "Chapter 2", PARAGRAPH + " " + PARAGRAPH]) + "\n"


def export(argv: list[str], capsys) -> tuple[int, str]:
    code = main.main(["export", *argv])
    return code, capsys.readouterr().err


def chapter_files(folder) -> list[np.ndarray]:
    return [sf.read(path, dtype="float32")[0] for path in sorted(folder.glob("*.flac"))]


def test_one_gain_for_the_whole_book_reaches_the_target_in_every_chapter_file(tiny_model_dir, tmp_path, capsys):
    (tmp_path / "book.txt").write_text(BOOK, encoding="utf-8")
    common = [str(tmp_path / "book.txt"), "--voice", "vivian", "--per-chapter",
              "--format", "flac", "--model", str(tiny_model_dir()), "--max-frames", "6", "--seed", "2",
              "--library", str(tmp_path / "voices"), "--cache-dir", str(tmp_path / "cache")]
    code, err = export([*common, "--output", str(tmp_path / "plain")], capsys)
    assert code == 0, err
    plain = chapter_files(tmp_path / "plain")
    # not asked for: the levels as spoken, and reported as an independent meter hears them
    said = re.search(r"^orator export: book\.txt: loudness (-?\d+\.\d) LUFS, true peak -?\d+\.\d dBTP, "
                     r"RMS (-?\d+\.\d) dB \(as spoken\)$", err, re.MULTILINE)
    assert said, err
    whole = np.concatenate(plain).astype(np.float64)
    assert abs(float(said.group(1)) - measured(plain)[0]) <= 0.5
    assert abs(float(said.group(2)) - 10 * math.log10(np.mean(whole ** 2))) <= 0.1

    code, err = export([*common, "--output", str(tmp_path / "loud"), "--loudness", "-18"], capsys)
    assert code == 0, err
    loud = chapter_files(tmp_path / "loud")
    assert len(loud) == len(plain) == 2

    # the same gain in each chapter file: the book's, not each chapter's own
    gains = [float(np.dot(b, a) / np.dot(a, a)) for a, b in zip(plain, loud, strict=True)]
    assert abs(gains[0] - gains[1]) < 1e-3 * gains[0]
    for a, b in zip(plain, loud, strict=True):
        assert np.allclose(b, a * gains[0], atol=2 / 32768)

    lufs, peak = measured(loud)
    assert abs(lufs + 18) <= 0.5 and peak <= -1.0
    assert re.search(r"orator export: book\.txt: loudness -18\.0 LUFS, true peak -?\d+\.\d dBTP "
                     r"\(target -18 LUFS, -1 dBTP\)$", err, re.MULTILINE), err

    # -5 LUFS would take the peaks past the ceiling: the ceiling wins, and the report says what was reached
    code, err = export([*common, "--output", str(tmp_path / "louder"), "--loudness", "-5"], capsys)
    assert code == 0, err
    lufs, peak = measured(chapter_files(tmp_path / "louder"))
    assert peak <= -1.0 and lufs < -5.5
    said = re.search(r"loudness (-?\d+\.\d) LUFS, .*\(target -5 LUFS, -1 dBTP\); the true-peak ceiling kept it "
                     r"from the target", err)
    assert said, err
    assert abs(float(said.group(1)) - lufs) <= 0.5


def measured(files: list[np.ndarray]) -> tuple[float, float]:
    """Integrated loudness (pyloudnorm) and true peak (eightfold soxr) of the chapter files end to end."""
    whole = np.concatenate(files).astype(np.float64)
    lufs = pyloudnorm.Meter(24000).integrated_loudness(whole)
    peak = 20 * math.log10(float(np.max(np.abs(soxr.resample(whole, 24000, 192000, quality="VHQ")))))
    return lufs, peak


def test_a_bad_loudness_is_one_clear_line_before_any_model_loads(tmp_path, capsys):
    (tmp_path / "book.txt").write_text(BOOK, encoding="utf-8")
    code, err = export([str(tmp_path / "book.txt"), "--voice", "vivian", "--model", str(tmp_path / "none"),
                        "--loudness", "very loud"], capsys)
    assert code == 2
    assert err.strip().count("\n") == 0 and "loudness 'very loud'" in err


def test_without_the_cache_the_first_pass_keeps_its_speech_in_a_temporary_one_removed_after(
        tiny_model_dir, tmp_path, capsys, monkeypatch):
    import tempfile

    (tmp_path / "book.txt").write_text(BOOK, encoding="utf-8")
    temp = tmp_path / "tmp"
    temp.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(temp))
    code, err = export([str(tmp_path / "book.txt"), "--voice", "vivian", "--output", str(tmp_path / "book.wav"),
                        "--model", str(tiny_model_dir()), "--max-frames", "6", "--seed", "2", "--no-cache",
                        "--library", str(tmp_path / "voices"), "--loudness", "broadcast"], capsys)
    assert code == 0, err
    lufs, peak = measured([sf.read(tmp_path / "book.wav", dtype="float32")[0]])
    assert abs(lufs + 23) <= 0.5 and peak <= -1.0
    assert list(temp.iterdir()) == []


def test_the_audiobook_preset_meets_acx_in_every_chapter_file_with_room_tone_at_its_ends(tiny_model_dir, tmp_path,
                                                                                         capsys):
    """ACX: RMS between -23 and -18 dB and peaks at most -3 dB in each file, as numpy measures them; 0.5 to 1 s of
    room tone (silence) before the speech and 1 to 5 s after it; the figures reached reported."""
    (tmp_path / "book.txt").write_text(BOOK, encoding="utf-8")
    code, err = export([str(tmp_path / "book.txt"), "--voice", "vivian", "--per-chapter", "--format", "flac",
                        "--model", str(tiny_model_dir()), "--max-frames", "20", "--seed", "2",
                        "--library", str(tmp_path / "voices"), "--no-cache", "--output", str(tmp_path / "acx"),
                        "--loudness", "audiobook"], capsys)
    assert code == 0, err
    files = chapter_files(tmp_path / "acx")
    assert len(files) == 2
    floor = 10 ** (-60 / 20)  # ACX's noise floor: anything quieter is room tone
    for audio in files:
        wide = audio.astype(np.float64)
        rms = 10 * math.log10(np.mean(wide ** 2))
        assert -23.0 <= rms <= -18.0
        assert 20 * math.log10(np.max(np.abs(wide))) <= -3.0
        assert independent_true_peak(wide) <= -3.0
        heard = np.flatnonzero(np.abs(audio) > floor)
        lead, tail = heard[0] / 24000, (audio.size - 1 - heard[-1]) / 24000
        assert 0.5 <= lead <= 1.0 and 1.0 <= tail <= 5.0
        assert not np.any(audio[:13200]) and not np.any(audio[-24000:])  # true silence, not noise
    said = re.search(r"^orator export: book\.txt: loudness RMS (-?\d+\.\d) dB, (-?\d+\.\d) LUFS, true peak "
                     r"(-?\d+\.\d) dBTP \(target RMS -23 to -18 dB, -3 dBTP\)$", err, re.MULTILINE)
    assert said, err
    whole = np.concatenate(files).astype(np.float64)
    assert abs(float(said.group(1)) - 10 * math.log10(np.mean(whole ** 2))) <= 0.1
    assert abs(float(said.group(2)) - pyloudnorm.Meter(24000).integrated_loudness(whole)) <= 0.5
    assert "off target" not in err


def independent_true_peak(samples: np.ndarray) -> float:
    return 20 * math.log10(float(np.max(np.abs(soxr.resample(samples, 24000, 192000, quality="VHQ")))))
