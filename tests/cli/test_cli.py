"""``python main.py say``, used as a new user would: a real process against tiny checkpoints.

The happy paths and a bad model path run ``main.py`` in a subprocess; the other refusals call
``main.main`` in-process (same parser, same exit codes, faster).
"""

from __future__ import annotations

import io
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf

import main
from engine import Voice
from engine.core.chunks import SAMPLE_RATE, SAMPLES_PER_FRAME

MAIN = Path(__file__).resolve().parents[2] / "main.py"
TEXT = "Good morning. Shall we go?"  # two sentences, one segment (engine.core.text.segments)
PCM16_STEP = 1 / 32768


def say(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(MAIN), "say", *args], cwd=cwd, capture_output=True, text=True,
                          timeout=300)


def test_preset_voice_to_wav_matches_the_engine(tiny_model_dir, tiny_engine, tmp_path):
    model = tiny_model_dir("custom_voice")
    result = say(TEXT, "--model", str(model), "--voice", "vivian", "--language", "english",
                 "--out", "hello.wav", "--seed", "7", "--max-frames", "4", "--device", "cpu", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "hello.wav" in result.stdout and "x real time" in result.stdout and "s of audio" in result.stdout
    samples, rate = sf.read(tmp_path / "hello.wav", dtype="float32")
    assert rate == SAMPLE_RATE and samples.ndim == 1

    eng = tiny_engine("custom_voice")  # the plan say loads: the machine's default
    assert f"plan: {eng.execution_plan.summary().split(' (')[0]}" in result.stdout
    # say streams, as the studio reads: the same chunks from the engine alone
    chunks = list(eng.stream(TEXT, Voice.preset("vivian", "english"), sampling=replace(eng.defaults, seed=7),
                             max_frames=4))
    expected = np.concatenate([c.samples for c in chunks])
    frames = sum(c.n_frames for c in chunks)
    assert frames <= 4  # one segment of two sentences, at most 4 frames
    assert samples.shape == (frames * SAMPLES_PER_FRAME,)
    np.testing.assert_allclose(samples, np.clip(expected, -1, 1), atol=1.5 * PCM16_STEP)
    # the user hears of a cut once, in words, and sees no compiler or library noise
    cut = frames == 4
    assert result.stderr.count("cut short") == int(cut) and "cut at its frame budget" not in result.stderr
    assert "Warning" not in result.stderr and "Traceback" not in result.stderr, result.stderr


def test_designed_voice_to_flac(tiny_model_dir, tmp_path):
    out = tmp_path / "design.flac"
    result = say("Hello.", "--model", str(tiny_model_dir("voice_design")), "--design", "a calm low voice",
                 "--greedy", "--max-frames", "3", "--out", str(out), cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    info = sf.info(out)
    assert (info.format, info.samplerate, info.channels) == ("FLAC", SAMPLE_RATE, 1)
    assert 0 < info.frames <= 3 * SAMPLES_PER_FRAME and info.frames % SAMPLES_PER_FRAME == 0


def test_cloned_voice_from_a_recording(tiny_model_dir, tmp_path):
    t = np.arange(2 * SAMPLE_RATE) / SAMPLE_RATE
    sf.write(tmp_path / "ref.wav", 0.3 * np.sin(2 * np.pi * 220 * t), 16000)  # another rate: resampled
    result = say("Hello.", "--model", str(tiny_model_dir("base")), "--clone", "ref.wav", "--ref-text",
                 "A short reference.", "--seed", "1", "--max-frames", "3", "--out", "clone.wav", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    samples, rate = sf.read(tmp_path / "clone.wav")
    assert rate == SAMPLE_RATE and 0 < len(samples) <= 3 * SAMPLES_PER_FRAME


def test_bad_model_path_is_one_clear_line(tmp_path):
    result = say("Hello.", "--model", str(tmp_path / "missing-model"), "--voice", "vivian", cwd=tmp_path)
    assert result.returncode == 2
    assert "Traceback" not in result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "error:" in lines[0] and "missing-model" in lines[0] and "does not exist" in lines[0]
    assert not (tmp_path / "out.wav").exists()


def run_in_process(capsys, *args: str) -> tuple[int, str, str]:
    code = main.main(["say", *args])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_list_voices(tiny_model_dir, tiny_engine, capsys):
    code, out, _ = run_in_process(capsys, "--model", str(tiny_model_dir("custom_voice")), "--list-voices")
    assert code == 0
    eng = tiny_engine("custom_voice")
    assert f"speakers: {', '.join(eng.speakers)}" in out
    assert f"languages: {', '.join(eng.languages)}" in out
    code, out, _ = run_in_process(capsys, "--model", str(tiny_model_dir("base")), "--list-voices")
    assert code == 0 and "speakers: none" in out and "--clone" in out


@pytest.mark.parametrize(("args", "message"), [
    (["Hi.", "--voice", "nobody"], "unknown speaker 'nobody'"),
    (["Hi.", "--voice", "vivian", "--language", "klingon"], "unsupported language 'klingon'"),
    (["Hi.", "--voice", "vivian", "--instruct", "whisper"], "does not support style instructions"),
    (["Hi."], "choose a voice with --voice NAME: this model has"),
    (["Hi.", "--design", "a deep voice"], "needs a VoiceDesign model"),
])
def test_voice_errors_exit_2_with_the_engine_message(tiny_model_dir, capsys, tmp_path, args, message):
    out = tmp_path / "x.wav"
    code, _, err = run_in_process(capsys, *args, "--model", str(tiny_model_dir("custom_voice")), "--out", str(out))
    assert code == 2 and message in err and err.count("\n") == 1
    assert not out.exists()


@pytest.mark.parametrize(("codes", "message"), [
    (np.full((20, 16), 4096, dtype=np.int64), "codes run from 4096 to 4096; codes are 0 to 2047"),
    (np.zeros((100_000, 16), dtype=np.int64), "100000 frames; at most 2032 fit a prompt"),
])
def test_a_voice_file_no_model_can_use_exits_2_with_one_line(tiny_model_dir, tiny_engine, capsys, tmp_path, codes,
                                                              message):
    from safetensors.numpy import save_file

    from engine.core.voice_file import FORMAT_KEY, FORMAT_VERSION

    width = tiny_engine("base").config.talker_config.hidden_size
    save_file({"speaker_embedding": np.ones(width, dtype=np.float32), "ref_codes": codes}, str(tmp_path / "bad.voice"),
              metadata={FORMAT_KEY: FORMAT_VERSION, "kind": "clone", "language": "auto", "ref_text": "Hi there.",
                        "embedding_dim": str(width)})
    out = tmp_path / "x.wav"
    code, _, err = run_in_process(capsys, "Hi.", "--voice-file", str(tmp_path / "bad.voice"), "--model",
                                  str(tiny_model_dir("base")), "--out", str(out))
    assert code == 2 and message in err and err.count("\n") == 1 and "Traceback" not in err
    assert not out.exists()


@pytest.mark.parametrize(("args", "message"), [
    (["   ", "--voice", "vivian"], "no text to speak"),
    (["Hi.", "--voice", "vivian", "--out", "x.mp3"], "use a .wav or .flac"),
    (["Hi.", "--voice", "vivian", "--out", "no/such/folder/x.wav"], "does not exist"),
    (["Hi.", "--voice", "vivian", "--ref-text", "words"], "give --clone too"),
    (["Hi.", "--design", "calm", "--instruct", "slowly"], "give --voice too"),
])
def test_input_errors_exit_2_before_loading_a_model(capsys, tmp_path, monkeypatch, args, message):
    monkeypatch.chdir(tmp_path)
    code, out, err = run_in_process(capsys, *args, "--model", str(tmp_path / "never-read"))
    assert code == 2 and message in err and "loaded" not in out


def test_text_from_standard_input(tiny_model_dir, capsys, tmp_path, monkeypatch):
    monkeypatch.setattr(sys, "stdin", io.StringIO("Read from a pipe."))
    out = tmp_path / "stdin.wav"
    code, printed, err = run_in_process(capsys, "-", "--model", str(tiny_model_dir("custom_voice")), "--voice",
                                        "aiden", "--greedy", "--max-frames", "2", "--out", str(out))
    assert code == 0, err
    assert f"wrote {out}" in printed and sf.info(out).frames == 2 * SAMPLES_PER_FRAME


def test_bad_frame_count_is_an_argument_error(capsys):
    with pytest.raises(SystemExit) as exit_info:
        main.main(["say", "Hi.", "--model", "m", "--max-frames", "0"])
    assert exit_info.value.code == 2 and "at least 1" in capsys.readouterr().err


def test_segment_chars_chooses_how_many_generations_a_text_is(tiny_model_dir, tmp_path, capsys):
    """TEXT's two sentences are one segment by default (4 frames at most), two with ``--segment-chars 0``."""
    lengths = []
    for extra in ([], ["--segment-chars", "0"]):
        out = tmp_path / f"seg{len(extra)}.wav"
        assert main.main(["say", TEXT, "--model", str(tiny_model_dir("custom_voice")), "--voice", "aiden",
                          "--greedy", "--max-frames", "4", "--out", str(out), *extra]) == 0
        lengths.append(len(sf.read(out, dtype="float32")[0]))
    assert lengths == [4 * SAMPLES_PER_FRAME, 8 * SAMPLES_PER_FRAME]


@pytest.mark.parametrize("value", ["5", "-1", "100000", "ten", "2.5"])
def test_a_segment_target_that_is_no_length_is_an_argument_error(capsys, value):
    with pytest.raises(SystemExit) as exit_info:
        main.main(["say", "Hi.", "--model", "m", "--segment-chars", value])
    err = capsys.readouterr().err
    assert exit_info.value.code == 2 and "--segment-chars" in err and ("segment target" in err or "number" in err)
