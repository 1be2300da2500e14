"""A voiceover project: the subtitles, the voice of each cue, and every take of each line with the one kept, in a
folder that outlives the program. Qt-free; the studio and ``voiceover --project`` share it.

The folder holds ``voiceover.json`` (the subtitle file's text and kind, the default voice, and per cue its voice,
its takes and which is kept) and ``takes/NNNN-K.flac``: each take's audio, trimmed, at the engine's 24 kHz in 24-bit
FLAC. The audio is kept and not only the seed: a seed gives the same audio back only with the same model, voice,
text and settings, and a take a person chose must not change under them. Both are written atomically
(``engine.atomic_files``), the audio before the manifest that names it, so a crash leaves the last saved state.

A take belongs to its cue's text and voice: when the subtitles are replaced (``update_subtitles``), a cue whose
number, text and voice are unchanged keeps its takes; any other starts without. ``render.assemble`` takes the kept
takes; ``lines`` speaks only the cues without one, as new kept takes.

Opening a folder is hostile input: the manifest is bounded (``MAX_MANIFEST_BYTES``), checked field by field, and
may only name take files of its own ``takes/`` folder by the fixed pattern; anything else is a ``ProjectError``.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import soundfile as sf

from engine import json_limits
from engine.atomic_files import atomic_write
from engine.bounded_files import FileReadError, read_bytes
from engine.core.chunks import SAMPLE_RATE
from engine.errors import OratorError
from engine.production.voiceover.cues import SubtitleCue, SubtitleError, parse_subtitles

MANIFEST = "voiceover.json"
VERSION = 1
MAX_MANIFEST_BYTES = 16 << 20
MAX_TAKES = 50  # per cue; the oldest not kept is dropped past this
MAX_TAKE_SECONDS = 120.0
_TAKE_FILE = re.compile(r"takes/(\d{4,6})-(\d{1,4})\.flac")


class ProjectError(OratorError):
    """A voiceover project folder that cannot be opened or saved; the message says why."""


@dataclass
class Take:
    id: int  # 1, 2, ... per cue
    seed: int | None  # the seed it was spoken with (None: unknown)
    file: str  # relative to the project folder


@dataclass
class CueState:
    number: int
    text: str
    voice: str | None  # None: the project's default voice
    takes: list[Take] = field(default_factory=list)
    kept: int | None = None  # a take's id

    def take(self, take_id: int) -> Take:
        found = next((t for t in self.takes if t.id == take_id), None)
        if found is None:
            raise ProjectError(f"cue {self.number} has no take {take_id}")
        return found


class VoiceoverProject:
    def __init__(self, folder: Path, kind: str, subtitle_text: str, default_voice: str | None,
                 states: dict[int, CueState]):
        self.folder, self.kind, self.subtitle_text, self.default_voice = folder, kind, subtitle_text, default_voice
        self.cues: list[SubtitleCue] = parse_subtitles(subtitle_text, kind).cues
        self.states = states

    # ---- making and opening ---------------------------------------------------------------------------------
    @classmethod
    def create(cls, folder: str | os.PathLike, subtitle_text: str, kind: str,
               default_voice: str | None = None) -> VoiceoverProject:
        project = cls(Path(folder), kind, subtitle_text, default_voice, {})
        project.states = {c.number: CueState(c.number, c.text, c.voice) for c in project.cues}
        project.save()
        return project

    @classmethod
    def open(cls, folder: str | os.PathLike) -> VoiceoverProject:
        folder = Path(folder)
        path = folder / MANIFEST
        try:
            data = read_bytes(path, MAX_MANIFEST_BYTES, "the voiceover project's manifest")
        except FileReadError as e:
            raise ProjectError(f"cannot open the voiceover project {folder}: {e}") from None
        try:
            raw = json_limits.loads(data.decode("utf-8"), max_bytes=MAX_MANIFEST_BYTES)
            return cls._from_json(folder, raw)
        except SubtitleError as e:
            raise ProjectError(f"{path}: the subtitles it keeps cannot be read: {e}") from None
        except ProjectError as e:
            raise ProjectError(f"{path} is not a voiceover project Orator can read: {e}") from None
        except (UnicodeDecodeError, ValueError, TypeError, KeyError, AttributeError) as e:
            raise ProjectError(f"{path} is not a voiceover project Orator can read ({type(e).__name__}: "
                               f"{str(e)[:200]})") from None

    @classmethod
    def _from_json(cls, folder: Path, raw: dict) -> VoiceoverProject:
        if raw.get("version") != VERSION:
            raise ValueError(f"version {raw.get('version')!r}, expected {VERSION}")
        kind = raw["kind"]
        if kind not in ("srt", "vtt"):
            raise ValueError(f"subtitle kind {kind!r}")
        states = {}
        for item in raw["cues"]:
            state = CueState(int(item["number"]), str(item["text"]), _name(item.get("voice")))
            for take in item["takes"]:
                file = str(take["file"])
                if not _TAKE_FILE.fullmatch(file):
                    raise ValueError(f"take file {file[:80]!r} is not one of the project's")
                seed = take.get("seed")
                state.takes.append(Take(int(take["id"]), int(seed) if seed is not None else None, file))
            kept = item.get("kept")
            state.kept = int(kept) if kept is not None else None
            if state.kept is not None:
                state.take(state.kept)
            states[state.number] = state
        return cls(folder, kind, str(raw["subtitles"]), _name(raw.get("default_voice")), states)

    def save(self) -> None:
        raw = {"version": VERSION, "kind": self.kind, "subtitles": self.subtitle_text,
               "default_voice": self.default_voice,
               "cues": [{"number": s.number, "text": s.text, "voice": s.voice, "kept": s.kept,
                         "takes": [{"id": t.id, "seed": t.seed, "file": t.file} for t in s.takes]}
                        for s in self.states.values()]}
        text = json.dumps(raw, ensure_ascii=False, indent=1)
        try:
            atomic_write(self.folder / MANIFEST, lambda tmp: tmp.write_text(text, encoding="utf-8"))
        except OSError as e:
            raise ProjectError(f"cannot save the voiceover project {self.folder}: {e.strerror or e}") from None

    # ---- cues, voices, takes --------------------------------------------------------------------------------
    def state(self, number: int) -> CueState:
        if number not in self.states:
            raise ProjectError(f"there is no cue {number} (the cues are {', '.join(map(str, self.states))})")
        return self.states[number]

    def voice_of(self, number: int) -> str | None:
        """The voice a cue is spoken with: its own, else the project's default (None: the caller's)."""
        return self.state(number).voice or self.default_voice

    def set_voice(self, number: int, voice: str | None) -> None:
        """Give a cue another voice; its takes were spoken by the old one and are dropped."""
        state = self.state(number)
        if voice != state.voice:
            self._forget_takes(state)
            state.voice = voice
            self.save()

    def set_default_voice(self, voice: str | None) -> None:
        """Change the default voice; the takes of cues spoken by it are dropped."""
        voice = _name(voice)
        if voice != self.default_voice:
            for state in self.states.values():
                if state.voice is None:
                    self._forget_takes(state)
            self.default_voice = voice
            self.save()

    def add_take(self, number: int, samples: np.ndarray, seed: int | None, keep: bool | None = None) -> Take:
        """Store a new take of cue ``number`` (float32 at 24 kHz); kept if ``keep``, or (None) if none is kept."""
        state = self.state(number)
        data = np.clip(np.asarray(samples, dtype=np.float32).reshape(-1), -1.0, 1.0)
        if data.size > MAX_TAKE_SECONDS * SAMPLE_RATE:
            raise ProjectError(f"a take of cue {number} lasts {data.size / SAMPLE_RATE:.0f} s; at most "
                               f"{MAX_TAKE_SECONDS:g} s is kept")
        take = Take(max((t.id for t in state.takes), default=0) + 1, seed, "")
        take.file = f"takes/{number:04d}-{take.id}.flac"
        try:
            atomic_write(self.folder / take.file,
                         lambda tmp: sf.write(str(tmp), data, SAMPLE_RATE, format="FLAC", subtype="PCM_24"))
        except OSError as e:
            raise ProjectError(f"cannot save a take in {self.folder}: {e.strerror or e}") from None
        state.takes.append(take)
        if keep or (keep is None and state.kept is None):
            state.kept = take.id
        self._drop_old_takes(state)
        self.save()
        return take

    def keep(self, number: int, take_id: int) -> None:
        state = self.state(number)
        state.take(take_id)
        state.kept = take_id
        self.save()

    def audio(self, number: int, take_id: int | None = None) -> np.ndarray:
        """A take's audio (the kept one by default): float32 [N] at 24 kHz."""
        state = self.state(number)
        take_id = state.kept if take_id is None else take_id
        if take_id is None:
            raise ProjectError(f"cue {number} has no kept take")
        path = self.folder / state.take(take_id).file
        try:
            info = sf.info(str(path))
            if info.samplerate != SAMPLE_RATE or info.channels != 1 or info.frames > MAX_TAKE_SECONDS * SAMPLE_RATE:
                raise ProjectError(f"take {take_id} of cue {number} ({path.name}) is not a take Orator wrote")
            samples, _ = sf.read(str(path), dtype="float32")
        except (OSError, RuntimeError, sf.LibsndfileError) as e:
            raise ProjectError(f"cannot read take {take_id} of cue {number} ({path.name}): {e}") from None
        return samples

    def kept_length(self, number: int) -> int:
        """Samples of a cue's kept take, read from its header (0 without one, or where it cannot be read)."""
        state = self.state(number)
        if state.kept is None:
            return 0
        try:
            return int(sf.info(str(self.folder / state.take(state.kept).file)).frames)
        except (OSError, RuntimeError, sf.LibsndfileError):
            return 0

    def update_subtitles(self, subtitle_text: str, kind: str) -> list[int]:
        """Replace the subtitles; cues whose number, text and voice are unchanged keep their takes. Returns the
        numbers of the cues that start without."""
        cues = parse_subtitles(subtitle_text, kind).cues
        states, fresh = {}, []
        for cue in cues:
            old = self.states.get(cue.number)
            if old is not None and old.text == cue.text and old.voice == cue.voice:
                states[cue.number] = old
            else:
                states[cue.number] = CueState(cue.number, cue.text, cue.voice)
                fresh.append(cue.number)
        for number, old in self.states.items():
            if states.get(number) is not old:
                self._forget_takes(old)
        self.kind, self.subtitle_text, self.cues, self.states = kind, subtitle_text, cues, states
        self.save()
        return fresh

    def lines(self, speak: Callable[[SubtitleCue, int | None], tuple[np.ndarray, int | None]],
              retake: set[int] = frozenset()) -> list[np.ndarray]:
        """Each cue's line for ``render.assemble``: its kept take, or (for a cue without one, or in ``retake``) a
        new take from ``speak(cue, voice) -> (samples, seed)``, kept and saved before the next is spoken."""
        out = []
        for cue in self.cues:
            state = self.state(cue.number)
            if state.kept is None or cue.number in retake:
                samples, seed = speak(cue, self.voice_of(cue.number))
                self.add_take(cue.number, samples, seed, keep=True)
            out.append(self.audio(cue.number))
        return out

    def _drop_old_takes(self, state: CueState) -> None:
        while len(state.takes) > MAX_TAKES:
            oldest = next(t for t in state.takes if t.id != state.kept)
            state.takes.remove(oldest)
            self._remove(oldest)

    def _forget_takes(self, state: CueState) -> None:
        for take in state.takes:
            self._remove(take)
        state.takes, state.kept = [], None

    def _remove(self, take: Take) -> None:
        try:
            (self.folder / take.file).unlink(missing_ok=True)
        except OSError:
            pass  # a file left over wastes space; the manifest no longer names it


def _name(value) -> str | None:
    if value is None:
        return None
    text = " ".join(str(value).split())[:200]
    return text or None
