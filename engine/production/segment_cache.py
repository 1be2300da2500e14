"""Finished segments kept on disk, so an interrupted or edited export regenerates only what is missing or changed.

A segment's audio is stored under the SHA-256 of what decides it (``segment_key``: its text, the voice, the
model, the sampling settings and seed rule, the frame budget) as 16-bit FLAC (``KEY.flac``; an empty file for a
segment that came out silent), written to a temporary name and renamed, so a crash never leaves a torn entry.
``put`` returns the audio as it reads back, and that is what an export writes, so a segment generated now and one
read from the cache later give the same samples (and the same file). Entries are touched when used; ``prune``
drops the least recently used beyond ``max_bytes``. Kept in the user's cache folder (``default_cache_dir``); the
folders it makes are 0700 and its files 0600, as the voices are: the audio says what the user had read.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
import time
from pathlib import Path

import numpy as np

from engine.atomic_files import TEMP_PREFIX, TEMP_SUFFIX
from engine.user_cache import user_cache_folder

CACHE_DIR_ENV = "ORATOR_CACHE_DIR"
FORMAT_VERSION = 1  # in every key: a change to how segments are made or stored starts a fresh cache
DEFAULT_MAX_BYTES = 4 << 30  # about 30 hours of speech
_SUFFIX = ".flac"
_FOLDER_MODE = 0o700  # the owner's only (files are made 0600 by ``tempfile.mkstemp``)


def default_cache_dir() -> Path:
    """``$ORATOR_CACHE_DIR``, else the platform's user cache folder (``~/.cache/Orator/segments`` on Linux)."""
    override = os.environ.get(CACHE_DIR_ENV)
    if override:
        return Path(override)
    return user_cache_folder() / "segments"


def array_digest(array) -> str | None:
    if array is None:
        return None
    data = np.ascontiguousarray(array)
    return hashlib.sha256(str(data.dtype).encode() + str(data.shape).encode() + data.tobytes()).hexdigest()


def voice_key(voice) -> dict:
    """What of a ``Voice`` decides its sound: its kind, language, speaker, instructions or description, transcript,
    and its reference recording (or, for a clone stored encoded, the encoding). Its name does not."""
    key = {"kind": voice.kind, "language": voice.language, "speaker": voice.speaker, "instruct": voice.instruct,
           "ref_text": voice.ref_text}
    if voice.ref_audio is not None:
        key["ref_audio"] = array_digest(voice.ref_audio)
    else:
        key["speaker_embedding"] = array_digest(voice.speaker_embedding)
        key["ref_codes"] = array_digest(voice.ref_codes)
    return key


def model_key(engine) -> dict:
    """Which checkpoint an engine runs, and on which plan: the folder, each weight and config file's size and
    modification time (a replaced checkpoint makes new keys without its gigabytes being read), the dtype, and what
    of its execution plan decides the audio (``ExecutionPlan.audio_key``: the precision, weights, decoder and
    steps round otherwise). An engine without a plan (a stand-in) keys on its dtype alone."""
    folder = Path(engine.model_dir).resolve()
    files = []
    for path in sorted(folder.rglob("*")):
        if path.suffix in (".safetensors", ".json", ".bin") and path.is_file():
            stat = path.stat()
            files.append([str(path.relative_to(folder)), stat.st_size, stat.st_mtime_ns])
    key = {"dir": str(folder), "files": files, "dtype": str(getattr(engine, "dtype", ""))}
    plan = getattr(engine, "execution_plan", None)
    if plan is not None:
        key["plan"] = plan.audio_key()
    return key


def segment_key(text: str, voice: dict, model: dict, sampling: dict, max_frames: int | None) -> str:
    payload = {"v": FORMAT_VERSION, "text": text, "voice": voice, "model": model, "sampling": sampling,
               "max_frames": max_frames}
    return hashlib.sha256(json.dumps(payload, sort_keys=True, ensure_ascii=False).encode("utf-8")).hexdigest()


class SegmentCache:
    def __init__(self, folder: str | os.PathLike, max_bytes: int = DEFAULT_MAX_BYTES, sample_rate: int = 24000):
        self.folder = Path(folder)
        self.max_bytes = max_bytes
        self.sample_rate = sample_rate
        self.folder.mkdir(mode=_FOLDER_MODE, parents=True, exist_ok=True)

    def path(self, key: str) -> Path:
        return self.folder / key[:2] / f"{key}{_SUFFIX}"

    def __contains__(self, key: str) -> bool:
        return self.path(key).is_file()

    def get(self, key: str) -> np.ndarray | None:
        """The stored audio (float32 [N]), or None when there is none or it cannot be read (then it is dropped)."""
        import soundfile as sf

        path = self.path(key)
        try:
            if path.stat().st_size == 0:
                samples = np.zeros(0, dtype=np.float32)
            else:
                samples, rate = sf.read(str(path), dtype="float32", always_2d=False)
                if rate != self.sample_rate or samples.ndim != 1:
                    raise ValueError(f"{path.name}: {rate} Hz, shape {samples.shape}")
            os.utime(path)
        except FileNotFoundError:
            return None
        except (OSError, ValueError, RuntimeError, sf.LibsndfileError):
            path.unlink(missing_ok=True)  # a damaged entry is generated again
            return None
        return samples

    def put(self, key: str, samples: np.ndarray) -> np.ndarray:
        """Store ``samples`` (float32 [N]) and return them as ``get`` will: quantized to 16 bits."""
        import soundfile as sf

        path = self.path(key)
        path.parent.mkdir(mode=_FOLDER_MODE, parents=True, exist_ok=True)
        fd, temp_name = tempfile.mkstemp(prefix=TEMP_PREFIX, suffix=TEMP_SUFFIX, dir=path.parent)  # made 0600
        os.close(fd)
        temp = Path(temp_name)
        data = np.clip(np.nan_to_num(np.asarray(samples, dtype=np.float32)), -1.0, 1.0)
        try:
            if data.size:
                sf.write(str(temp), data, self.sample_rate, format="FLAC", subtype="PCM_16")
            else:
                temp.write_bytes(b"")
            os.replace(temp, path)
        finally:
            temp.unlink(missing_ok=True)
        stored = self.get(key)
        if stored is None:
            raise OSError(f"the segment cache in {self.folder} did not keep what was written")
        return stored

    def size(self) -> int:
        return sum(p.stat().st_size for p in self.folder.glob(f"*/*{_SUFFIX}"))

    def prune(self, keep: set[str] = frozenset()) -> int:
        """Remove the least recently used entries until the cache holds at most ``max_bytes`` (never those in
        ``keep``) and temporary files older than an hour; returns how many entries were removed."""
        entries = []
        now = time.time()
        for path in self.folder.glob("*/*"):
            try:
                stat = path.stat()
            except OSError:
                continue
            if path.name.startswith(TEMP_PREFIX):
                if now - stat.st_mtime > 3600:
                    path.unlink(missing_ok=True)
            elif path.suffix == _SUFFIX:
                entries.append((stat.st_mtime, stat.st_size, path))
        total = sum(size for _, size, _ in entries)
        removed = 0
        for _, size, path in sorted(entries):
            if total <= self.max_bytes:
                break
            if path.stem in keep:
                continue
            path.unlink(missing_ok=True)
            total -= size
            removed += 1
        return removed
