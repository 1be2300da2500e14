"""Voiceover projects (engine.production.voiceover.project): takes and their audio survive a reload, a retake adds a
take with a new seed, only cues without a kept take are spoken, and a damaged or hostile folder is refused clearly."""

from __future__ import annotations

import json

import numpy as np
import pytest
import soundfile as sf

from engine.production.voiceover.project import MANIFEST, ProjectError, VoiceoverProject

SRT = ("1\n00:00:01,000 --> 00:00:02,000\nFirst line.\n\n"
       "2\n00:00:03,000 --> 00:00:04,000\n[voice: Ryan] Second line.\n\n"
       "3\n00:00:05,000 --> 00:00:06,000\nThird line.\n")


def tone(seed: int, seconds: float = 0.5) -> np.ndarray:
    return (np.random.default_rng(seed).standard_normal(round(seconds * 24000)) * 0.1).astype(np.float32)


class Speaker:
    """Speaks a line as noise drawn from its seed, and counts what it was asked to speak."""

    def __init__(self, first_seed: int = 100):
        self.spoken: list[tuple[int, str | None]] = []
        self.seed = first_seed

    def __call__(self, cue, voice):
        self.spoken.append((cue.number, voice))
        self.seed += 1
        return tone(self.seed), self.seed


def test_kept_takes_and_their_audio_survive_a_reload(tmp_path):
    project = VoiceoverProject.create(tmp_path / "p", SRT, "srt", default_voice="vivian")
    speaker = Speaker()
    first = project.lines(speaker)
    assert speaker.spoken == [(1, "vivian"), (2, "Ryan"), (3, "vivian")]

    reopened = VoiceoverProject.open(tmp_path / "p")  # as after a restart
    again = Speaker()
    lines = reopened.lines(again)
    assert again.spoken == []  # every cue has a kept take: nothing is spoken
    for a, b in zip(first, lines, strict=True):
        assert np.array_equal(a, b)
    assert np.allclose(lines[0], tone(101), atol=2 ** -22)  # 24-bit FLAC holds the take as spoken
    assert [reopened.state(n).takes[0].seed for n in (1, 2, 3)] == [101, 102, 103]
    assert reopened.voice_of(2) == "Ryan" and reopened.voice_of(1) == "vivian"


def test_a_retake_adds_a_take_with_a_new_seed_and_earlier_takes_stay(tmp_path):
    project = VoiceoverProject.create(tmp_path / "p", SRT, "srt", default_voice="vivian")
    project.lines(Speaker())
    speaker = Speaker(first_seed=500)
    lines = project.lines(speaker, retake={2})
    assert speaker.spoken == [(2, "Ryan")]
    reopened = VoiceoverProject.open(tmp_path / "p")
    state = reopened.state(2)
    assert [t.seed for t in state.takes] == [102, 501] and state.kept == 2
    assert np.array_equal(reopened.audio(2), lines[1])
    reopened.keep(2, 1)  # the earlier take was better
    assert np.allclose(VoiceoverProject.open(tmp_path / "p").audio(2), tone(102), atol=2 ** -22)


def test_changed_subtitles_keep_the_takes_of_unchanged_cues_only(tmp_path):
    project = VoiceoverProject.create(tmp_path / "p", SRT, "srt", default_voice="vivian")
    project.lines(Speaker())
    fresh = project.update_subtitles(SRT.replace("Third line.", "A new third line."), "srt")
    assert fresh == [3]
    speaker = Speaker()
    VoiceoverProject.open(tmp_path / "p").lines(speaker)
    assert speaker.spoken == [(3, "vivian")]
    assert len(list((tmp_path / "p" / "takes").iterdir())) == 3  # the old third take's file is gone


def test_another_voice_drops_the_takes_it_did_not_speak(tmp_path):
    project = VoiceoverProject.create(tmp_path / "p", SRT, "srt", default_voice="vivian")
    project.lines(Speaker())
    project.set_voice(3, "Serena")
    project.set_default_voice("Dylan")
    speaker = Speaker()
    VoiceoverProject.open(tmp_path / "p").lines(speaker)
    assert speaker.spoken == [(1, "Dylan"), (3, "Serena")]


@pytest.mark.parametrize("change", [
    lambda raw: raw["cues"][0]["takes"][0].update(file="../../etc/passwd"),
    lambda raw: raw["cues"][0]["takes"][0].update(file="/abs/takes/0001-1.flac"),
    lambda raw: raw["cues"][0].update(kept=99),
    lambda raw: raw.update(version=7),
    lambda raw: raw.update(kind="ass"),
    lambda raw: raw.update(subtitles="no cues here"),
    lambda raw: raw.pop("cues"),
])
def test_a_damaged_manifest_is_refused_clearly(tmp_path, change):
    project = VoiceoverProject.create(tmp_path / "p", SRT, "srt", default_voice="vivian")
    project.lines(Speaker())
    raw = json.loads((tmp_path / "p" / MANIFEST).read_text())
    change(raw)
    (tmp_path / "p" / MANIFEST).write_text(json.dumps(raw))
    with pytest.raises(ProjectError, match="voiceover project|subtitles it keeps"):
        VoiceoverProject.open(tmp_path / "p")


def test_a_manifest_nested_a_hundred_thousand_deep_is_refused_clearly(tmp_path):
    folder = tmp_path / "p"
    folder.mkdir()
    (folder / MANIFEST).write_text("[" * 100_000 + "]" * 100_000)  # json.loads would raise RecursionError
    with pytest.raises(ProjectError, match="not a voiceover project Orator can read"):
        VoiceoverProject.open(folder)


def test_binary_or_huge_manifests_and_foreign_take_files_are_refused(tmp_path):
    folder = tmp_path / "p"
    folder.mkdir()
    (folder / MANIFEST).write_bytes(bytes(range(256)) * 10)
    with pytest.raises(ProjectError, match="not a voiceover project"):
        VoiceoverProject.open(folder)
    with pytest.raises(ProjectError, match="cannot open"):
        VoiceoverProject.open(tmp_path / "missing")
    project = VoiceoverProject.create(tmp_path / "q", SRT, "srt", default_voice="vivian")
    project.lines(Speaker())
    take = tmp_path / "q" / project.state(1).takes[0].file
    sf.write(str(take), np.zeros((100, 2), dtype=np.float32), 44100, format="FLAC")
    with pytest.raises(ProjectError, match="not a take Orator wrote"):
        VoiceoverProject.open(tmp_path / "q").audio(1)
