"""Find a model (local directory or Hugging Face id), check its files, and load its weights.

Weights are read memory-mapped from ``model.safetensors`` into modules built on the meta device,
so nothing is initialised twice, and a tensor that is cast is read through a map of its own, so the file's
pages do not all stay resident while it loads. Every tensor is checked by name and shape before it is used; a
missing, unexpected or misshapen tensor, or an unreadable file, raises ``CheckpointError``.
"""

from __future__ import annotations

import math
import os
import struct
from pathlib import Path

import numpy as np
import torch
from torch import nn

from engine import json_limits
from engine.errors import CheckpointError

_MAX_HEADER = 100_000_000  # safetensors refuses larger headers too

REQUIRED_FILES = (
    "config.json",
    "model.safetensors",
    "vocab.json",
    "merges.txt",
    "tokenizer_config.json",
    "speech_tokenizer/config.json",
    "speech_tokenizer/model.safetensors",
)


def resolve_model_dir(model: str | os.PathLike) -> Path:
    """A local directory as is; otherwise a hub id ("Org/Name") downloaded (or found in the cache)."""
    path = Path(model).expanduser()
    if path.is_dir():
        return _check_files(path)
    text = str(model)
    if path.exists() or text.startswith((".", "/", "~")) or text.count("/") != 1:
        raise CheckpointError(f"model directory {text!r} does not exist")
    try:
        from huggingface_hub import snapshot_download

        local = snapshot_download(text)
    except Exception as e:  # the hub client raises many types: offline, 404, auth, disk
        raise CheckpointError(
            f"could not download {text!r} from Hugging Face ({type(e).__name__}: {e}). "
            "Check the id and the network, or point to a local model directory."
        ) from None
    return _check_files(Path(local))


def _check_files(path: Path) -> Path:
    missing = [f for f in REQUIRED_FILES if not (path / f).is_file()]
    if missing:
        raise CheckpointError(f"{path} is not a complete Qwen3-TTS model directory: missing {', '.join(missing)}")
    return path


def open_safetensors(path: Path):
    from safetensors import safe_open

    try:
        return safe_open(str(path), framework="pt", device="cpu")
    except Exception as e:  # safetensors raises its own error types for bad headers
        raise CheckpointError(f"{path} is not a readable safetensors file ({e})") from None


def load_weights(module: nn.Module, path: Path, prefix: str = "", device="cpu",
                 dtype: torch.dtype | None = None, given: dict[str, torch.Tensor] | None = None) -> nn.Module:
    """Assign every parameter/buffer of ``module`` from ``path`` (names prefixed by ``prefix``).

    ``module`` may live on the meta device. Tensors in the file under ``prefix`` that the module
    does not have are an error too, so a wrong model type is caught here. ``given``: tensors already read
    from the file (memory maps of it, ``mapped_bf16_tensors``), assigned as they are instead of being read
    into a copy.
    """
    given = given or {}
    if not path.is_file():
        raise CheckpointError(f"{path} is missing")
    expected = module.state_dict()
    with open_safetensors(path) as f:
        names = [k for k in f.keys() if k.startswith(prefix)]
        unexpected = sorted(set(k[len(prefix):] for k in names) - set(expected))
        missing = sorted(set(expected) - set(k[len(prefix):] for k in names))
        if missing or unexpected:
            raise CheckpointError(
                f"{path}: tensors do not match the model "
                f"(missing {missing[:5]}{'...' if len(missing) > 5 else ''}, "
                f"unexpected {unexpected[:5]}{'...' if len(unexpected) > 5 else ''})"
            )
        # a tensor that is cast or moved is read through a map of its own, dropped once copied: the file's
        # pages leave memory tensor by tensor instead of all staying resident until the file is closed
        moved = torch.device(device).type != "cpu"
        header = _read_header(path) if dtype is not None or moved else None
        state = {}
        for name, ref in expected.items():
            mapped = given.get(prefix + name)
            try:
                t = mapped if mapped is not None else _map_if_copied(path, header, prefix + name, dtype, moved)
                t = t if t is not None else f.get_tensor(prefix + name)
            except Exception as e:
                raise CheckpointError(f"{path}: tensor {prefix + name} is unreadable ({e})") from None
            if tuple(t.shape) != tuple(ref.shape):
                raise CheckpointError(
                    f"{path}: tensor {prefix + name} has shape {tuple(t.shape)}, expected {tuple(ref.shape)}"
                )
            if mapped is not None:  # assigned as given: a cast or a move would copy it
                state[name] = t
                continue
            if t.is_floating_point() and dtype is not None:
                t = t.to(dtype)
            state[name] = t.to(device)
    module.load_state_dict(state, assign=True, strict=True)
    return module


# safetensors' dtype names, each with the torch dtype it stands for and a numpy integer type of its width to map it as
_DTYPES = {
    "F64": (torch.float64, np.int64), "F32": (torch.float32, np.int32), "F16": (torch.float16, np.int16),
    "BF16": (torch.bfloat16, np.int16), "I64": (torch.int64, np.int64), "I32": (torch.int32, np.int32),
    "I16": (torch.int16, np.int16), "I8": (torch.int8, np.int8), "U8": (torch.uint8, np.uint8),
    "BOOL": (torch.bool, np.uint8),
}


def mapped_bf16_tensors(path: Path, names=None) -> dict[str, torch.Tensor]:
    """The bfloat16 tensors of a safetensors file (those of ``names``, or all) as ``mapped_tensors`` maps them:
    a large lookup table of which a prompt reads a few rows (the talker's 151,936-row text embedding) then costs
    almost no memory."""
    return mapped_tensors(path, names, kinds=("BF16",))


def mapped_tensors(path: Path, names=None, kinds=tuple(_DTYPES)) -> dict[str, torch.Tensor]:
    """The tensors of a safetensors file (those of ``names``, or all; of the safetensors dtypes ``kinds``), each a
    view of its own private memory map of the file: pages become resident as they are read, and leave when the
    tensor is dropped (the safetensors library maps the whole file once, so that every page read stays resident
    while any of its tensors lives). Tensors of another dtype, data not aligned to its element size, a tensor
    the system will not map, or a file this cannot read are left out (``load_weights`` reports what is wrong
    with the file). The layout is safetensors' documented one: an 8-byte little-endian header length, a JSON
    header giving each tensor's dtype, shape and byte range, then the data."""
    header = _read_header(path)
    if header is None:
        return {}
    found = {}
    for name in header[1] if names is None else names:
        t = _map(path, header, name, kinds)
        if t is not None:
            found[name] = t
    return found


def _read_header(path: Path) -> tuple[int, dict, int] | None:
    """(header length, header, file size) of a safetensors file, or None where it cannot be read as one."""
    try:
        with open(path, "rb") as f:
            (size,) = struct.unpack("<Q", f.read(8))
            if size > _MAX_HEADER:
                return None
            header = json_limits.loads(f.read(size), max_bytes=_MAX_HEADER)
            file_size = os.fstat(f.fileno()).st_size
    except (OSError, ValueError, TypeError, RecursionError, struct.error):
        return None
    return (size, header, file_size) if isinstance(header, dict) else None


def _map(path: Path, header: tuple[int, dict, int], name: str, kinds=tuple(_DTYPES)) -> torch.Tensor | None:
    """Tensor ``name`` as a view of a private map of its bytes (``mapped_tensors``), or None."""
    size, entries, file_size = header
    try:
        entry = entries[name]
        kind = entry.get("dtype")
        torch_dtype, np_dtype = _DTYPES[kind]
        width = np.dtype(np_dtype).itemsize
        begin, end = (int(v) for v in entry["data_offsets"])
        shape = tuple(int(n) for n in entry["shape"])
        offset = 8 + size + begin
        if (kind not in kinds or min(shape, default=1) < 0 or not 0 <= begin <= end or offset % width
                or end - begin != width * math.prod(shape) or offset - begin + end > file_size):
            return None
        if begin == end:
            return torch.zeros(shape, dtype=torch_dtype)  # numpy cannot map zero bytes
        # copy-on-write ("c"): writable for torch without touching the file; an aligned view of the data
        data = torch.from_numpy(np.memmap(path, dtype=np_dtype, mode="c", offset=offset, shape=shape))
    except (ValueError, KeyError, TypeError, AttributeError, OverflowError, OSError, RuntimeError):
        return None  # OSError: e.g. no file descriptor left for one more map
    return data.view(torch_dtype) if torch_dtype != data.dtype else data


def _map_if_copied(path: Path, header, name: str, dtype: torch.dtype | None, moved: bool) -> torch.Tensor | None:
    """Tensor ``name`` mapped on its own where ``load_weights`` copies it anyway (cast to ``dtype``, or ``moved``
    off the CPU), so that its pages leave with the map; None where it is kept as read (safetensors' own copy)."""
    if header is None:
        return None
    try:
        stored = _DTYPES[header[1][name]["dtype"]][0]
    except (KeyError, TypeError):
        return None
    cast = dtype is not None and stored.is_floating_point and stored != dtype
    return _map(path, header, name) if cast or moved else None


def materialize_buffers(module: nn.Module, device) -> None:
    """Recompute non-persistent buffers (RoPE frequencies) of modules built on the meta device."""
    for m in module.modules():
        reset = getattr(m, "reset_buffers", None)
        if reset is not None:
            reset(device)
