"""``python main.py voiceover`` through ``main.main``, on the tiny checkpoint: real-world-shaped subtitle files in,
a track out, checked on the track itself. The tiny random model speaks noise, so onsets are found by energy;
loudness is measured by pyloudnorm and true peak from the track resampled eightfold by soxr, not by the code
under test."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import numpy as np
import pyloudnorm
import pytest
import soundfile as sf
import soxr

import main
from engine.production.voiceover.cues import read_subtitles

SRT = """\ufeff1
00:00:00,500 --> 00:00:02,000
<i>Hello</i> there, this is the first line.

2
00:00:01,500 --> 00:00:03,000
[voice: Ryan] An overlapping second line.

3
00:00:04,000 --> 00:00:04,200
A cue far too short for this rather long line.

4
00:00:6,00 --> 00:00:07,000
A malformed timestamp.

5
00:00:08,000 --> 00:00:09,500
Café, naïve, 日本語.
"""
VTT = """WEBVTT

NOTE a hand-made file

1
00:00.400 --> 00:02.000 align:start
<v Ryan>Good morning to <b>you</b>.</v>

2
00:00:03.000 --> 00:00:05.000
Straße &amp; crème brûlée.

3
00:00:05.500 --> 00:00:06.500
00:00:06,x --> broken
"""
ONSET_TOLERANCE_S = 0.05
WINDOW_S = 0.005


def run(argv: list[str], capsys) -> tuple[int, str, str]:
    code = main.main(["voiceover", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def model_args(tiny_model_dir, tmp_path: Path) -> list[str]:
    return ["--model", str(tiny_model_dir()), "--voice", "vivian", "--max-frames", "16", "--seed", "3",
            "--device", "cpu", "--library", str(tmp_path / "no-library")]


def onsets(track: np.ndarray, rate: int) -> list[float]:
    """Where sound starts after at least 50 ms of silence, by the energy of 5 ms windows."""
    window = round(WINDOW_S * rate)
    count = track.size // window
    energy = np.mean(track[:count * window].reshape(count, window).astype(np.float64) ** 2, axis=1)
    loud = energy > 10 ** (-60 / 10)
    found, quiet = [], 10 ** 9
    for i, is_loud in enumerate(loud):
        if is_loud and quiet * WINDOW_S >= 0.05:
            found.append(i * WINDOW_S)
        quiet = 0 if is_loud else quiet + 1
    return found


def peak_db(samples: np.ndarray) -> float:
    peak = float(np.max(np.abs(samples))) if samples.size else 0.0
    return 20 * math.log10(peak) if peak > 0 else -math.inf


def true_peak_dbtp(samples: np.ndarray, rate: int) -> float:
    return peak_db(soxr.resample(samples.astype(np.float64), rate, rate * 8, quality="VHQ"))


def reported(err: str) -> dict[int, str]:
    return {int(m.group(1)): m.group(2) for m in re.finditer(r"orator voiceover: cue (\d+): (.*)", err)}


def test_an_srt_is_voiced_on_its_cues(tiny_model_dir, tmp_path, capsys):
    source = tmp_path / "film.srt"
    source.write_text(SRT, encoding="utf-8")
    out, clips = tmp_path / "out" / "voice.wav", tmp_path / "clips"
    code, stdout, err = run([str(source), "--out", str(out), "--clips", str(clips), *model_args(tiny_model_dir,
                                                                                                 tmp_path)], capsys)
    assert code == 0, err
    track, rate = sf.read(out, dtype="float32")
    assert rate == 24000

    # the malformed timing loses its cue, said by cue and line
    assert "cue 4 (line 14): cannot read the timing" in err
    # one clip per voiced cue, named by its number
    assert sorted(p.name for p in clips.iterdir()) == ["001.wav", "002.wav", "003.wav", "005.wav"]

    # what was pushed and what overran is reported by cue
    said = reported(err)
    assert "cue 1 was still speaking" in said[2]
    assert "overruns its end by" in said[3] and "sped up 1.25x" in said[3]
    assert "late" not in said.get(5, "")

    # the subtitles beside the track hold where each line is heard; on the track, each line starts there
    actual = read_subtitles(out.with_suffix(".srt")).cues
    assert len(actual) == 4
    # under the numbers the report and the clips give them
    timed = out.with_suffix(".srt").read_text(encoding="utf-8")
    assert re.findall(r"^(\d+)\n\d\d:", timed, re.MULTILINE) == ["1", "2", "3", "5"]
    heard = onsets(track, rate)
    assert len(heard) == 4, heard
    for cue, onset in zip(actual, heard, strict=True):
        assert abs(onset - cue.start_s) <= ONSET_TOLERANCE_S
    # lines not pushed start on their own cues; the pushed one after the line before it ends, never over it
    assert abs(heard[0] - 0.5) <= ONSET_TOLERANCE_S and abs(heard[2] - 4.0) <= ONSET_TOLERANCE_S
    assert abs(heard[3] - 8.0) <= ONSET_TOLERANCE_S
    assert heard[1] > 1.5 + ONSET_TOLERANCE_S
    # silence between lines: nothing from where a line ends to where the next begins
    for before, after in zip(actual, actual[1:], strict=False):
        gap = track[round((before.end_s + 0.01) * rate):round((after.start_s - 0.01) * rate)]
        if gap.size:
            assert peak_db(gap) < -60
    # each clip is its line as the track has it
    for clip, cue in zip(sorted(clips.iterdir()), actual, strict=True):
        audio, _ = sf.read(clip, dtype="float32")
        first = round(cue.start_s * rate)
        assert np.allclose(audio, track[first:first + audio.size], atol=1 / 32768)

    # -16 LUFS under -1 dBTP, measured independently
    assert abs(pyloudnorm.Meter(rate).integrated_loudness(track.astype(np.float64)) + 16) <= 0.5
    assert true_peak_dbtp(track, rate) <= -1.0
    assert "loudness -1" in err
    assert f"wrote {out}" in stdout


def test_a_vtt_with_a_v_tag_is_voiced_at_48_khz_to_broadcast_loudness(tiny_model_dir, tmp_path, capsys):
    source = tmp_path / "talk.vtt"
    source.write_text(VTT, encoding="utf-8")
    out = tmp_path / "voice.flac"
    code, _, err = run([str(source), "--out", str(out), "--sample-rate", "48000", "--loudness", "broadcast",
                        *model_args(tiny_model_dir, tmp_path)], capsys)
    assert code == 0, err
    track, rate = sf.read(out, dtype="float32")
    assert rate == 48000
    # the third cue's text is a line that looks like a broken timing; it is said, as text
    actual = read_subtitles(out.with_suffix(".vtt")).cues
    assert [c.text for c in actual][:2] == ["Good morning to you.", "Straße & crème brûlée."]
    heard = onsets(track, rate)
    assert len(heard) == len(actual)
    for cue, onset in zip(actual, heard, strict=True):
        assert abs(onset - cue.start_s) <= ONSET_TOLERANCE_S
    assert abs(heard[0] - 0.4) <= ONSET_TOLERANCE_S
    assert abs(pyloudnorm.Meter(rate).integrated_loudness(track.astype(np.float64)) + 23) <= 0.5
    assert true_peak_dbtp(track, rate) <= -1.0


def test_a_voice_no_library_or_model_has_is_refused_before_anything_is_written(tiny_model_dir, tmp_path, capsys):
    source = tmp_path / "cast.srt"
    source.write_text("1\n00:00:01,000 --> 00:00:02,000\n[voice: Nobody] Hello.\n", encoding="utf-8")
    out = tmp_path / "out" / "voice.mp3"
    code, _, err = run([str(source), "--out", str(out), *model_args(tiny_model_dir, tmp_path)], capsys)
    assert code == 2
    assert "'Nobody'" in err and "Traceback" not in err
    assert not out.parent.exists() or not any(out.parent.iterdir())


def test_a_cast_maps_the_speakers_of_v_tags_to_voices(tiny_model_dir, tmp_path, capsys):
    named = ("WEBVTT\n\n00:00.500 --> 00:02.000\n<v Roger Bingham>Good evening.</v>\n\n"
             "00:02.500 --> 00:04.000\n<v Host>And welcome.</v>\n")
    source = tmp_path / "talk.vtt"
    source.write_text(named, encoding="utf-8")
    # without a cast, a speaker is a voice's own name: neither the library nor the model has this one
    code, _, err = run([str(source), "--out", str(tmp_path / "none.wav"), *model_args(tiny_model_dir, tmp_path)],
                       capsys)
    assert code == 2 and "neither a voice of the library" in err and not (tmp_path / "none.wav").exists()
    # each speaker cast, "Roger Bingham" by one of its words
    cast = tmp_path / "cast.txt"
    cast.write_text("# who speaks\nBingham = ryan\nHost = vivian\n", encoding="utf-8")
    out = tmp_path / "cast.wav"
    code, _, err = run([str(source), "--out", str(out), "--cast", str(cast), "--loudness", "off",
                        *model_args(tiny_model_dir, tmp_path)], capsys)
    assert code == 0, err
    # the same lines marked with the voices themselves give the same track, sample for sample
    direct = tmp_path / "direct.vtt"
    direct.write_text(named.replace("Roger Bingham", "ryan").replace("Host", "vivian"), encoding="utf-8")
    code, _, err = run([str(direct), "--out", str(tmp_path / "direct.wav"), "--loudness", "off",
                        *model_args(tiny_model_dir, tmp_path)], capsys)
    assert code == 0, err
    cast_track, _ = sf.read(out, dtype="float32")
    direct_track, _ = sf.read(tmp_path / "direct.wav", dtype="float32")
    assert np.array_equal(cast_track, direct_track)
    # a cast naming a voice nobody has stops the run before anything is written
    code, _, err = run([str(source), "--out", str(tmp_path / "bad.wav"), "--cast", "Bingham=Nobody, Host=vivian",
                        *model_args(tiny_model_dir, tmp_path)], capsys)
    assert code == 2 and "'Nobody'" in err and not (tmp_path / "bad.wav").exists()


def test_a_cast_that_cannot_be_read_is_one_line_before_any_model_loads(tmp_path, capsys):
    source = tmp_path / "a.vtt"
    source.write_text("WEBVTT\n\n00:01.000 --> 00:02.000\n<v Ann>Hello.\n", encoding="utf-8")
    code, _, err = run([str(source), "--out", str(tmp_path / "v.wav"), "--cast", "Ann=vivian, Bob",
                        "--model", str(tmp_path / "no-model"), "--voice", "vivian"], capsys)
    assert code == 2
    assert err.strip().splitlines() == [err.strip()] and "CHARACTER=VOICE" in err and "model" not in err


HOSTILE = {
    "binary.srt": bytes(range(256)) * 64,
    "order.srt": b"1\n00:00:05,000 --> 00:00:06,000\nB\n\n2\n00:00:01,000 --> 00:00:02,000\nA\n",
    "negative.srt": b"1\n-00:00:01,000 --> 00:00:02,000\nBefore the start.\n",
    "hours.vtt": b"WEBVTT\n\n100:00:00.000 --> 100:00:01.000\nA hundred hours in.\n",
    "huge.srt": b"1\n00:00:01,000 --> 00:00:02,000\n" + b"word " * (1 << 20),
    # in order, each cue short enough, but far more text than two hours can speak
    "talkative.srt": "".join(f"{i}\n{i // 3600:02d}:{i // 60 % 60:02d}:{i % 60:02d},000 --> "
                             f"{i // 3600:02d}:{i // 60 % 60:02d}:{i % 60:02d},900\n{'Blah blah. ' * 150}\n\n"
                             for i in range(1, 90)).encode(),
}


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_hostile_subtitles_get_a_clear_error_and_nothing_is_written(name, tmp_path, capsys):
    source = tmp_path / name
    source.write_bytes(HOSTILE[name])
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    # no model is loaded for a file refused: the model path does not even exist
    code, _, err = run([str(source), "--out", str(out_dir / "voice.wav"), "--clips", str(out_dir / "clips"),
                        "--model", str(tmp_path / "no-model"), "--voice", "vivian"], capsys)
    assert code == 2
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("orator voiceover: error: ") and name in lines[0]
    assert list(out_dir.iterdir()) == []


def test_an_output_that_cannot_be_written_exits_3(tmp_path, capsys):
    source = tmp_path / "a.srt"
    source.write_text("1\n00:00:01,000 --> 00:00:02,000\nHello.\n")
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    code, _, err = run([str(source), "--out", str(blocker / "voice.wav"), "--model", str(tmp_path / "m"),
                        "--voice", "vivian"], capsys)
    assert code == 3
    assert "is a file, not a folder" in err


@pytest.mark.parametrize("argv", [["--loudness", "loud"], ["--max-tempo", "5"], ["--sample-rate", "12345"],
                                  ["--out", "voice.ogg"]])
def test_bad_options_are_refused(argv, tmp_path, capsys):
    source = tmp_path / "a.srt"
    source.write_text("1\n00:00:01,000 --> 00:00:02,000\nHello.\n")
    out = ["--out", str(tmp_path / "voice.wav")] if argv[0] != "--out" else ["--out", str(tmp_path / argv[1])]
    try:
        code = main.main(["voiceover", str(source), *out, *(argv if argv[0] != "--out" else []),
                          "--model", str(tmp_path / "m"), "--voice", "vivian"])
    except SystemExit as e:
        code = e.code
    assert code == 2
    assert not list(tmp_path.glob("voice.*"))


def test_a_project_keeps_takes_across_runs_and_a_retake_speaks_only_its_cue(tiny_model_dir, tmp_path, capsys):
    source = tmp_path / "film.srt"
    source.write_text(SRT, encoding="utf-8")
    project, out = tmp_path / "project", tmp_path / "voice.wav"
    # levels as spoken: a loudness gain and limiter over the whole track would move the untouched lines too
    common = [str(source), "--out", str(out), "--project", str(project), "--loudness", "off",
              *model_args(tiny_model_dir, tmp_path)]
    code, _, err = run(common, capsys)
    assert code == 0, err
    assert re.findall(r"cue (\d+): speaking", err) == ["1", "2", "3", "5"]
    first, rate = sf.read(out, dtype="float32")

    # a second run, as after a restart: every line from its kept take, no model loaded, the same track
    code, _, err = run(common, capsys)
    assert code == 0, err
    assert not re.findall(r"cue \d+: speaking", err) and "loaded" not in err
    assert "4 of 4 cues from their kept takes" in err
    again, _ = sf.read(out, dtype="float32")
    assert np.array_equal(first, again)

    # a retake of cue 3 speaks it alone, with a new seed; the other lines stay as they were
    code, _, err = run([*common, "--retake", "3"], capsys)
    assert code == 0, err
    assert re.findall(r"cue (\d+): speaking", err) == ["3"]
    retaken, _ = sf.read(out, dtype="float32")
    saved = json.loads((project / "voiceover.json").read_text(encoding="utf-8"))
    takes = {cue["number"]: cue["takes"] for cue in saved["cues"]}
    assert [len(takes[n]) for n in (1, 2, 3, 5)] == [1, 1, 2, 1]
    assert takes[3][0]["seed"] == 3 and takes[3][1]["seed"] != 3
    cue3 = slice(round(4.0 * rate), round(5.5 * rate))
    assert not np.array_equal(first[cue3], retaken[cue3])
    untouched = slice(0, round(3.9 * rate))
    assert np.array_equal(retaken[untouched], first[untouched])  # cues 1 and 2, as they were


def test_retake_without_a_project_or_of_a_missing_cue_is_refused(tmp_path, capsys):
    source = tmp_path / "a.srt"
    source.write_text("1\n00:00:01,000 --> 00:00:02,000\nHello.\n")
    base = [str(source), "--out", str(tmp_path / "v.wav"), "--model", str(tmp_path / "m"), "--voice", "vivian"]
    code, _, err = run([*base, "--retake", "1"], capsys)
    assert code == 2 and "--project" in err
    code, _, err = run([*base, "--project", str(tmp_path / "p"), "--retake", "7"], capsys)
    assert code == 2 and "no cue 7" in err
    assert not (tmp_path / "v.wav").exists()


def test_a_track_beside_its_subtitles_never_overwrites_them(tiny_model_dir, tmp_path, capsys):
    source = tmp_path / "film.srt"
    text = "1\n00:00:00,500 --> 00:00:01,000\nA line longer than its cue.\n"
    source.write_text(text, encoding="utf-8")
    code, stdout, err = run([str(source), "--out", str(tmp_path / "film.wav"), "--loudness", "off",
                             *model_args(tiny_model_dir, tmp_path)], capsys)
    assert code == 0, err
    assert source.read_text(encoding="utf-8") == text
    timed = read_subtitles(tmp_path / "film.timed.srt").cues
    assert len(timed) == 1 and timed[0].start_s == 0.5 and timed[0].end_s > 1.0
    assert f"wrote {tmp_path / 'film.timed.srt'}" in stdout
    # off: the levels as spoken, still reported
    assert re.search(r"loudness -?\d+\.\d LUFS, true peak -?\d+\.\d dBTP, RMS -?\d+\.\d dB \(as spoken\)", err), err
