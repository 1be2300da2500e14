"""The offline voice file: one small safetensors file per ``Voice``.

Tensors (clones only, each present when the voice has it):
  ``speaker_embedding`` float32 [D], ``ref_codes`` int64 [T, 16], ``ref_audio`` float32 [N] (24 kHz).
String metadata: ``orator_voice_format`` (the format version), ``kind``, ``language``, and when set
``name``, ``speaker``, ``instruct``, ``ref_text``; ``embedding_dim`` for clones with an embedding;
``created`` (ISO 8601, UTC) and ``meta`` (the voice's ``meta`` dict as JSON: source, model size...).
Preset and design voices are metadata only. Files are written atomically and durably (``engine.atomic_files``).

``read_voice_metadata`` reads only a file's header (its first 8 bytes say how long the JSON header is), so a
listing of many large clones reads a few kilobytes per voice; it checks what ``load_voice`` checks short of the
tensor bytes themselves. Error messages name the file, never its folder.

A file is refused before its tensors are read when it is larger than ``MAX_FILE_BYTES`` or its header's shapes
break ``engine.core.voice.check_voice_shapes`` (reference codes longer than any prompt holds...), and after,
when its values break ``check_voice_arrays`` (codes outside the codebook, NaN or infinite embeddings): a voice
that could never be spoken is never loaded, imported or listed as readable.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

import numpy as np
from safetensors import SafetensorError, safe_open
from safetensors.numpy import save

from engine import json_limits
from engine.atomic_files import atomic_write
from engine.core.voice import (
    Voice,
    check_voice_arrays,
    check_voice_shapes,
    clones_in_context,
    encoded,
    voice_arrays,
)
from engine.errors import VoiceError

FORMAT_VERSION = "1"
FORMAT_KEY = "orator_voice_format"
KINDS = ("preset", "design", "clone")
MAX_HEADER_BYTES = 100_000_000  # safetensors refuses longer headers too
MAX_FILE_BYTES = 32 << 20  # the largest voice a file can hold is 60 s of float64 audio (11 MB) and its codes
_TEXT_FIELDS = ("name", "speaker", "instruct", "ref_text")
_TENSOR_FIELDS = ("speaker_embedding", "ref_codes", "ref_audio")
_DTYPE_NAMES = {"BOOL": "bool", "U8": "uint8", "I8": "int8", "U16": "uint16", "I16": "int16", "U32": "uint32",
                "I32": "int32", "U64": "uint64", "I64": "int64", "F16": "float16", "BF16": "bfloat16",
                "F32": "float32", "F64": "float64"}
_FLOATS = ("float16", "bfloat16", "float32", "float64")
_INTS = ("int8", "int16", "int32", "int64")


@dataclass(frozen=True)
class VoiceInfo:
    """What a voice file's header says: the voice without its tensors, and which tensors it holds."""

    kind: str
    language: str
    name: str | None = None
    speaker: str | None = None
    instruct: str | None = None
    ref_text: str | None = None
    meta: dict = field(default_factory=dict)  # as ``Voice.meta``, ``created`` included
    tensors: frozenset[str] = frozenset()

    @property
    def created(self) -> str | None:
        return self.meta.get("created")

    @property
    def in_context(self) -> bool:
        return clones_in_context(self.kind, self.ref_text)

    @property
    def is_encoded(self) -> bool:
        return encoded(self.kind, self.ref_text, "speaker_embedding" in self.tensors, "ref_codes" in self.tensors)


def save_voice(voice: Voice, path: str | os.PathLike) -> None:
    """Write ``voice`` to ``path`` atomically: a reader never sees a half-written file."""
    tensors = _voice_tensors(voice)
    metadata = {FORMAT_KEY: FORMAT_VERSION, "kind": voice.kind, "language": voice.language}
    metadata.update({field: getattr(voice, field) for field in _TEXT_FIELDS if getattr(voice, field) is not None})
    if "speaker_embedding" in tensors:
        metadata["embedding_dim"] = str(tensors["speaker_embedding"].shape[0])
    metadata["created"] = str(voice.meta.get("created") or datetime.now(timezone.utc).isoformat(timespec="seconds"))
    metadata["meta"] = json.dumps({k: v for k, v in voice.meta.items() if k != "created"}, default=str)
    data = save(tensors, metadata=metadata)  # in memory: safetensors' own file writing leaves temporary files
    atomic_write(path, lambda tmp: tmp.write_bytes(data))


def load_voice(path: str | os.PathLike) -> Voice:
    """Read a voice file; ``VoiceError`` if it is missing, corrupted, of another version or incomplete."""
    path = Path(path)
    if not path.is_file():
        raise VoiceError(f"voice file not found: {path.name}")
    try:
        _check_size(path.stat().st_size, path.name)
        with safe_open(str(path), framework="np") as f:
            metadata = f.metadata() or {}
            slices = {name: f.get_slice(name) for name in f.keys()}
            layout = {name: (_DTYPE_NAMES.get(s.get_dtype(), s.get_dtype()), tuple(s.get_shape()))
                      for name, s in slices.items()}
            fields = _checked_header(metadata, layout, path.name)  # before a tensor is read
            tensors = {name: f.get_tensor(name) for name in slices}
    except (SafetensorError, ValueError) as e:
        raise _unreadable(path.name, str(e)) from None
    except OSError as e:  # its text would name the whole path
        raise _unreadable(path.name, e.strerror or type(e).__name__) from None
    arrays = _file_tensors(tensors)
    check_voice_arrays(arrays, path.name)  # as the voice holds them: a float64 past float32's range is infinite
    return Voice(**fields, **arrays)


def read_voice_metadata(path: str | os.PathLike) -> VoiceInfo:
    """What ``load_voice`` would give, without the tensors, from the file's header alone; the same errors."""
    path = Path(path)
    try:
        with open(path, "rb") as f:
            size = os.fstat(f.fileno()).st_size
            _check_size(size, path.name)
            prefix = f.read(8)
            length = int.from_bytes(prefix, "little") if len(prefix) == 8 else -1
            if not 0 < length <= min(MAX_HEADER_BYTES, size - 8):
                raise _unreadable(path.name, "no safetensors header")
            header = json_limits.loads(f.read(length).decode("utf-8"), max_bytes=MAX_HEADER_BYTES)
    except FileNotFoundError:
        raise VoiceError(f"voice file not found: {path.name}") from None
    except OSError as e:
        raise _unreadable(path.name, e.strerror or type(e).__name__) from None
    except json_limits.JSONLimitError as e:
        raise _unreadable(path.name, f"its header: {e}") from None
    except (UnicodeDecodeError, json.JSONDecodeError):
        raise _unreadable(path.name, "its header is not JSON") from None
    if not isinstance(header, dict):
        raise _unreadable(path.name, "its header is not a JSON object")
    metadata = header.pop("__metadata__", None) or {}
    if not isinstance(metadata, dict) or not all(isinstance(v, str) for v in metadata.values()):
        raise _unreadable(path.name, "its metadata is not a table of strings")
    data_bytes = size - 8 - length
    layout = {}
    for name, entry in header.items():
        layout[name] = _tensor_layout(entry, data_bytes, path.name, name)
    fields = _checked_header(metadata, layout, path.name)
    return VoiceInfo(**fields, tensors=frozenset(layout))


def _check_size(size: int, file_name: str) -> None:
    if size > MAX_FILE_BYTES:
        raise VoiceError(f"{file_name} has {size} bytes; a voice file holds at most {MAX_FILE_BYTES >> 20} MiB")


def _unreadable(file_name: str, reason: str) -> VoiceError:
    return VoiceError(f"{file_name} is not a readable voice file (truncated or corrupted?): {reason}")


def _tensor_layout(entry, data_bytes: int, file_name: str, name: str) -> tuple[str, tuple[int, ...]]:
    """(numpy dtype name, shape) of one header entry, checked to lie within the file: a cut-off file is caught."""
    try:
        dtype, shape, (start, end) = _DTYPE_NAMES[entry["dtype"]], tuple(entry["shape"]), entry["data_offsets"]
        valid = all(isinstance(n, int) and n >= 0 for n in (*shape, start, end)) and start <= end <= data_bytes
    except (KeyError, TypeError, ValueError):
        valid = False
    if not valid:
        raise _unreadable(file_name, f"the entry of {name!r} is broken or lies beyond the end of the file")
    return dtype, shape


def _checked_header(metadata: dict, layout: dict[str, tuple[str, tuple[int, ...]]], file_name: str) -> dict:
    """The ``Voice`` fields (tensors aside) a file's metadata and tensor layout give; VoiceError if inconsistent."""
    version = metadata.get(FORMAT_KEY)
    if version is None:
        raise VoiceError(f"{file_name} is not an Orator voice file (no {FORMAT_KEY} entry)")
    if version != FORMAT_VERSION:
        raise VoiceError(f"{file_name} has voice file format version {version}; this Orator reads version "
                         f"{FORMAT_VERSION}")
    unknown = sorted(set(layout) - set(_TENSOR_FIELDS))
    if unknown:
        raise VoiceError(f"{file_name} holds unknown tensors {unknown}")
    for key in ("kind", "language"):
        if not metadata.get(key):
            raise VoiceError(f"{file_name} is incomplete: no {key!r}")
    kind = metadata["kind"]
    if kind not in KINDS:
        raise VoiceError(f"{file_name} has unknown voice kind {kind!r}; expected one of {KINDS}")
    check_voice_shapes({name: shape for name, (_, shape) in layout.items()}, file_name)
    for name, dtypes in (("speaker_embedding", _FLOATS), ("ref_audio", _FLOATS), ("ref_codes", _INTS)):
        if name in layout and layout[name][0] not in dtypes:
            raise VoiceError(f"{file_name}: {name} has dtype {layout[name][0]}")
    if "speaker_embedding" in layout and metadata.get("embedding_dim") != str(layout["speaker_embedding"][1][0]):
        raise VoiceError(f"{file_name}: embedding_dim {metadata.get('embedding_dim')!r} does not match the "
                         f"stored speaker embedding of {layout['speaker_embedding'][1][0]} values")
    try:
        meta = json_limits.loads(metadata.get("meta", "{}"))
    except json.JSONDecodeError as e:
        raise VoiceError(f"{file_name} has unreadable meta data: {e}") from None
    if not isinstance(meta, dict):
        raise VoiceError(f"{file_name} has unreadable meta data: not a JSON object")
    meta["created"] = metadata.get("created")
    fields = {"kind": kind, "language": metadata["language"], "meta": meta,
              **{key: metadata.get(key) for key in _TEXT_FIELDS}}
    _check_complete(fields, set(layout), file_name)
    return fields


def _voice_tensors(voice: Voice) -> dict[str, np.ndarray]:
    """The voice's arrays in their file dtypes; VoiceError if one has the wrong shape."""
    dtypes = {"speaker_embedding": np.float32, "ref_codes": np.int64, "ref_audio": np.float32}
    check_voice_arrays(voice_arrays(voice), "the voice")
    return {name: np.ascontiguousarray(np.asarray(value, dtype=dtypes[name]))
            for name, value in voice_arrays(voice).items() if value is not None}


def _file_tensors(tensors: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """A file's (checked) tensors in the dtypes ``Voice`` holds."""
    with np.errstate(over="ignore"):  # a value past float32's range becomes infinite, which the check refuses
        out = {name: tensors[name].astype(np.float32) for name in ("speaker_embedding", "ref_audio")
               if name in tensors}
    if "ref_codes" in tensors:
        out["ref_codes"] = tensors["ref_codes"].astype(np.int64)
    return out


def _check_complete(fields: dict, tensors: set[str], file_name: str) -> None:
    """Each kind needs its own fields: a speaker, a description, or something to clone from."""
    kind = fields["kind"]
    if kind == "preset" and not fields["speaker"]:
        raise VoiceError(f"{file_name} is incomplete: a preset voice needs 'speaker'")
    if kind == "design" and not fields["instruct"]:
        raise VoiceError(f"{file_name} is incomplete: a design voice needs 'instruct' (the description)")
    if kind == "clone":
        if not tensors & {"speaker_embedding", "ref_audio"}:
            raise VoiceError(f"{file_name} is incomplete: a clone needs speaker_embedding or ref_audio")
        if fields["ref_text"] is not None and not tensors & {"ref_codes", "ref_audio"}:
            raise VoiceError(f"{file_name} is incomplete: an in-context clone needs ref_codes or ref_audio")
