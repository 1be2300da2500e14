"""The offline voice file: one small safetensors file per ``Voice``.

Tensors (clones only, each present when the voice has it):
  ``speaker_embedding`` float32 [D], ``ref_codes`` int64 [T, 16], ``ref_audio`` float32 [N] (24 kHz).
String metadata: ``orator_voice_format`` (the format version), ``kind``, ``language``, and when set
``name``, ``speaker``, ``instruct``, ``ref_text``; ``embedding_dim`` for clones with an embedding;
``created`` (ISO 8601, UTC) and ``meta`` (the voice's ``meta`` dict as JSON: source, model size...).
Preset and design voices are metadata only. Files are written atomically (temp file + rename).
"""

from __future__ import annotations

import json
import os
import tempfile
from datetime import datetime, timezone
from pathlib import Path

import numpy as np
from safetensors import SafetensorError, safe_open
from safetensors.numpy import save_file

from engine.errors import VoiceError
from engine.voices import Voice

FORMAT_VERSION = "1"
FORMAT_KEY = "orator_voice_format"
KINDS = ("preset", "design", "clone")
NUM_CODE_GROUPS = 16
_TEXT_FIELDS = ("name", "speaker", "instruct", "ref_text")
_TENSOR_FIELDS = ("speaker_embedding", "ref_codes", "ref_audio")


def save_voice(voice: Voice, path: str | os.PathLike) -> None:
    """Write ``voice`` to ``path`` atomically: a reader never sees a half-written file."""
    path = Path(path)
    tensors = _voice_tensors(voice)
    metadata = {FORMAT_KEY: FORMAT_VERSION, "kind": voice.kind, "language": voice.language}
    metadata.update({field: getattr(voice, field) for field in _TEXT_FIELDS if getattr(voice, field) is not None})
    if "speaker_embedding" in tensors:
        metadata["embedding_dim"] = str(tensors["speaker_embedding"].shape[0])
    metadata["created"] = str(voice.meta.get("created") or datetime.now(timezone.utc).isoformat(timespec="seconds"))
    metadata["meta"] = json.dumps({k: v for k, v in voice.meta.items() if k != "created"}, default=str)

    handle, temp_name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    os.close(handle)
    try:
        save_file(tensors, temp_name, metadata=metadata)
        os.replace(temp_name, path)
    except BaseException:
        Path(temp_name).unlink(missing_ok=True)
        raise


def load_voice(path: str | os.PathLike) -> Voice:
    """Read a voice file; ``VoiceError`` if it is missing, corrupted, of another version or incomplete."""
    path = Path(path)
    if not path.is_file():
        raise VoiceError(f"voice file not found: {path}")
    try:
        with safe_open(str(path), framework="np") as f:
            metadata = f.metadata() or {}
            tensors = {name: f.get_tensor(name) for name in f.keys()}
    except (SafetensorError, OSError, ValueError) as e:
        raise VoiceError(f"{path.name} is not a readable voice file (truncated or corrupted?): {e}") from None

    version = metadata.get(FORMAT_KEY)
    if version is None:
        raise VoiceError(f"{path.name} is not an Orator voice file (no {FORMAT_KEY} entry)")
    if version != FORMAT_VERSION:
        raise VoiceError(f"{path.name} has voice file format version {version}; this Orator reads version "
                         f"{FORMAT_VERSION}")
    unknown = sorted(set(tensors) - set(_TENSOR_FIELDS))
    if unknown:
        raise VoiceError(f"{path.name} holds unknown tensors {unknown}")
    for field in ("kind", "language"):
        if not metadata.get(field):
            raise VoiceError(f"{path.name} is incomplete: no {field!r}")
    kind = metadata["kind"]
    if kind not in KINDS:
        raise VoiceError(f"{path.name} has unknown voice kind {kind!r}; expected one of {KINDS}")
    try:
        meta = json.loads(metadata.get("meta", "{}"))
    except json.JSONDecodeError as e:
        raise VoiceError(f"{path.name} has unreadable meta data: {e}") from None
    if not isinstance(meta, dict):
        raise VoiceError(f"{path.name} has unreadable meta data: not a JSON object")
    meta["created"] = metadata.get("created")

    voice = Voice(kind, language=metadata["language"], meta=meta,
                  **{field: metadata.get(field) for field in _TEXT_FIELDS},
                  **_checked_tensors(tensors, metadata, path.name))
    _check_complete(voice, path.name)
    return voice


def _voice_tensors(voice: Voice) -> dict[str, np.ndarray]:
    """The voice's arrays in their file dtypes; VoiceError if one has the wrong shape."""
    dtypes = {"speaker_embedding": np.float32, "ref_codes": np.int64, "ref_audio": np.float32}
    tensors = {}
    for field in _TENSOR_FIELDS:
        value = getattr(voice, field)
        if value is not None:
            tensors[field] = np.ascontiguousarray(np.asarray(value, dtype=dtypes[field]))
    _check_shapes(tensors, "the voice")
    return tensors


def _checked_tensors(tensors: dict[str, np.ndarray], metadata: dict, file_name: str) -> dict[str, np.ndarray]:
    _check_shapes(tensors, file_name)
    for field, kind in (("speaker_embedding", "f"), ("ref_audio", "f"), ("ref_codes", "i")):
        if field in tensors and tensors[field].dtype.kind != kind:
            raise VoiceError(f"{file_name}: {field} has dtype {tensors[field].dtype}")
    embedding = tensors.get("speaker_embedding")
    if embedding is not None and metadata.get("embedding_dim") != str(embedding.shape[0]):
        raise VoiceError(f"{file_name}: embedding_dim {metadata.get('embedding_dim')!r} does not match the "
                         f"stored speaker embedding of {embedding.shape[0]} values")
    out = {field: tensors[field].astype(np.float32) for field in ("speaker_embedding", "ref_audio") if field in tensors}
    if "ref_codes" in tensors:
        out["ref_codes"] = tensors["ref_codes"].astype(np.int64)
    return out


def _check_shapes(tensors: dict[str, np.ndarray], owner: str) -> None:
    for field in ("speaker_embedding", "ref_audio"):
        if field in tensors and (tensors[field].ndim != 1 or tensors[field].size == 0):
            raise VoiceError(f"{owner}: {field} must be a non-empty vector, got shape {tensors[field].shape}")
    codes = tensors.get("ref_codes")
    if codes is not None and (codes.ndim != 2 or codes.shape[1] != NUM_CODE_GROUPS or codes.shape[0] == 0):
        raise VoiceError(f"{owner}: ref_codes must be [T, {NUM_CODE_GROUPS}], got shape {codes.shape}")


def _check_complete(voice: Voice, file_name: str) -> None:
    """Each kind needs its own fields: a speaker, a description, or something to clone from."""
    if voice.kind == "preset" and not voice.speaker:
        raise VoiceError(f"{file_name} is incomplete: a preset voice needs 'speaker'")
    if voice.kind == "design" and not voice.instruct:
        raise VoiceError(f"{file_name} is incomplete: a design voice needs 'instruct' (the description)")
    if voice.kind == "clone":
        if voice.speaker_embedding is None and voice.ref_audio is None:
            raise VoiceError(f"{file_name} is incomplete: a clone needs speaker_embedding or ref_audio")
        if voice.in_context and voice.ref_codes is None and voice.ref_audio is None:
            raise VoiceError(f"{file_name} is incomplete: an in-context clone needs ref_codes or ref_audio")
